/**
 * `tools/call` in both eras: the arguments checked (every refusal a `validation_error` result, never a
 * protocol error), then the tool run in this call (progress on its own stream) or as a task (taskForm).
 */
import {
  ProtocolError,
  ProtocolErrorCode,
  type ClientCapabilities,
  type Result,
  type ServerContext,
} from "@modelcontextprotocol/server";
import * as z from "zod";
import { ValidationError } from "../api/errors.js";
import { joinSignals } from "../api/sleep.js";
import { isObject } from "../api/shapes.js";
import { observeToolCall } from "../metrics.js";
import { renderAdvice } from "../advice.js";
import { cleanText } from "../redact.js";
import type { ServerDeps, ToolDefinition } from "../tools/define-tool.js";
import { TOOLS } from "../tools/index.js";
import {
  backgroundContext,
  describeError,
  toolContext,
  errorResult,
  toolResult,
  validationMessage,
  type CallToolResult,
} from "../tools/result.js";
import { checkSpend } from "./confirm.js";
import { requestLogSink } from "./logging.js";
import { linkAsker } from "./open-link.js";
import { offersLegacyTasks, type Revision } from "./revisions.js";
import { REFUSED_TASKS, createdTask, declaresTasks } from "./tasks/wire.js";
import type { Session } from "./session.js";

export interface CallEdge {
  session: Session;
  revision: Revision;
  /** The deps of the caller's runtime, made on first use; rejects with the service's refusal of the key. */
  deps(): Promise<ServerDeps>;
  /** What a 2025 client declared at `initialize` (none over stateless HTTP): whether it can be asked. */
  clientCapabilities: ClientCapabilities | undefined;
}

const byName = new Map(TOOLS.map((tool) => [tool.name, tool]));

const TASK_PARAM = z.looseObject({ ttl: z.number().nullish() });

type TaskForm = { form: "2025"; ttl: number | null | undefined } | { form: "2026" } | undefined;

export async function callTool(
  edge: CallEdge,
  params: Record<string, unknown>,
  ctx: ServerContext,
): Promise<Result> {
  const name = typeof params["name"] === "string" ? params["name"] : "";
  return observeToolCall(name, () => runToolCall(edge, name, params, ctx));
}

async function runToolCall(
  edge: CallEdge,
  name: string,
  params: Record<string, unknown>,
  ctx: ServerContext,
): Promise<Result> {
  const call = accept(name, params["arguments"]);
  const asTask = taskForm(edge.revision, params["task"], "tool" in call ? call : undefined, ctx);
  // Refused before anything was sent: a task of it is held in memory only (tasks/wire.ts).
  const refused = (answer: CallToolResult) =>
    asTask === undefined
      ? answer
      : createdTask(asTask.form, REFUSED_TASKS.add(edge.session.caller.id, name, answer).task);
  if ("refused" in call) return refused(call.refused);
  let deps: ServerDeps;
  try {
    deps = await edge.deps();
  } catch (error) {
    // The service refused the caller's key (or could not be asked): nothing was kept for this caller.
    if (asTask === undefined) return errorResult(error, undefined, edge.session.advice);
    throw new ProtocolError(
      ProtocolErrorCode.InvalidRequest,
      renderAdvice(describeError(error), edge.session.advice),
    );
  }
  const { tool, data } = call;
  const gate = await checkSpend({
    tool: name,
    data,
    deps,
    states: (await edge.session.runtime()).confirmStates,
    revision: edge.revision,
    ctx,
    clientCapabilities: edge.clientCapabilities,
  });
  if ("refused" in gate) return refused(gate.refused);
  // A 2025-11-25 task ends completed with the decline; elsewhere the decline is the answer.
  if ("declined" in gate) return asTask?.form === "2025" ? refused(gate.declined) : gate.declined;
  if ("answer" in gate) return gate.answer;
  if (asTask !== undefined) {
    const startedAt = Date.now();
    const tasks = (await edge.session.runtime()).tasks;
    const task = await tasks.start({
      tool: name,
      scope: edge.session.caller.scope,
      requestedTtl: asTask.form === "2025" ? asTask.ttl : undefined,
      stopping: deps.stopping,
      saved: tool.task?.save?.(data),
      run: (run) => {
        const prepared = tool.task?.prepare?.(data, run.ttlMs) ?? data;
        const running = tool.handler(prepared, deps, backgroundContext(run, deps, startedAt));
        return toolResult(tool, running, deps, run.signal);
      },
    });
    return createdTask(asTask.form, task);
  }
  const progressToken = ctx.mcpReq._meta?.progressToken;
  let progress = 0;
  const logSink = edge.revision.era === "modern" ? requestLogSink(ctx) : undefined;
  const cancelled = joinSignals([ctx.mcpReq.signal, deps.stopping]);
  const asker = linkAsker(edge.revision, ctx, edge.clientCapabilities);
  const context = toolContext(deps, {
    openLink: asker.openLink,
    linkAnswer: asker.linkAnswer,
    signal: cancelled.signal,
    logger: logSink === undefined ? deps.logger : deps.logger.withSink(logSink),
    send: async (message) => {
      if (progressToken === undefined || ctx.mcpReq.signal.aborted) return;
      progress += 1;
      try {
        await ctx.mcpReq.notify({
          method: "notifications/progress",
          params: { progressToken, progress, message },
        });
      } catch (error) {
        deps.logger.debug("progress notification not delivered", { error: String(error) });
      }
    },
  });
  try {
    const running = tool.handler(data, deps, context);
    return await asker.finish(await toolResult(tool, running, deps, context.signal, ctx.mcpReq.signal));
  } finally {
    cancelled.release();
  }
}

