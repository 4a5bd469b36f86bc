/**
 * MCP tasks in the 2025-11-25 form (SEP-1686), offered only to clients that negotiated it: a task-augmented
 * `tools/call` answers `{ task }`; tasks/get, tasks/result (waits for the end), tasks/list, tasks/cancel. A
 * task the caller cannot see, a cancel too late or a bad cursor is -32602.
 */
import { RELATED_TASK_META_KEY, type Result } from "@modelcontextprotocol/server";
import * as z from "zod";
import type { TaskState } from "../../state/records.js";
import type { Register } from "../handlers.js";
import { TASK_ID, type CallerTasks } from "./caller-tasks.js";

const CURSOR = { params: z.looseObject({ cursor: z.string().max(32).optional() }) };

/** The answer to a `tools/call` that became a task. */
export function createdTask2025(task: TaskState): Result {
  return { task: { ...task } };
}

export function registerTasks2025(on: Register, tasks: CallerTasks): void {
  on("tasks/get", TASK_ID, async ({ taskId }) => ({ ...(await tasks.find(taskId)).task }));
  on("tasks/result", TASK_ID, async ({ taskId }, ctx) => {
    const { result = { content: [] } } = await tasks.ended(taskId, ctx.mcpReq.signal);
    return { ...result, _meta: { ...result._meta, [RELATED_TASK_META_KEY]: { taskId } } };
  });
  on("tasks/cancel", TASK_ID, async ({ taskId }) => ({ ...(await tasks.cancel(taskId)).task }));
  on("tasks/list", CURSOR, async ({ cursor }) => tasks.list(cursor));
}
