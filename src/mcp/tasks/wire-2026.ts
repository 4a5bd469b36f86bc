/**
 * MCP tasks in the form of revision 2026-07-28, the extension `io.modelcontextprotocol/tasks` (SEP-2663):
 * the server decides per call whether to answer `tools/call` with a task (`resultType: "task"`), and only
 * for a client that declared the extension on that request; tasks/get answers the task with the call's
 * result inline once it has completed; tasks/update and tasks/cancel are acknowledged. The 2025 field names
 * (`ttl`, `pollInterval`) never appear, and a tool result with isError is a completed call, as the extension
 * says. tasks/result and tasks/list do not exist in this revision (the SDK answers -32601).
 */
import {
  CLIENT_CAPABILITIES_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
  type Server,
  type ServerContext,
} from "@modelcontextprotocol/server";
import type { TaskRecord, TaskState } from "../../state/records.js";
import { TaskEndedError, guarded } from "../errors.js";
import { TASKS_EXTENSION } from "../revisions.js";
import { TASK_ID, cancelTask, findTask, type CallerTasks } from "./access.js";
import { TERMINAL } from "./runs.js";

/** Whether the client declared the tasks extension on this request (the only way it may get a task). */
export function declaresTasks(ctx: ServerContext): boolean {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const capabilities = envelope?.[CLIENT_CAPABILITIES_META_KEY] as
    { extensions?: Record<string, unknown> } | undefined;
  return capabilities?.extensions?.[TASKS_EXTENSION] !== undefined;
}

export function createdTask2026(task: TaskState): Record<string, unknown> {
  return { resultType: "task", ...wireTask(task) };
}

export function registerTasks2026(server: Server, tasks: CallerTasks): void {
  const handle = (
    method: "tasks/get" | "tasks/update" | "tasks/cancel",
    answer: (taskId: string) => Promise<Record<string, unknown>>,
  ) =>
    server.setRequestHandler(
      method,
      TASK_ID,
      guarded(method, tasks.logger, async ({ taskId }, ctx) => {
        requireExtension(ctx);
        return answer(taskId);
      }),
    );
  handle("tasks/get", async (taskId) => detailed(await findTask(tasks, taskId)));
  // No task of ours waits for input: what a client sends is acknowledged and has nothing to change.
  handle("tasks/update", async (taskId) => {
    await findTask(tasks, taskId);
    return {};
  });
  handle("tasks/cancel", async (taskId) => {
    // Cancellation is cooperative: a task that ended first keeps its outcome, and the cancel is still acked.
    await cancelTask(tasks, taskId).catch((error: unknown) => {
      if (!(error instanceof TaskEndedError)) throw error;
    });
    return {};
  });
}

function requireExtension(ctx: ServerContext): void {
  if (declaresTasks(ctx)) return;
  throw new ProtocolError(
    ProtocolErrorCode.MissingRequiredClientCapability,
    `Tasks need the ${TASKS_EXTENSION} extension: declare it in this request's client capabilities.`,
    { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
  );
}

/**
 * tasks/get: the task, and once the call has completed its result. The SDK stamps `resultType` on the
 * handler's answer only; the result nested inside is a CallToolResult of this revision too, and clients
 * validate it as one.
 */
function detailed(record: TaskRecord): Record<string, unknown> {
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
