/**
 * What a wire form answers for a task it cannot serve, and how a task id is shown in such an answer. Apart
 * from the store (store.ts), so that the wire forms load without it: the store comes with the runtime.
 */
import type { TaskStatus } from "./records.js";

// C0/C1 controls but tab and newline, and the bidi controls that can disguise text.
export const DISGUISE =
  // eslint-disable-next-line no-control-regex
  /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

/** A task id as an error may quote it: bounded, without the characters that could disguise it. */
export function shownId(taskId: string): string {
  return JSON.stringify(taskId.length > 64 ? `${taskId.slice(0, 64)}…` : taskId).replace(DISGUISE, "");
}

/** The task does not exist for this caller, or its ttl has passed (wire forms answer -32602). */
export class TaskNotFoundError extends Error {
  override name = "TaskNotFoundError";
  constructor(taskId: string) {
    super(`Task not found: ${shownId(taskId)}`);
  }
}

/** A cancel reached a task that had already ended (2025-11-25 answers it with -32602). */
export class TaskEndedError extends Error {
  override name = "TaskEndedError";
  constructor(taskId: string, status: TaskStatus) {
    super(`Cannot cancel task ${shownId(taskId)}: it is already ${status}.`);
  }
}
