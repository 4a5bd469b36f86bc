/**
 * One caller's view of its tasks, whatever the wire form: the tasks of its refused calls (refused.ts, in
 * memory) first, then the records of its runtime (store.ts, made only when a task request needs it). A task
 * the caller cannot see, a cancel too late or a bad cursor is -32602 with a bounded message (../errors.ts).
 */
import { ProtocolError, ProtocolErrorCode } from "@modelcontextprotocol/server";
import type { Logger } from "../../logger.js";
import type { TaskRecord, TaskState } from "../../state/records.js";
import { TaskEndedError } from "../errors.js";
import { REFUSED_TASKS } from "./refused.js";
import type { TaskRecords } from "./store.js";

export interface CallerTasks {
  /** Caller.id: whose refused tasks these are. */
  callerId: string;
  /** Caller.scope: whose records these are, when one key serves several callers. */
  scope: string | undefined;
  /** The records of the caller's runtime (made on first use). */
  store(): Promise<TaskRecords>;
  /** Where an unexpected failure's details go (the client gets none). */
  logger: Logger;
}

export async function findTask(tasks: CallerTasks, taskId: string): Promise<TaskRecord> {
  return REFUSED_TASKS.find(tasks.callerId, taskId) ?? (await tasks.store()).find(taskId, tasks.scope);
}

/** The task once it has ended (a refused task has ended already). */
export async function endedTask(
  tasks: CallerTasks,
  taskId: string,
  signal: AbortSignal,
): Promise<TaskRecord> {
  const refused = REFUSED_TASKS.find(tasks.callerId, taskId);
  return refused ?? (await tasks.store()).ended(taskId, tasks.scope, signal);
}

/** Cancels the task; TaskEndedError when it had ended first. */
export async function cancelTask(tasks: CallerTasks, taskId: string): Promise<TaskRecord> {
  const refused = REFUSED_TASKS.find(tasks.callerId, taskId);
  if (refused !== undefined) throw new TaskEndedError(taskId, refused.task.status);
  return (await tasks.store()).cancel(taskId, tasks.scope);
}

export async function listTasks(
  tasks: CallerTasks,
  cursor: string | undefined,
): Promise<{ tasks: TaskState[]; nextCursor?: string }> {
  try {
    return await (await tasks.store()).list(tasks.scope, cursor);
  } catch (error) {
    if (error instanceof RangeError)
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, "Invalid cursor.");
    throw error;
  }
}
