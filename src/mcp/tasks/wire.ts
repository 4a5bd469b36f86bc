/**
 * MCP tasks on the wire, in the form of the era a client speaks; a task the caller cannot see, a cancel too
 * late or a bad cursor is -32602.
 * - 2025-11-25 (SEP-1686), offered only to clients that negotiated it: a task-augmented `tools/call` answers
 *   `{ task }`; tasks/get, tasks/result (waits for the end), tasks/list, tasks/cancel.
 * - 2026-07-28, the extension `io.modelcontextprotocol/tasks` (SEP-2663), for a client that declared it on
 *   the request: `resultType: "task"`; tasks/get carries the call's result once completed; tasks/update and
 *   tasks/cancel are acknowledged. The 2025 field names (`ttl`, `pollInterval`) never appear, and a tool
 *   result with isError is a completed call, as the extension says. tasks/result and tasks/list do not
 *   exist there (the SDK answers -32601).
 */
import {
  MissingRequiredClientCapabilityError,
  RELATED_TASK_META_KEY,
  type Result,
  type ServerContext,
} from "@modelcontextprotocol/server";
import * as z from "zod";
import { TERMINAL, type TaskRecord, type TaskState } from "../../state/records.js";
import { TaskEndedError, type Register } from "../handlers.js";
import { TASKS_EXTENSION, declaredCapabilities, type Revision } from "../revisions.js";
import type { CallerTasks } from "./caller-tasks.js";

const TASK_ID = { params: z.looseObject({ taskId: z.string().max(200) }) };
const CURSOR = { params: z.looseObject({ cursor: z.string().max(32).optional() }) };

/** Whether the client declared the tasks extension on this request (the only way it may get a task). */
export function declaresTasks(ctx: ServerContext): boolean {
  return declaredCapabilities(ctx)?.extensions?.[TASKS_EXTENSION] !== undefined;
}

/** The answer to a `tools/call` that became a task. */
export function createdTask(form: "2025" | "2026", task: TaskState): Result {
  return form === "2025" ? { task: { ...task } } : { resultType: "task", ...wireTask(task) };
}

export function registerTasks(revision: Revision, on: Register, tasks: CallerTasks): void {
  if (revision.era !== "modern") {
    on("tasks/get", TASK_ID, async ({ taskId }) => ({ ...(await tasks.find(taskId)).task }));
    on("tasks/result", TASK_ID, async ({ taskId }, ctx) => {
      const { result = { content: [] } } = await tasks.ended(taskId, ctx.mcpReq.signal);
      return { ...result, _meta: { ...result._meta, [RELATED_TASK_META_KEY]: { taskId } } };
    });
    on("tasks/cancel", TASK_ID, async ({ taskId }) => ({ ...(await tasks.cancel(taskId)).task }));
    on("tasks/list", CURSOR, async ({ cursor }) => tasks.list(cursor));
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
