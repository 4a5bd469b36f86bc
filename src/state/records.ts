/**
 * The state that outlives a call: the interfaces the replicas share and the records kept in them, each with
 * the parser that checks it when read back from a file or Redis. `runtime.ts` picks local/ or redis/ once;
 * every member is always there, so no consumer asks which one it has.
 */
import type { CallToolResult } from "@modelcontextprotocol/server";
import * as z from "zod";
import { GenerationError, NotFoundError } from "../api/errors.js";
import type { RateBudget, TokenBucketBudget } from "../api/rate-budget.js";
import { safeId } from "../api/shapes.js";
import type { VideoStatus } from "../api/types.js";
import { MAX_TASK_TTL_MS, MIN_TASK_TTL_MS } from "../config/index.js";
import type { LogLevel } from "../logger.js";
import { LocalUploadLinks } from "./local/upload-links.js";
import type { UploadLinkStore } from "./upload-links.js";

/** Where the state and task machinery report: `(level, message, data) => logger.log(...)`. */
export type TaskLogger = (level: LogLevel, message: string, data?: Record<string, unknown>) => void;
export const silentLogger: TaskLogger = () => {};

export interface StateHub {
  /** False while a configured shared store cannot be written (unless running alone): /readyz is 503. */
  ready(): boolean;
  /** The key's state as the replicas share it, over its `local` state; the key never leaves the process. */
  forKey(target: { baseUrl: string; apiKey: string }, local: LocalState): SharedState;
  uploadLinks: UploadLinkStore;
  close(): Promise<void>;
}

/** One service key's state: this process's (local/: it leads every poll, holds every claim) or redis/. */
export interface SharedState {
  budget: RateBudget;
  polls: PollCoordinator;
  claims: StartClaims;
  tasks: TaskRecordStore;
  owners: OwnershipStore;
  spend: SpendStore;
  confirmations: UsedConfirmations;
}

/** This process's state of a key: the shared kinds, and the bucket a shared budget falls back on. */
export interface LocalState extends SharedState {
  budget: TokenBucketBudget;
}

/** One server alone: everything in this process. */
export const LOCAL_STATE: StateHub = {
  ready: () => true,
  forKey: (_target, local) => local,
  uploadLinks: new LocalUploadLinks(),
  close: async () => {},
};

/** A start not agreed with the other replicas is not sent: two deciding alone could each pay for it. */
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

/** Redis came back empty and a replica has not written its starts back: starting now could pay twice. */
export class SharedStateRebuildingError extends GenerationError {
  override name = "SharedStateRebuildingError";
  constructor(retryAfterMs: number) {
    const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
    super(
      "internal_error",
      "This server's shared state (Redis) came back empty and another replica has not yet written back the starts it holds, so the start was not sent: nothing reached the service and nothing was charged.",
      {
        transient: true,
        retryAtMs: Date.now() + retryAfterMs,
        nextStep: `Call the tool again in ${seconds} s: by then every replica has written back its starts, or the silent one counts as gone.`,
      },
    );
  }
}

/**
 * Credits started per caller digest and UTC day, in hundredths (the price table has halves). Two replicas
 * racing for the last credits of a day never both get them.
 */
export interface SpendStore {
  /** Adds `amount` unless the day's total would pass `limit`; throws when it cannot be recorded or agreed. */
  reserve(caller: string, day: string, amount: number, limit: number): Promise<Reservation>;
  /** Gives back a reservation the service never acted on (never below zero). */
  release(caller: string, day: string, amount: number): Promise<void>;
  used(caller: string, day: string): Promise<number>;
}

type Reservation = { reserved: boolean; used: number };

/** Cost confirmations answered, by a digest of `requestState`: one answer per state, on any replica. */
export interface UsedConfirmations {
  /** True when `digest` was unused (it now is, for `ttlMs`); throws when it cannot be recorded or agreed. */
  use(digest: string, ttlMs: number): Promise<boolean>;
}

/**
 * One replica polls a task per interval (it holds the lease); the others read what it stored and wake when
 * it publishes. Fails soft: an unreachable store makes `lead` answer true, so each replica polls alone.
 */
export interface PollCoordinator {
  /** True when this replica holds the lease on the task's poll (taken or kept for `ttlMs`). */
  lead(videoId: string, ttlMs: number): Promise<boolean>;
  release(videoId: string): Promise<void>;
  publish(videoId: string, video: VideoStatus): Promise<void>;
  /** What the leader stored (`at`: epoch ms of its poll). */
  latest(videoId: string): Promise<{ video: VideoStatus; at: number } | undefined>;
  /** Resolves after `ms`, or sooner when a result for this task is published (or the signal aborts). */
  nextChange(videoId: string, ms: number, signal: AbortSignal): Promise<void>;
}

