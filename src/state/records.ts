/**
 * The state that outlives a call, as the rest of the server sees it: the interfaces of what replicas share
 * (rate budget, polls, start claims, task records, owners, spend) and the records kept in it, each with the
 * parser that checks it when it is read back from a file or from Redis. `runtime.ts` picks the implementation
 * once: local (this process and its state folder, local/) or Redis (redis/, loaded only when
 * GENERATION_REDIS_URL is set). Tools, the poll engine and the task starter never know which one they have.
 */
import type { CallToolResult } from "@modelcontextprotocol/server";
import * as z from "zod";
import { GenerationError } from "../api/errors.js";
import type { RateBudget, TokenBucketBudget } from "../api/rate-budget.js";
import { isObject, safeId } from "../api/shapes.js";
import type { JsonObject, VideoStatus } from "../api/types.js";
import { MAX_TASK_TTL_MS } from "../config/index.js";
import type { LogLevel } from "../logger.js";

/** Where the state and task machinery report: `(level, message, data) => logger.log(level, message, data)`. */
export type TaskLogger = (level: LogLevel, message: string, data?: Record<string, unknown>) => void;
export const silentLogger: TaskLogger = () => {};

/** Who shares state: one service address and key (the key itself never leaves the process). */
export interface StateTarget {
  baseUrl: string;
  apiKey: string;
}

/** Makes the shared state of each service key; one per process. */
export interface StateHub {
  /** False while a shared store is configured but cannot be written (unless the operator chose to run alone): /readyz is 503. */
  ready(): boolean;
  forKey(target: StateTarget, options: { local: TokenBucketBudget }): SharedState;
  close(): Promise<void>;
}

/** The shared state of one service key. Undefined members: this process alone decides. */
export interface SharedState {
  budget: RateBudget;
  polls: PollCoordinator | undefined;
  claims: StartClaims | undefined;
  tasks: TaskRecordStore | undefined;
  owners: OwnershipStore | undefined;
  /** Undefined: kept by this process, in its state folder (local/spend.ts). */
  spend?: SpendStore | undefined;
}

/** One server alone: everything in this process. */
export const LOCAL_STATE: StateHub = {
  ready: () => true,
  forKey: (_target, { local }) => ({
    budget: local,
    polls: undefined,
    claims: undefined,
    tasks: undefined,
    owners: undefined,
  }),
  close: async () => {},
};

/**
 * A start could not be agreed with the other replicas (Redis refuses writes or does not answer), so it was
 * not sent: two replicas deciding alone could each pay for the same request.
 */
export class SharedStateUnavailableError extends GenerationError {
  override name = "SharedStateUnavailableError";
  constructor() {
    super(
      "internal_error",
      "This server's shared state (Redis) is not accepting writes right now, so the start was not sent: nothing reached the service and nothing was charged.",
      {
        transient: true,
        nextStep:
          "Call the tool again in a minute. If it keeps failing, ask the user to tell the server's operator that its Redis is down or full.",
      },
    );
  }
}

/**
 * Estimated credits started per caller and UTC day, in hundredths of a credit (the price table has halves).
 * `caller` is an opaque digest, never a credential; `day` is `YYYY-MM-DD`. Two replicas racing for the last
 * credits of a day never both get them.
 */
export interface SpendStore {
  /**
   * Adds `amount` unless the day's total would pass `limit`; answers whether it did and the total. Throws
   * when it cannot be recorded or agreed (SharedStateUnavailableError, StateFileError).
   */
  reserve(
    caller: string,
    day: string,
    amount: number,
    limit: number,
  ): Promise<{ reserved: boolean; used: number }>;
  /** Gives back a reservation the service said it never acted on (never below zero). */
  release(caller: string, day: string, amount: number): Promise<void>;
  used(caller: string, day: string): Promise<number>;
}

/** What the replica that leads a task's poll stored for the others. */
export interface SharedStatus {
  video: VideoStatus;
  /** Epoch ms of the poll. */
  at: number;
}

/**
 * One replica polls a task per interval (it holds the lease); the others read what it stored and wake when
 * it publishes. Fails soft: an unreachable store makes `lead` answer true, so each replica polls alone.
 */
export interface PollCoordinator {
  /** Takes (or keeps) the lease on this task's poll for `ttlMs`; true when this replica is to poll now. */
  lead(videoId: string, ttlMs: number): Promise<boolean>;
  /** Gives the lease up (the last waiter here left), so another replica takes over at once. */
  release(videoId: string): Promise<void>;
  publish(videoId: string, video: VideoStatus): Promise<void>;
  latest(videoId: string): Promise<SharedStatus | undefined>;
  /** Resolves after `ms`, or sooner when a result for this task is published (or the signal aborts). */
  nextChange(videoId: string, ms: number, signal: AbortSignal): Promise<void>;
}

