/**
 * The tasks of task-augmented calls answered before anything was sent (bad arguments, a spend limit, the
 * user's decline of the cost): answered like any task, ended at once with what a plain call gets (failed
 * for an error result such as validation_error or budget_exceeded; completed for a decline, which is not an
 * error, so that a client shows it rather than "task failed"), but held only here, per caller, for the
 * shortest ttl and at most MAX_REFUSED of them: no runtime, no file, nothing shared, whatever the flood.
 */
import { randomUUID } from "node:crypto";
import { MIN_TASK_TTL_MS } from "../../config/index.js";
import { expiresAt, type StoredResult, type TaskRecord } from "../../state/records.js";

const MAX_REFUSED = 1000;

export class RefusedTasks {
  private readonly tasks = new Map<string, { caller: string; record: TaskRecord }>();

  add(caller: string, tool: string, result: StoredResult): TaskRecord {
    const now = new Date().toISOString();
    const firstLine = result.content.find((part) => part.type === "text")?.text.split("\n")[0];
    const record: TaskRecord = {
      task: {
        taskId: randomUUID(),
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
    this.sweep();
    this.tasks.set(record.task.taskId, { caller, record });
    if (this.tasks.size > MAX_REFUSED) this.tasks.delete(this.tasks.keys().next().value ?? "");
    return record;
  }

  /** The refused task of this caller, while it lives. */
  find(caller: string, taskId: string): TaskRecord | undefined {
    const found = this.tasks.get(taskId);
    if (found === undefined || found.caller !== caller || expiresAt(found.record.task) <= Date.now()) {
      return undefined;
    }
    return found.record;
  }

  private sweep(): void {
    const now = Date.now();
    for (const [taskId, entry] of this.tasks) {
      if (expiresAt(entry.record.task) > now) break;
      this.tasks.delete(taskId);
    }
  }
}

/** Refused task-augmented calls, per caller, for the whole process (bounded). */
export const REFUSED_TASKS = new RefusedTasks();
