/**
 * One caller's view of its tasks, for both wire forms (wire.ts): the tasks of its refused calls first, then
 * the records of its runtime (store.ts, made only when a task request needs it).
 *
 * A refused call's task (bad arguments, a spend limit, the user's decline: nothing was sent) ends at once
 * with what a plain call gets (completed for a decline, which is no error, so a client does not show "task
 * failed"), held only here, per caller, for the shortest ttl and at most MAX_REFUSED of them: no runtime, no
 * file, nothing shared, whatever the flood.
 */
import type { Caller } from "../../auth/caller.js";
import { MIN_TASK_TTL_MS } from "../../config/index.js";
import { expiresAt, type StoredResult, type TaskRecord } from "../../state/records.js";
import { TaskEndedError } from "../handlers.js";
import type { TaskRecords } from "./store.js";

/** `caller` is read when a task request comes (the local caller's id is worked out then, off the start-up path). */
export function callerView(caller: Pick<Caller, "id" | "scope">, store: () => Promise<TaskRecords>) {
  const refused = (taskId: string) => REFUSED_TASKS.find(caller.id, taskId);
  return {
    find: async (taskId: string) => refused(taskId) ?? (await store()).find(taskId, caller.scope),
    ended: async (taskId: string, signal: AbortSignal) =>
      refused(taskId) ?? (await store()).ended(taskId, caller.scope, signal),
    cancel: async (taskId: string) => {
      const ended = refused(taskId);
      if (ended !== undefined) throw new TaskEndedError(taskId, ended.task.status);
      return (await store()).cancel(taskId, caller.scope);
    },
    list: async (cursor: string | undefined) => (await store()).list(caller.scope, cursor),
  };
}

export type CallerTasks = ReturnType<typeof callerView>;

const MAX_REFUSED = 1000;

export class RefusedTasks {
  private readonly tasks = new Map<string, { caller: string; record: TaskRecord }>();

  add(caller: string, tool: string, result: StoredResult): TaskRecord {
    const now = new Date().toISOString();
    const firstLine = result.content.find((part) => part.type === "text")?.text.split("\n")[0];
    const record: TaskRecord = {
      task: {
        // The global Web Crypto: node:crypto loads on first use, not on the stdio start-up path.
        taskId: crypto.randomUUID(),
        status: result.isError === true ? "failed" : "completed",
        ttl: MIN_TASK_TTL_MS,
        createdAt: now,
        lastUpdatedAt: now,
        ...(firstLine !== undefined && { statusMessage: firstLine }),
      },
      tool,
      result,
      ephemeral: true,
    };
    // Oldest first: the expired ones lead.
    for (const [taskId, entry] of this.tasks) {
      if (expiresAt(entry.record.task) > Date.now()) break;
      this.tasks.delete(taskId);
    }
    this.tasks.set(record.task.taskId, { caller, record });
    if (this.tasks.size > MAX_REFUSED) this.tasks.delete(this.tasks.keys().next().value ?? "");
    return record;
  }

  find(caller: string, taskId: string): TaskRecord | undefined {
    const found = this.tasks.get(taskId);
    return found?.caller === caller && expiresAt(found.record.task) > Date.now() ? found.record : undefined;
  }
}

/** Refused task-augmented calls, per caller, for the whole process (bounded). */
export const REFUSED_TASKS = new RefusedTasks();