/**
 * The duplicate guard across replicas: an atomic claim on each start's fingerprint, and a mirror of the
 * journal's lines another replica needs (the open intent, the started task).
 */
export interface StartClaims {
  /**
   * True when this replica now holds the claim. When it cannot be written: SharedStateUnavailableError,
   * unless the operator chose to run alone (then true).
   */
  claim(fingerprint: string, ttlMs: number): Promise<boolean>;
  /** Lets the claim go (only if still ours). */
  unclaim(fingerprint: string): Promise<void>;
  mirror(entry: JournalEntry, ttlMs: number): Promise<void>;
  read(fingerprint: string): Promise<{ started?: JournalEntry; intent?: JournalEntry }>;
}

/**
 * Who started which task, shared by the replicas, when one key serves several callers. Fails soft: a store
 * that cannot be asked knows nothing.
 */
export interface OwnershipStore {
  record(task: OwnedTask, ttlMs: number): Promise<void>;
  owner(videoId: string): Promise<OwnedTask | undefined>;
  /** The scope's task ids, newest first, and how many it has. */
  list(scope: string, offset: number, limit: number): Promise<{ ids: string[]; total: number }>;
}

/**
 * MCP task records every replica can answer for. A task's final record is written once: the first replica
 * to finish or cancel it decides for all. The replica following a task holds a lease on it; when it lapses
 * (that replica died), the next one asked takes it over. Records come back checked (`parseRecord`); fails
 * soft: an unreachable store stores nothing, finds nothing and grants every lease.
 */
export interface TaskRecordStore {
  /** Writes the record for as long as its ttl has left. */
  share(record: TaskRecord): Promise<void>;
  /** The final record when there is one, else the latest working one. */
  read(taskId: string): Promise<TaskRecord | undefined>;
  /** Writes the final record unless one exists; answers the one that holds (undefined: this replica decides). */
  finalize(record: TaskRecord, ttlMs: number): Promise<TaskRecord | undefined>;
  /** Task ids, newest first. */
  list(limit: number): Promise<string[]>;
  /** Takes or renews the lease on following the task; true when this replica holds it. */
  follow(taskId: string, ttlMs: number): Promise<boolean>;
  /** Asks the follower, wherever it runs, to stop waiting. */
  requestCancel(record: TaskRecord): Promise<void>;
  cancelRequested(taskId: string): Promise<boolean>;
}

/**
 * A line of the journal of paid starts: the intent (with its Idempotency-Key) written before the POST
 * leaves, then the task that was started or "void" when nothing was.
 */
export interface JournalEntry {
  kind: "video" | "image";
  /** Lines of older versions have none: they were tasks. */
  phase?: "intent" | "started" | "void";
  /** The start's Idempotency-Key: links an intent to its outcome. */
  key?: string;
  /** The video_id, or the image task's id when the service gave one (a void may name a stale task). */
  id: string | undefined;
  fingerprint: string;
  /** Epoch ms at which the start request was sent (for a void: when it was settled). */
  started_at: number;
  /** The normalized body that was sent (never a secret). */
  request: JsonObject;
  /** For images: `{ image_urls }`. */
  result?: JsonObject;
  status?: string;
  /** The caller that started it, when one key serves several (Caller.scope). */
  scope?: string;
}

export function parseJournalEntry(value: unknown): JournalEntry | undefined {
  if (!isObject(value)) return undefined;
  const { kind, id, fingerprint, started_at: startedAt, request, result, status, phase, key, scope } = value;
  if (kind !== "video" && kind !== "image") return undefined;
  if (phase !== undefined && phase !== "intent" && phase !== "started" && phase !== "void") return undefined;
  if (key !== undefined && typeof key !== "string") return undefined;
  if (typeof fingerprint !== "string" || typeof startedAt !== "number" || !Number.isFinite(startedAt))
    return undefined;
  if (id !== undefined && id !== null && typeof id !== "string") return undefined;
  return {
    kind,
    id: typeof id === "string" ? id : undefined,
    fingerprint,
    started_at: startedAt,
    request: isObject(request) ? request : {},
    ...(phase !== undefined && { phase }),
    ...(typeof key === "string" && { key }),
    ...(isObject(result) && { result }),
    ...(typeof status === "string" && { status }),
    ...(typeof scope === "string" && { scope }),
  };
}

/** A task one caller started, when one service key serves several (gateway tokens, OAuth subjects). */
export interface OwnedTask {
  video_id: string;
  /** The caller's scope (Caller.scope). */
  scope: string;
  /** Epoch ms of the start. */
  started_at: number;
  prompt: string;
  model?: string | undefined;
}

export const MAX_PROMPT_CHARS = 500;