/** The duplicate guard across replicas: a claim per fingerprint, and the journal lines the others need. */
export interface StartClaims {
  /** True when this replica now holds the claim; throws when it cannot be written (unless running alone). */
  claim(fingerprint: string, ttlMs: number): Promise<boolean>;
  /** Only if still ours. */
  unclaim(fingerprint: string): Promise<void>;
  mirror(entry: JournalEntry, ttlMs: number): Promise<void>;
  read(fingerprint: string): Promise<{ started?: JournalEntry; intent?: JournalEntry }>;
}

/**
 * Who started which task, when one key serves several callers: a caller's get_status of another's video is
 * `not_found`, its list_videos lists its own. Fails soft: a store that cannot be asked knows nothing.
 */
export interface OwnershipStore {
  record(task: OwnedTask): Promise<void>;
  owner(videoId: string): Promise<OwnedTask | undefined>;
  /** The scope's tasks, newest first, and how many it has. */
  list(scope: string, offset: number, limit: number): Promise<{ items: OwnedTask[]; total: number }>;
}

/** Refuses, as the service would for a foreign id, a video that `scope` did not start. */
export async function mustOwn(owners: OwnershipStore, videoId: string, scope: string): Promise<void> {
  if ((await owners.owner(videoId))?.scope === scope) return;
  throw new NotFoundError(
    `No video task with video_id ${JSON.stringify(safeId(videoId) ?? "?")} was started by you.`,
    { nextStep: "Call list_videos to see the videos you started, and use one of their video_ids." },
  );
}

/**
 * The MCP task records of a key: this process's written whole to its state folder (`save`, `load`), and
 * shared so that any replica answers for any task. A final record is written once (the first replica to end
 * the task decides for all); the follower of a task holds a lease, and when it lapses the next one asked
 * takes the task over. Fails soft: a store that cannot be reached shares nothing and grants every lease.
 */
export interface TaskRecordStore {
  /** The records of an earlier run (or of another process of the folder, gone) to answer for. */
  load(): Promise<TaskRecord[]>;
  /** Queues a write of this process's records (ephemeral ones are never kept). */
  save(records: Iterable<TaskRecord>): void;
  written(): Promise<void>;
  /** Shares the record for as long as its ttl has left. */
  share(record: TaskRecord): Promise<void>;
  /** The shared final record when there is one, else the latest working one. */
  read(taskId: string): Promise<TaskRecord | undefined>;
  /** Writes the final record unless one exists; answers the one that holds (undefined: ours decides). */
  finalize(record: TaskRecord, ttlMs: number): Promise<TaskRecord | undefined>;
  /** Shared task ids, newest first. */
  list(limit: number): Promise<string[]>;
  /** True when this process holds (took or renewed) the lease on following the task. */
  follow(taskId: string, ttlMs: number): Promise<boolean>;
  /** Asks the follower, wherever it runs, to stop waiting. */
  requestCancel(record: TaskRecord): Promise<void>;
  cancelRequested(taskId: string): Promise<boolean>;
}

/** Every record of a list that parses; the others are dropped. */
export const readList =
  <T>(read: (value: unknown) => T | undefined) =>
  (value: unknown): T[] =>
    Array.isArray(value) ? value.flatMap((item) => read(item) ?? []) : [];

/**
 * A journal line (local/journal.ts): optional parts that do not read are dropped, not the line (it may be all
 * that tells a paid start). Schemas are built at first use (z.lazy), for the cold start.
 */
const JOURNAL_ENTRY = z.lazy(() =>
  z
    .object({
      kind: z.enum(["video", "image"]),
      /** Lines of older versions have none: they were tasks. */
      phase: z.enum(["intent", "started", "void"]).optional(),
      /** The start's Idempotency-Key: links an intent to its outcome. */
      key: z.string().optional(),
      /** The video_id, or the image id (a void may name a stale task). */
      id: z.string().nullish(),
      fingerprint: z.string(),
      /** Epoch ms the start was sent (for a void: settled). */
      started_at: z.number(),
      request: z.record(z.string(), z.unknown()).catch({}),
      /** For images: `{ image_urls }`. */
      result: z.record(z.string(), z.unknown()).optional().catch(undefined),
      status: z.string().optional().catch(undefined),
      /** Caller.scope, when one key serves several callers. */
      scope: z.string().optional().catch(undefined),
    })
    .transform((entry) => ({ ...entry, id: entry.id ?? undefined })),
);
export type JournalEntry = z.output<typeof JOURNAL_ENTRY>;
export const parseJournalEntry = (value: unknown) => JOURNAL_ENTRY.safeParse(value).data;

