/**
 * MCP tasks on the wire, as one caller sees them: the tasks of its refused calls first, then the records of
 * its runtime (store.ts, made only when a task request needs it); a task the caller cannot see, a cancel too
 * late or a bad cursor is -32602.
 * - 2025-11-25 (SEP-1686), offered only to clients that negotiated it: a task-augmented `tools/call` answers
 *   `{ task }`; tasks/get, tasks/result (waits for the end), tasks/list, tasks/cancel.
 * - 2026-07-28, the extension `io.modelcontextprotocol/tasks` (SEP-2663), for a client that declared it on
 *   the request: `resultType: "task"`; tasks/get carries the call's result once completed; tasks/update and
 *   tasks/cancel are acknowledged. The 2025 field names (`ttl`, `pollInterval`) never appear, and a tool
 *   result with isError is a completed call, as the extension says. tasks/result and tasks/list do not
 *   exist there (the SDK answers -32601).
 *
 * A refused call's task (bad arguments, a spend limit, the user's decline: nothing was sent) ends at once
 * with what a plain call gets (completed for a decline, which is no error, so a client does not show "task
 * failed"), held only here, per caller, for the shortest ttl and at most MAX_REFUSED of them: no runtime, no
 * file, nothing shared, whatever the flood.
 */
import {
  MissingRequiredClientCapabilityError,
  RELATED_TASK_META_KEY,
  type Result,
  type ServerContext,
} from "@modelcontextprotocol/server";
import * as z from "zod";
import { MIN_TASK_TTL_MS } from "../../config/index.js";
import {
  TERMINAL,
  expiresAt,
  type StoredResult,
  type TaskRecord,
  type TaskState,
} from "../../state/records.js";
import { TaskEndedError, type Register } from "../handlers.js";
import { TASKS_EXTENSION, declaredCapabilities, type Revision } from "../revisions.js";
import type { Session } from "../session.js";

const TASK_ID = { params: z.looseObject({ taskId: z.string().max(200) }) };
const CURSOR = { params: z.looseObject({ cursor: z.string().max(32).optional() }) };
const MAX_REFUSED = 1000;

/** Whether the client declared the tasks extension on this request (the only way it may get a task). */
export function declaresTasks(ctx: ServerContext): boolean {
  return declaredCapabilities(ctx)?.extensions?.[TASKS_EXTENSION] !== undefined;
}

/** The answer to a `tools/call` that became a task. */
export function createdTask(form: "2025" | "2026", task: TaskState): Result {
  return form === "2025" ? { task: { ...task } } : { resultType: "task", ...wireTask(task) };
}

/** The caller's id is read when a task request comes: the local caller's is worked out then, not at start. */
export function registerTasks(revision: Revision, on: Register, session: Session): void {
  const { caller } = session;
  const store = async () => (await session.runtime()).tasks;
  const refused = (taskId: string) => REFUSED_TASKS.find(caller.id, taskId);
  const tasks = {
    find: async (taskId: string) => refused(taskId) ?? (await store()).find(taskId, caller.scope),
    ended: async (taskId: string, signal: AbortSignal) =>
      refused(taskId) ?? (await store()).ended(taskId, caller.scope, signal),
    cancel: async (taskId: string) => {
      const ended = refused(taskId);
      if (ended !== undefined) throw new TaskEndedError(taskId, ended.task.status);
      return (await store()).cancel(taskId, caller.scope);
    },
  };
  if (revision.era !== "modern") {
    on("tasks/get", TASK_ID, async ({ taskId }) => ({ ...(await tasks.find(taskId)).task }));
    on("tasks/result", TASK_ID, async ({ taskId }, ctx) => {
      const { result = { content: [] } } = await tasks.ended(taskId, ctx.mcpReq.signal);
      return { ...result, _meta: { ...result._meta, [RELATED_TASK_META_KEY]: { taskId } } };
    });
    on("tasks/cancel", TASK_ID, async ({ taskId }) => ({ ...(await tasks.cancel(taskId)).task }));
    on("tasks/list", CURSOR, async ({ cursor }) => (await store()).list(caller.scope, cursor));
    return;
  }
  const handle = (method: string, answer: (taskId: string) => Promise<Result>) =>
    on(method, TASK_ID, async ({ taskId }, ctx) => {
      if (!declaresTasks(ctx)) {
        throw new MissingRequiredClientCapabilityError(
          { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
          `Tasks need the ${TASKS_EXTENSION} extension: declare it in this request's client capabilities.`,
        );
      }
      return answer(taskId);
    });
  handle("tasks/get", async (taskId) => detailed(await tasks.find(taskId)));
  // No task of ours waits for input: what a client sends is acknowledged and has nothing to change.
  handle("tasks/update", async (taskId) => {
    await tasks.find(taskId);
    return {};
  });
  handle("tasks/cancel", async (taskId) => {
    // Cancellation is cooperative: a task that ended first keeps its outcome, and the cancel is still acked.
    await tasks.cancel(taskId).catch((error: unknown) => {
      if (!(error instanceof TaskEndedError)) throw error;
    });
    return {};
  });
}

/**
 * 2026-07-28 tasks/get: the task, and its completed call's result, stamped here: the SDK stamps `resultType`
 * on the handler's answer only, and clients validate the nested result as a CallToolResult too.
 */
function detailed(record: TaskRecord): Result {
  const task = wireTask(record.task);
  if (task["status"] !== "completed" || record.result === undefined) return task;
  return { ...task, result: { ...record.result, resultType: "complete" } };
}

function wireTask(task: TaskState): Record<string, unknown> {
  const { taskId, createdAt, lastUpdatedAt, statusMessage, ttl, pollInterval } = task;
  return {
    taskId,
    // A call that answered, error or not, completed; only a cancel leaves a task without a result.
    status: TERMINAL.has(task.status) && task.status !== "cancelled" ? "completed" : task.status,
    ...(statusMessage !== undefined && { statusMessage }),
    createdAt,
    lastUpdatedAt,
    ttlMs: ttl,
    ...(pollInterval !== undefined && { pollIntervalMs: pollInterval }),
  };
}

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
