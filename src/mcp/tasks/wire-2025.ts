/**
 * MCP tasks in the form of revision 2025-11-25 (SEP-1686): a task-augmented `tools/call` (its `task` param)
 * answers `{ task }`; tasks/get answers the task, tasks/result waits for its end and answers the call's
 * result, tasks/list pages through the caller's tasks, tasks/cancel answers the cancelled task (-32602 for
 * one that had ended). Offered only to clients that negotiated 2025-11-25 (revisions.ts).
 */
import { RELATED_TASK_META_KEY, type Server } from "@modelcontextprotocol/server";
import * as z from "zod";
import type { TaskState } from "../../state/records.js";
import { guarded } from "../errors.js";
import { TASK_ID, cancelTask, endedTask, findTask, listTasks, type CallerTasks } from "./access.js";

const CURSOR = { params: z.looseObject({ cursor: z.string().max(32).optional() }) };

export function createdTask2025(task: TaskState): { task: TaskState } {
  return { task: { ...task } };
}

export function registerTasks2025(server: Server, tasks: CallerTasks): void {
  const { logger } = tasks;
  server.setRequestHandler(
    "tasks/get",
    TASK_ID,
    guarded("tasks/get", logger, async ({ taskId }) => ({ ...(await findTask(tasks, taskId)).task })),
  );
  server.setRequestHandler(
    "tasks/result",
    TASK_ID,
    guarded("tasks/result", logger, async ({ taskId }, ctx) => {
      const { result = { content: [] } } = await endedTask(tasks, taskId, ctx.mcpReq.signal);
      return { ...result, _meta: { ...result._meta, [RELATED_TASK_META_KEY]: { taskId } } };
    }),
  );
  server.setRequestHandler(
    "tasks/list",
    CURSOR,
    guarded("tasks/list", logger, async ({ cursor }) => listTasks(tasks, cursor)),
  );
  server.setRequestHandler(
    "tasks/cancel",
    TASK_ID,
    guarded("tasks/cancel", logger, async ({ taskId }) => ({ ...(await cancelTask(tasks, taskId)).task })),
  );
}
