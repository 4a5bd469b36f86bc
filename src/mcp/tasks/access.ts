/**
 * One caller's view of its tasks, whatever the wire form: the tasks of its refused calls (refused.ts, in
 * memory) first, then the records of its runtime (store.ts, made only when a task request needs it). Errors
 * a client caused (an unknown task, a cancel too late, a bad cursor) become -32602 with a bounded message.
 */
import { ProtocolError, ProtocolErrorCode } from "@modelcontextprotocol/server";
import type { TaskRecord, TaskState } from "./records.js";
import { REFUSED_TASKS } from "./refused.js";
import type { TaskRecords } from "./store.js";
import { TaskEndedError, TaskNotFoundError } from "./task-errors.js";

export interface CallerTasks {
  /** Caller.id: whose refused tasks these are. */
  callerId: string;
  /** Caller.scope: whose records these are, when one key serves several callers. */
  scope: string | undefined;
  /** The records of the caller's runtime (made on first use). */
  store(): Promise<TaskRecords>;
}

export function findTask(tasks: CallerTasks, taskId: string): Promise<TaskRecord> {
  return asProtocolError(async () => {
    return REFUSED_TASKS.find(tasks.callerId, taskId) ?? (await tasks.store()).find(taskId, tasks.scope);
  });
}

/** The task once it has ended (a refused task has ended already). */
export function endedTask(tasks: CallerTasks, taskId: string, signal: AbortSignal): Promise<TaskRecord> {
  return asProtocolError(async () => {
    return (
      REFUSED_TASKS.find(tasks.callerId, taskId) ?? (await tasks.store()).ended(taskId, tasks.scope, signal)
    );
  });
}

/** Cancels the task; TaskEndedError (-32602) when it had ended first. */
export function cancelTask(tasks: CallerTasks, taskId: string): Promise<TaskRecord> {
  return asProtocolError(async () => {
    const refused = REFUSED_TASKS.find(tasks.callerId, taskId);
    if (refused !== undefined) throw new TaskEndedError(taskId, refused.task.status);
    return (await tasks.store()).cancel(taskId, tasks.scope);
  });
}

export function listTasks(
  tasks: CallerTasks,
  cursor: string | undefined,
): Promise<{ tasks: TaskState[]; nextCursor?: string }> {
  return asProtocolError(async () => (await tasks.store()).list(tasks.scope, cursor));
}

async function asProtocolError<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof TaskNotFoundError || error instanceof TaskEndedError) {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, error.message);
    }
    if (error instanceof RangeError)
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, "Invalid cursor.");
    throw error;
  }
}