export const MAX_PROMPT_CHARS = 500;
const SCOPE = /^[A-Za-z0-9:_-]{1,80}$/;
const MODEL = /^[A-Za-z0-9._-]{1,64}$/;

/** A task one caller started, when one service key serves several (gateway tokens, OAuth subjects). */
const OWNED_TASK = z.lazy(() =>
  z.object({
    video_id: z.string().refine((id) => safeId(id) === id),
    scope: z.string().regex(SCOPE),
    started_at: z.number(),
    prompt: z.string().max(MAX_PROMPT_CHARS),
    model: z.string().regex(MODEL).optional(),
  }),
);
export type OwnedTask = z.output<typeof OWNED_TASK>;
export const parseOwnedTask = (value: unknown) => OWNED_TASK.safeParse(value).data;

export type StoredResult = CallToolResult;
/** An MCP task's state, in the 2025-11-25 field names (the wire forms map it). */
export type TaskState = z.output<typeof TASK_RECORD>["task"];
export type TaskStatus = TaskState["status"];

export const TERMINAL: ReadonlySet<TaskStatus> = new Set(["completed", "failed", "cancelled"]);

/** The ttl a task gets: an hour when none was asked for, else the one asked for within the bounds. */
export function boundTtl(requested: number | null | undefined): number {
  if (typeof requested !== "number" || !Number.isFinite(requested)) return 60 * 60 * 1000;
  return Math.max(MIN_TASK_TTL_MS, Math.min(Math.round(requested), MAX_TASK_TTL_MS));
}

export function errorText(text: string): StoredResult {
  return { content: [{ type: "text", text }], isError: true };
}

/** An MCP task record, whatever protocol era a client speaks. */
export type TaskRecord = Omit<z.output<typeof TASK_RECORD>, "tool" | "result" | "saved"> & {
  tool: string;
  saved?: Record<string, unknown> | undefined;
  /** Once ended: the CallToolResult a blocking call would have returned. */
  result?: StoredResult | undefined;
  /** Refused before the service started anything: kept in memory only, never in a file or Redis. */
  ephemeral?: boolean;
};

export function expiresAt(task: TaskState): number {
  return Date.parse(task.createdAt) + task.ttl;
}

// C0/C1 controls but tab and newline, and the bidi controls that can disguise text.
export const DISGUISE =
  // eslint-disable-next-line no-control-regex
  /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

const cleanString = (max: number) =>
  z
    .string()
    .max(max)
    .transform((text) => text.replace(DISGUISE, ""));
/** An MCP task record read back: one not ours in every part is skipped; texts lose control characters. */
const TASK_RECORD = z.lazy(() => {
  const textItem = z.object({ type: z.literal("text"), text: cleanString(1_000_000) }).loose();
  const imageItem = z
    .object({
      type: z.literal("image"),
      data: z
        .string()
        .max(2_000_000)
        .regex(/^[A-Za-z0-9+/=]*$/),
      mimeType: z.string().regex(/^image\/[a-z0-9.+-]{1,40}$/),
    })
    .loose();
  const linkItem = z
    .object({ type: z.literal("resource_link"), uri: cleanString(4096), name: cleanString(200) })
    .loose();
  const time = z
    .string()
    .max(40)
    .refine((text) => !Number.isNaN(Date.parse(text)));
  return z.object({
    task: z.object({
      taskId: z.string().regex(/^[0-9a-f-]{36}$/),
      status: z.enum(["working", "input_required", "completed", "failed", "cancelled"]),
      ttl: z.int().positive().max(MAX_TASK_TTL_MS),
      createdAt: time,
      lastUpdatedAt: time,
      pollInterval: z.int().positive().max(3_600_000).optional(),
      statusMessage: cleanString(2000).optional(),
    }),
    tool: z.enum(["generate_video", "generate_image"]),
    scope: z.string().regex(SCOPE).optional(),
    videoId: z
      .string()
      .max(256)
      // eslint-disable-next-line no-control-regex
      .regex(/^[^\u0000-\u001F\u007F]*$/)
      .optional(),
    saved: z.record(z.string().max(64), z.union([z.string().max(256), z.number(), z.boolean()])).optional(),
    /** The process following it: another process of the folder takes up the task only once it is gone. */
    pid: z
      .int()
      .positive()
      .max(2 ** 32)
      .optional(),
    result: z
      .object({
        content: z.array(z.union([textItem, imageItem, linkItem])).max(50),
        structuredContent: z.record(z.string(), z.unknown()).optional(),
        isError: z.boolean().optional(),
      })
      .loose()
      .optional(),
  });
});
export const parseRecord = (value: unknown): TaskRecord | undefined => TASK_RECORD.safeParse(value).data;
