/**
 * MCP tasks on the wire, in each era's form, over one caller's view of its tasks: the tasks of its refused
 * calls (held here, in memory) first, then the records of its runtime (store.ts, made only when a task request
 * needs it). A task the caller cannot see, a cancel too late or a bad cursor is -32602 (../errors.ts).
 * - 2025-11-25 (SEP-1686), offered only to clients that negotiated it: a task-augmented `tools/call` answers
 *   `{ task }`; tasks/get, tasks/result (waits for the end), tasks/list, tasks/cancel (-32602 once ended).
 * - 2026-07-28, the extension `io.modelcontextprotocol/tasks` (SEP-2663), for a client that declared it on
 *   the request: `resultType: "task"`; tasks/get carries the call's result once completed; tasks/update and
 *   tasks/cancel are acknowledged. The 2025 field names (`ttl`, `pollInterval`) never appear, and a tool
 *   result with isError is a completed call, as the extension says. tasks/result and tasks/list do not exist
 *   there (the SDK answers -32601).
 *
 * A refused call's task (bad arguments, a spend limit, the user's decline of the cost: nothing was sent) is
 * answered like any task, ended at once with what a plain call gets (failed for an error result; completed
 * for a decline, which is not an error, so that a client shows it rather than "task failed"), but held only
 * here, per caller, for the shortest ttl and at most MAX_REFUSED of them: no runtime, no file, nothing
 * shared, whatever the flood.
 */
import { randomUUID } from "node:crypto";
import {
  MissingRequiredClientCapabilityError,
  RELATED_TASK_META_KEY,
  type Result,
  type Server,
  type ServerContext,
} from "@modelcontextprotocol/server";
import * as z from "zod";
import { MIN_TASK_TTL_MS } from "../../config/index.js";
import type { Logger } from "../../logger.js";
import {
  TERMINAL,
  expiresAt,
  type StoredResult,
  type TaskRecord,
  type TaskState,
} from "../../state/records.js";
import { TaskEndedError, handlerOn } from "../errors.js";
import { TASKS_EXTENSION, declaredCapabilities } from "../revisions.js";
import type { TaskRecords } from "./store.js";

const TASK_ID = { params: z.looseObject({ taskId: z.string().max(200) }) };
const CURSOR = { params: z.looseObject({ cursor: z.string().max(32).optional() }) };

export interface CallerTasks {
  callerId: string;
  scope: string | undefined;
  store(): Promise<TaskRecords>;
  /** Where an unexpected failure's details go (the client gets none). */
  logger: Logger;
}

/** Whether the client declared the tasks extension on this request (the only way it may get a task). */
export function declaresTasks(ctx: ServerContext): boolean {
  return declaredCapabilities(ctx)?.extensions?.[TASKS_EXTENSION] !== undefined;
}

/** The answer to a `tools/call` that became a task, in the era's form. */
export function createdTask(task: TaskState, modern: boolean): Result {
  return modern ? { resultType: "task", ...wireTask(task) } : { task: { ...task } };
}

export function registerTasks(server: Server, tasks: CallerTasks, modern: boolean): void {
  const refused = (taskId: string) => REFUSED_TASKS.find(tasks.callerId, taskId);
  const find = async (taskId: string) => refused(taskId) ?? (await tasks.store()).find(taskId, tasks.scope);
  const cancel = async (taskId: string) => {
    const ended = refused(taskId);
    if (ended !== undefined) throw new TaskEndedError(taskId, ended.task.status);
    return (await tasks.store()).cancel(taskId, tasks.scope);
  };
  const on = handlerOn(server, tasks.logger);
  const handle = (method: string, answer: (taskId: string, ctx: ServerContext) => Promise<Result>) =>
    on(method, TASK_ID, async ({ taskId }, ctx) => {
      if (modern && !declaresTasks(ctx)) {
        throw new MissingRequiredClientCapabilityError(
          { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
          `Tasks need the ${TASKS_EXTENSION} extension: declare it in this request's client capabilities.`,
        );
      }
      return answer(taskId, ctx);
    });

  if (modern) {
    handle("tasks/get", async (taskId) => detailed(await find(taskId)));
    // No task of ours waits for input: what a client sends is acknowledged and has nothing to change.
    handle("tasks/update", async (taskId) => {
      await find(taskId);
      return {};
    });
    handle("tasks/cancel", async (taskId) => {
      // Cancellation is cooperative: a task that ended first keeps its outcome, and the cancel is still acked.
      await cancel(taskId).catch((error: unknown) => {
        if (!(error instanceof TaskEndedError)) throw error;
      });
      return {};
    });
    return;
  }
  handle("tasks/get", async (taskId) => ({ ...(await find(taskId)).task }));
  handle("tasks/result", async (taskId, ctx) => {
    const { result = { content: [] } } =
      refused(taskId) ?? (await (await tasks.store()).ended(taskId, tasks.scope, ctx.mcpReq.signal));
    return { ...result, _meta: { ...result._meta, [RELATED_TASK_META_KEY]: { taskId } } };
  });
  handle("tasks/cancel", async (taskId) => ({ ...(await cancel(taskId)).task }));
  on("tasks/list", CURSOR, async ({ cursor }) => (await tasks.store()).list(tasks.scope, cursor));
}

/**
 * 2026-07-28 tasks/get: the task, and once the call has completed its result. The SDK stamps `resultType` on
 * the handler's answer only; the result nested inside is a CallToolResult of this revision too, and clients
 * validate it as one.
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
    if (found === undefined || found.caller !== caller || expiresAt(found.record.task) <= Date.now()) {
      return undefined;
    }
    return found.record;
  }
}

/** Refused task-augmented calls, per caller, for the whole process (bounded). */
export const REFUSED_TASKS = new RefusedTasks();