/** The tool and its checked arguments, or the validation_error a call answers before sending anything. */
function accept(
  name: string,
  args: unknown,
): { tool: ToolDefinition; data: unknown } | { refused: CallToolResult } {
  const tool = byName.get(name);
  if (tool === undefined) {
    return {
      refused: errorResult(
        new ValidationError(`Unknown tool "${cleanText(name, 80)}".`, {
          nextStep: `Use one of: ${[...byName.keys()].join(", ")}.`,
        }),
      ),
    };
  }
  // Gemini CLI adds `wait_for_previous` to every tool: ignored; any other unknown one (a typo) is refused.
  const { wait_for_previous: _added, ...kept } = isObject(args) ? args : {};
  const parsed = tool.input.safeParse(isObject(args) ? withoutUnset(tool.input, kept) : (args ?? {}));
  if (!parsed.success) {
    return { refused: errorResult(new ValidationError(validationMessage(tool.name, parsed.error))) };
  }
  return { tool, data: parsed.data };
}

/** An optional input given as "", [] or null is not given (CONTRACT): form clients send every field. */
function withoutUnset(input: z.ZodType, args: Record<string, unknown>): Record<string, unknown> {
  const shape: Record<string, z.ZodType> = input instanceof z.ZodObject ? input.shape : {};
  const unset = ([key, value]: [string, unknown]) =>
    (value === null || value === "" || (Array.isArray(value) && value.length === 0)) &&
    Object.hasOwn(shape, key) &&
    shape[key]?.safeParse(undefined).success === true;
  return Object.fromEntries(Object.entries(args).filter((entry) => !unset(entry)));
}

/**
 * Whether this call runs as a task, and in which form. 2025-11-25: when the client sent `task` (a malformed
 * one is refused, never turned into a blocking call). 2026-07-28: for a client that declared the extension,
 * a call that would wait becomes a task; a dry run or a call that answers at once does not.
 */
function taskForm(
  revision: Revision,
  taskParam: unknown,
  call: { tool: ToolDefinition; data: unknown } | undefined,
  ctx: ServerContext,
): TaskForm {
  if (revision.era === "modern") {
    // A refused call needs no task: its answer is at hand; nor does one that would not wait.
    const args = isObject(call?.data) ? call.data : {};
    const waits = args["dry_run"] !== true && args["wait"] !== false;
    return declaresTasks(ctx) && call?.tool.task !== undefined && waits ? { form: "2026" } : undefined;
  }
  if (taskParam === undefined || !offersLegacyTasks(revision)) return undefined;
  const asked = TASK_PARAM.safeParse(taskParam);
  if (!asked.success) {
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      'Invalid params: "task" must be an object whose optional "ttl" is a number of milliseconds.',
    );
  }
  if (call !== undefined && call.tool.task === undefined) {
    throw new ProtocolError(
      ProtocolErrorCode.MethodNotFound,
      `${call.tool.name} does not run as a task: call it without "task".`,
    );
  }
  return { form: "2025", ttl: asked.data.ttl };
}
