/**
 * What the protocol edge decides of an MCP task record (its type and parser live with the state that keeps
 * it, state/records.ts): the ttl a task gets, which states are final, and how a result reads as failed.
 */
import { MAX_TASK_TTL_MS, MIN_TASK_TTL_MS } from "../../config/index.js";
import type { StoredResult, TaskStatus } from "../../state/records.js";

/** A requested ttl that names none gets this. */
export const DEFAULT_TASK_TTL_MS = 60 * 60 * 1000;

export const TERMINAL: ReadonlySet<TaskStatus> = new Set(["completed", "failed", "cancelled"]);

/** The ttl a task gets: the default when none was asked for, else the one asked for within the bounds. */
export function boundTtl(requested: number | null | undefined): number {
  if (typeof requested !== "number" || !Number.isFinite(requested)) return DEFAULT_TASK_TTL_MS;
  return Math.max(MIN_TASK_TTL_MS, Math.min(Math.round(requested), MAX_TASK_TTL_MS));
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
