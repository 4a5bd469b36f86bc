/**
 * MCP tasks in the form of revision 2025-11-25 (SEP-1686): a task-augmented `tools/call` (its `task` param)
 * answers `{ task }`; tasks/get answers the task, tasks/result waits for its end and answers the call's
 * result, tasks/list pages through the caller's tasks, tasks/cancel answers the cancelled task (-32602 for
 * one that had ended). Offered only to clients that negotiated 2025-11-25 (revisions.ts).
 */
import { RELATED_TASK_META_KEY, type Server } from "@modelcontextprotocol/server";
import * as z from "zod";
import type { TaskState } from "./records.js";
import { cancelTask, endedTask, findTask, listTasks, type CallerTasks } from "./access.js";

const TASK_ID = { params: z.looseObject({ taskId: z.string().max(200) }) };
const CURSOR = { params: z.looseObject({ cursor: z.string().max(32).optional() }) };

/** The answer to a task-augmented tools/call. */
export function createdTask2025(task: TaskState): { task: TaskState } {
  return { task: { ...task } };
}

export function registerTasks2025(server: Server, tasks: CallerTasks): void {
  server.setRequestHandler("tasks/get", TASK_ID, async ({ taskId }) => ({
    ...(await findTask(tasks, taskId)).task,
  }));
  server.setRequestHandler("tasks/result", TASK_ID, async ({ taskId }, ctx) => {
    const record = await endedTask(tasks, taskId, ctx.mcpReq.signal);
    const result = record.result ?? { content: [] };
    return { ...result, _meta: { ...result._meta, [RELATED_TASK_META_KEY]: { taskId } } };
  });
  server.setRequestHandler("tasks/list", CURSOR, async ({ cursor }) => listTasks(tasks, cursor));
  server.setRequestHandler("tasks/cancel", TASK_ID, async ({ taskId }) => ({
    ...(await cancelTask(tasks, taskId)).task,
  }));
}
