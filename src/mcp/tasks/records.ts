/**
 * An MCP task record, as this server keeps it whatever protocol era a client speaks: the task's state (in
 * the 2025-11-25 field names, the form it is stored in: `ttl`, `pollInterval`), the tool, the caller's
 * scope, the video it follows and, once ended, the CallToolResult a blocking call would have returned. The
 * wire forms (wire-2025.ts, wire-2026.ts) map it; the store (store.ts) keeps it. Records read back from disk
 * or from the shared store are checked here, field by field.
 */
import * as z from "zod";
import { MAX_TASK_TTL_MS, MIN_TASK_TTL_MS } from "../../config/index.js";
import type { CallToolResult } from "../../tools/result.js";
import { DISGUISE } from "./task-errors.js";

export type TaskStatus = "working" | "input_required" | "completed" | "failed" | "cancelled";

/**
 * A tool call's result as stored: what toolResult produced (text, image and resource_link content, the
 * structured output, isError); parseRecord admits nothing else back.
 */
export type StoredResult = CallToolResult;

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

export interface TaskRecord {
  task: TaskState;
  tool: string;
  scope?: string | undefined;
  videoId?: string | undefined;
  saved?: Record<string, unknown> | undefined;
  result?: StoredResult | undefined;
  /**
   * Failed before the service started anything (a key it refused, insufficient credits ...): kept in this
   * process's memory only, never on disk or in the shared store, so a flood of such calls costs nothing.
   */
  ephemeral?: boolean;
  /**
   * The process waiting for it, when the records are this machine's files (no Redis): a process that opens
   * them takes up a working task only when that process is gone (a restart), never while it runs (two
   * stdio servers of one key, side by side, each follow their own).
   */
  pid?: number | undefined;
}

/** A requested ttl that names none gets this. */
export const DEFAULT_TASK_TTL_MS = 60 * 60 * 1000;

export const TERMINAL: ReadonlySet<TaskStatus> = new Set(["completed", "failed", "cancelled"]);

/** The ttl a task gets: the default when none was asked for, else the one asked for within the bounds. */
export function boundTtl(requested: number | null | undefined): number {
  if (typeof requested !== "number" || !Number.isFinite(requested)) return DEFAULT_TASK_TTL_MS;
  return Math.max(MIN_TASK_TTL_MS, Math.min(Math.round(requested), MAX_TASK_TTL_MS));
}

export function expiresAt(task: TaskState): number {
  return Date.parse(task.createdAt) + task.ttl;
}

/** A result whose only content is `text`, marked as an error. */
export function errorText(text: string): StoredResult {
  return { content: [{ type: "text", text }], isError: true };
}

/**
 * A task failed when its call answered an error, or when the generation itself failed: a blocking call
 * reports that as a normal answer with `status: "failed"`, which the task's result keeps as it is.
 */
export function failed(result: StoredResult): boolean {
  const status = (result.structuredContent as { status?: unknown } | undefined)?.status;
  return result.isError === true || status === "failed";
}

/**
 * A record read back (from our file or from the shared store), checked field by field: a record that is not
 * one of ours in every part is skipped, never relayed. Texts lose control and bidi characters.
 */
export function parseRecord(value: unknown): TaskRecord | undefined {
  const parsed = RECORD.safeParse(value);
  if (!parsed.success) return undefined;
  const record = parsed.data;
  if (
    Number.isNaN(Date.parse(record.task.createdAt)) ||
    Number.isNaN(Date.parse(record.task.lastUpdatedAt))
  ) {
    return undefined;
  }
  return record as TaskRecord;
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