export function parseOwnedTask(value: unknown): OwnedTask | undefined {
  if (!isObject(value)) return undefined;
  const { video_id: videoId, scope, started_at: startedAt, prompt, model } = value;
  if (typeof videoId !== "string" || safeId(videoId) !== videoId) return undefined;
  if (typeof scope !== "string" || !/^[A-Za-z0-9:_-]{1,80}$/.test(scope)) return undefined;
  if (typeof startedAt !== "number" || !Number.isFinite(startedAt)) return undefined;
  if (typeof prompt !== "string" || prompt.length > MAX_PROMPT_CHARS) return undefined;
  if (model !== undefined && (typeof model !== "string" || !/^[A-Za-z0-9._-]{1,64}$/.test(model))) {
    return undefined;
  }
  return { video_id: videoId, scope, started_at: startedAt, prompt, ...(model !== undefined && { model }) };
}

export type TaskStatus = "working" | "input_required" | "completed" | "failed" | "cancelled";

/** A tool call's result as stored: text, image and resource_link content, structured output, isError. */
export type StoredResult = CallToolResult;

/** An MCP task's state, in the 2025-11-25 field names (the wire forms map it). */
export interface TaskState {
  taskId: string;
  status: TaskStatus;
  /** Milliseconds the task lives from `createdAt`. */
  ttl: number;
  createdAt: string;
  lastUpdatedAt: string;
  /** Milliseconds a client should wait between two reads. */
  pollInterval?: number;
  statusMessage?: string;
}

/** An MCP task record, whatever protocol era a client speaks. */
export interface TaskRecord {
  task: TaskState;
  tool: string;
  scope?: string | undefined;
  videoId?: string | undefined;
  saved?: Record<string, unknown> | undefined;
  /** Once ended: the CallToolResult a blocking call would have returned. */
  result?: StoredResult | undefined;
  /** Refused before the service started anything: kept in memory only, never in a file or Redis. */
  ephemeral?: boolean;
  /**
   * The process following it, in this machine's file (no Redis): a process that opens the file takes up a
   * working task only when that process is gone, never while it runs.
   */
  pid?: number | undefined;
}

export function expiresAt(task: TaskState): number {
  return Date.parse(task.createdAt) + task.ttl;
}

// C0/C1 controls but tab and newline, and the bidi controls that can disguise text.
export const DISGUISE =
  // eslint-disable-next-line no-control-regex
  /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

/**
 * A task record read back, checked field by field: one that is not ours in every part is skipped, never
 * relayed. Texts lose control and bidi characters.
 */
export function parseRecord(value: unknown): TaskRecord | undefined {
  const parsed = RECORD.safeParse(value);
  if (!parsed.success) return undefined;
  const { task } = parsed.data;
  if (Number.isNaN(Date.parse(task.createdAt)) || Number.isNaN(Date.parse(task.lastUpdatedAt)))
    return undefined;
  return parsed.data as TaskRecord;
}

const cleanString = (max: number) =>
  z
    .string()
    .max(max)
    .transform((text) => text.replace(DISGUISE, ""));
const TEXT_ITEM = z.object({ type: z.literal("text"), text: cleanString(1_000_000) }).loose();
const IMAGE_ITEM = z
  .object({
    type: z.literal("image"),
    data: z
      .string()
      .max(2_000_000)
      .regex(/^[A-Za-z0-9+/=]*$/),
    mimeType: z.string().regex(/^image\/[a-z0-9.+-]{1,40}$/),
  })
  .loose();
const LINK_ITEM = z
  .object({ type: z.literal("resource_link"), uri: cleanString(4096), name: cleanString(200) })
  .loose();
const RECORD = z.object({
  task: z.object({
    taskId: z.string().regex(/^[0-9a-f-]{36}$/),
    status: z.enum(["working", "input_required", "completed", "failed", "cancelled"]),
    ttl: z.number().int().positive().max(MAX_TASK_TTL_MS),
    createdAt: z.string().max(40),
    lastUpdatedAt: z.string().max(40),
    pollInterval: z.number().int().positive().max(3_600_000).optional(),
    statusMessage: cleanString(2000).optional(),
  }),
  tool: z.enum(["generate_video", "generate_image"]),
  scope: z
    .string()
    .regex(/^[A-Za-z0-9:_-]{1,80}$/)
    .optional(),
  videoId: z
    .string()
    .max(256)
    // eslint-disable-next-line no-control-regex
    .regex(/^[^\u0000-\u001F\u007F]*$/)
    .optional(),
  saved: z.record(z.string().max(64), z.union([z.string().max(256), z.number(), z.boolean()])).optional(),
  pid: z
    .number()
    .int()
    .positive()
    .max(2 ** 32)
    .optional(),
  result: z
    .object({
      content: z.array(z.union([TEXT_ITEM, IMAGE_ITEM, LINK_ITEM])).max(50),
      structuredContent: z.record(z.string(), z.unknown()).optional(),
      isError: z.boolean().optional(),
    })
    .loose()
    .optional(),
});
