/**
 * createServer(deps): the MCP server and its tools. No I/O at import; the caller connects a transport.
 * The low-level SDK server is used so that every argument check, including the schema check, answers
 * with our `validation_error` text, and so that no failure can escape as a crash.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import {
  ErrorCode,
  ListResourceTemplatesRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  RootsListChangedNotificationSchema,
  type CallToolResult,
  type CreateTaskResult,
  type ServerNotification,
  type ServerRequest,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import * as z from "zod";
import type { TaskStore } from "@modelcontextprotocol/sdk/experimental/tasks/interfaces.js";
import { AbortedError, ValidationError } from "./api/errors.js";
import { renderAdvice, type AdviceMode } from "./advice.js";
import type { Caller } from "./auth/caller.js";
import { isObject } from "./api/normalize.js";
import { attachMcpLogging } from "./mcp-logging.js";
import type { Logger } from "./logger.js";
import { RefusedTasks } from "./mcp-tasks.js";
import type { Runtime } from "./runtime.js";
import { withMedia, type MediaSettings } from "./media/content.js";
import { cleanText } from "./redact.js";
import type { ServerDeps, ToolContext, ToolDefinition } from "./tools/define-tool.js";
import { StoppingError, describeError, errorResult, validationMessage } from "./tools/format.js";
import { TOOLS } from "./tools/index.js";
import { listViewerResources, readViewerResource, viewerToolMeta } from "./ui/viewer.js";

export const SERVER_NAME = "generation-mcp";

type RequestExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/**
 * The bundler inlines `describeTools()` as computed at build time from these same schemas (the JSON Schema
 * conversion is a third of the start-up work); unbundled runs compute it.
 */
declare const __GENERATION_MCP_TOOLS__: Tool[] | undefined;

const INSTRUCTIONS =
  "Generates videos and images through a credit-based service. generate_video waits up to a window " +
  "(about 45 s) and then returns video_id with the current status; the task keeps running, so call " +
  "get_status with wait: true to resume instead of starting it again. Use dry_run: true to see the cost " +
  "in credits first, and get_credits to see the balance.";

export interface ServerHooks {
  server?: Server | undefined;
  /** The client's MCP roots as file URIs; empty when the client offers none. Cached until they change. */
  clientRoots(): Promise<string[]>;
  /** Who is calling, when one service key serves several callers (the HTTP gateway): see ServerDeps.scope. */
  scope?: string | undefined;
}

/** Who a server (one per stdio connection, one per HTTP request) serves, and how to reach its runtime. */
export interface Session {
  caller: Caller;
  /** How this caller changes a setting: what next steps name (advice.ts). */
  advice: AdviceMode;
  /** The configured service's origin: the one origin the viewer may load media from. */
  mediaOrigin: string | undefined;
  /**
   * The runtime of the caller's service key, made on the first call that needs the service (for a caller's
   * own key that means the service accepted it): requests that need nothing of it (initialize, ping,
   * tools/list ...) never make one. Rejects with the service's refusal.
   */
  runtime(): Promise<Runtime>;
}

export interface ServerOptions {
  /**
   * The log whose lines are relayed as MCP log notifications (stdio: the runtime's). None over HTTP: a
   * runtime serves every request of its key, and one caller's call must not hear about another's.
   */
  mcpLogging?: Logger | undefined;
  /**
   * Declare the tasks capability and run task-augmented calls of the tools that allow it (generate_video,
   * generate_image) in the background, with the runtime's task records.
   */
  tasks?: boolean;
}

export type ServerDepsFactory = (hooks: ServerHooks) => ServerDeps;

/** Lists the tools as MCP describes them; also used by the schema snapshot test and the README table. */
export function describeTools(tools: readonly ToolDefinition[] = TOOLS): Tool[] {
  return tools.map((tool) => ({
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: toJsonSchema(tool.input, "input") as Tool["inputSchema"],
    outputSchema: toJsonSchema(tool.output, "output") as NonNullable<Tool["outputSchema"]>,
    annotations: { title: tool.title, ...tool.annotations },
    // "optional", never "required": a client without task support calls these tools as before.
    ...(tool.task !== undefined && { execution: { taskSupport: "optional" as const } }),
    ...(tool.viewer === true && { _meta: viewerToolMeta() }),
  }));
}

function toJsonSchema(schema: z.ZodType, io: "input" | "output"): Record<string, unknown> {
  const { $schema: _ignored, ...json } = z.toJSONSchema(schema, { io, unrepresentable: "any" });
  return json;
}

export function createServer(version: string, session: Session, options: ServerOptions = {}): Server {
  const scope = session.caller.scope;
  const withTasks = options.tasks === true;
  const server = new Server(
    { name: SERVER_NAME, title: "Video & image generation", version },
    {
      capabilities: {
        tools: {},
        // Only the MCP Apps viewer (src/ui/viewer.ts): no subscriptions, the list never changes.
        resources: {},
        logging: {},
        ...(withTasks && { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } }),
      },
      instructions: INSTRUCTIONS,
      ...(withTasks && {
        taskStore: lazyTaskStore(session.caller.id, async () => (await session.runtime()).tasks.view(scope)),
      }),
    },
  );
  let roots: Promise<string[]> | undefined;
  const clientRoots = () => {
    if (server.getClientCapabilities()?.roots === undefined) return Promise.resolve([]);
    roots ??= server
      .listRoots(undefined, { timeout: 5000 })
      .then((answer) => answer.roots.map((root) => root.uri))
      .catch(() => {
        roots = undefined;
        return [];
      });
    return roots;
  };
  let made: Promise<ServerDeps> | undefined;
  const dependencies = () =>
    (made ??= session.runtime().then((runtime) => runtime.depsFactory({ server, clientRoots, scope })));
  const listed = typeof __GENERATION_MCP_TOOLS__ === "object" ? __GENERATION_MCP_TOOLS__ : describeTools();
  const byName = new Map(TOOLS.map((tool) => [tool.name, tool]));

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: listed }));
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: listViewerResources(session.mediaOrigin),
  }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({ resourceTemplates: [] }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const uri = request.params.uri;
    let contents;
    try {
      contents = readViewerResource(uri, session.mediaOrigin);
    } catch (error) {
      throw new McpError(ErrorCode.InternalError, error instanceof Error ? error.message : String(error));
    }
    // -32002 is the code the MCP specification gives to an unknown resource.
    if (contents === undefined) throw new McpError(-32002, `Resource not found: ${cleanText(uri, 200)}`);
    return contents;
  });
  const callTool = async (
    name: string,
    args: unknown,
    extra: RequestExtra,
    task: { ttl?: number | null | undefined } | undefined,
  ): Promise<CallToolResult | CreateTaskResult> => {
    const call = accept(name, args);
    if (task !== undefined && (!withTasks || ("tool" in call && call.tool.task === undefined))) {
      throw new McpError(
        ErrorCode.MethodNotFound,
        `${cleanText(name, 80)} does not run as a task: call it without "task".`,
      );
    }
    if ("refused" in call) {
      // Refused before anything was sent: a task-augmented call gets a task that failed at once, kept only
      // in memory (mcp-tasks.ts RefusedTasks), never a runtime, a file or a shared record.
      return task === undefined ? call.refused : { task: REFUSED_TASKS.add(session.caller.id, call.refused) };
    }
    let deps: ServerDeps;
    try {
      deps = await dependencies();
    } catch (error) {
      // The service refused the caller's key (or could not be asked): nothing was kept for this caller.
      made = undefined;
      if (task === undefined) return errorResult(error, undefined, session.advice);
      throw new McpError(ErrorCode.InvalidRequest, renderAdvice(describeError(error), session.advice));
    }
    if (task !== undefined) {
      const startedAt = Date.now();
      return (await session.runtime()).tasks.start({
        tool: name,
        scope,
        requestedTtl: task.ttl,
        stopping: deps.stopping,
        saved: call.tool.task?.save?.(call.data),
        run: (run) =>
          toolResult(
            call.tool,
            call.tool.handler(
              call.tool.task?.prepare?.(call.data, run.ttlMs) ?? call.data,
              deps,
              backgroundContext(run, deps, startedAt),
            ),
            deps,
            run.signal,
          ),
      });
    }
    const progressToken = extra._meta?.progressToken;
    let progress = 0;
    const context: ToolContext = {
      signal: AbortSignal.any([extra.signal, deps.stopping]),
      startedAt: Date.now(),
      logger: deps.logger,
      progress: async (message) => {
        if (progressToken === undefined || extra.signal.aborted) return;
        progress += 1;
        try {
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken, progress, message: deps.redactor.text(message) },
          });
        } catch (error) {
          deps.logger.debug("progress notification not delivered", { error: String(error) });
        }
      },
    };
    return toolResult(call.tool, call.tool.handler(call.data, deps, context), deps, extra.signal);
  };

  /** The tool and its checked arguments, or the validation_error a call answers before sending anything. */
  const accept = (
    name: string,
    args: unknown,
  ): { tool: ToolDefinition; data: unknown } | { refused: CallToolResult } => {
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
    const parsed = tool.input.safeParse(withoutClientAdditions(args ?? {}));
    if (!parsed.success) {
      return { refused: errorResult(new ValidationError(validationMessage(tool.name, parsed.error))) };
    }
    return { tool, data: parsed.data };
  };

  // tools/call is answered by the fallback handler rather than setRequestHandler: the SDK checks the request
  // shape first there and answers a JSON-RPC error (e.g. for `arguments` that is not an object), where the
  // contract wants a validation_error tool result.
  server.fallbackRequestHandler = async (request, extra): Promise<CallToolResult | CreateTaskResult> => {
    if (request.method !== "tools/call") {
      throw new McpError(ErrorCode.MethodNotFound, `Method not found: ${cleanText(request.method, 80)}`);
    }
    const params: Record<string, unknown> = isObject(request.params) ? request.params : {};
    const name = typeof params["name"] === "string" ? params["name"] : "";
    return callTool(name, params["arguments"], extra, taskParams(params["task"]));
  };

  server.setNotificationHandler(RootsListChangedNotificationSchema, async () => {
    roots = undefined;
  });

  if (options.mcpLogging !== undefined) attachMcpLogging(server, options.mcpLogging, SERVER_NAME);
  return server;
}

/**
 * Arguments some clients add to every tool on their own (Gemini CLI: `wait_for_previous`): accepted and
 * ignored. Any other unknown argument is still refused by name (a typo like `duraton` must be caught).
 */
const CLIENT_ADDED_ARGUMENTS = ["wait_for_previous"];

function withoutClientAdditions(args: unknown): unknown {
  if (!isObject(args) || !CLIENT_ADDED_ARGUMENTS.some((name) => name in args)) return args;
  const kept = { ...args };
  for (const name of CLIENT_ADDED_ARGUMENTS) delete kept[name];
  return kept;
}

/**
 * The `task` of a task-augmented call, checked: a malformed one is refused, never quietly turned into a
 * blocking call the client did not ask for.
 */
function taskParams(task: unknown): { ttl?: number | null } | undefined {
  if (task === undefined) return undefined;
  const ttl = isObject(task) ? task["ttl"] : undefined;
  if (
    !isObject(task) ||
    (ttl !== undefined && ttl !== null && (typeof ttl !== "number" || !Number.isFinite(ttl)))
  ) {
    throw new McpError(
      ErrorCode.InvalidParams,
      'Invalid params: "task" must be an object whose optional "ttl" is a number of milliseconds.',
    );
  }
  return ttl === undefined ? {} : { ttl };
}

/** Refused task-augmented calls, per caller, for the whole process (bounded; see RefusedTasks). */
const REFUSED_TASKS = new RefusedTasks();

/**
 * A TaskStore whose records live in the caller's runtime, made only when a task request needs it; the
 * caller's refused calls are answered from memory without one.
 */
function lazyTaskStore(caller: string, store: () => Promise<TaskStore>): TaskStore {
  return {
    createTask: async (...args) => (await store()).createTask(...args),
    getTask: async (taskId, ...rest) =>
      REFUSED_TASKS.find(caller, taskId)?.task ?? (await store()).getTask(taskId, ...rest),
    storeTaskResult: async (...args) => (await store()).storeTaskResult(...args),
    getTaskResult: async (taskId, ...rest) =>
      REFUSED_TASKS.find(caller, taskId)?.result ?? (await store()).getTaskResult(taskId, ...rest),
    updateTaskStatus: async (taskId, status, ...rest) => {
      if (REFUSED_TASKS.find(caller, taskId) !== undefined) {
        throw new McpError(ErrorCode.InvalidParams, "Cannot cancel this task: it already failed.");
      }
      return (await store()).updateTaskStatus(taskId, status, ...rest);
    },
    listTasks: async (...args) => (await store()).listTasks(...args),
  };
}

function mediaSettings(deps: ServerDeps): MediaSettings {
  const { previews, previewMaxSide, resourceLinks } = deps.config;
  return { previews, previewMaxSide, resourceLinks, allowHosts: deps.mediaAllowHosts };
}

/**
 * A tool's run as the CallToolResult the client gets: the output checked against the tool's schema, its
 * text mirror, secrets masked, then its media items (previews, links: media/content.ts); every failure an
 * `isError` result. `cancelled` is the caller's own signal: an abort from it is a cancellation, one from
 * `deps.stopping` alone a shutdown.
 */
export async function toolResult(
  tool: ToolDefinition,
  running: Promise<unknown>,
  deps: ServerDeps,
  cancelled: AbortSignal,
): Promise<CallToolResult> {
  deps.track?.(running);
  try {
    const returned = await running;
    const result = tool.output.parse(returned) as Record<string, unknown>;
    const answer: CallToolResult = {
      content: [{ type: "text", text: deps.redactor.text(tool.summarize(result)) }],
      structuredContent: deps.redactor.value(result),
    };
    return await withMedia(
      answer,
      returned,
      mediaSettings(deps),
      AbortSignal.any([cancelled, deps.stopping]),
    );
  } catch (error) {
    if (error instanceof AbortedError && deps.stopping.aborted && !cancelled.aborted) {
      return errorResult(new StoppingError(), deps.redactor, deps.advice);
    }
    if (!(error instanceof Error && "code" in error) && !(error instanceof AbortedError)) {
      deps.logger.error(`${tool.name} failed unexpectedly`, {
        error: String(error instanceof Error ? error.stack : error),
      });
    }
    return errorResult(error, deps.redactor, deps.advice);
  }
}

/** The context of a tool run in the background (an MCP task): its progress becomes the task's status. */
export function backgroundContext(
  run: { signal: AbortSignal; progress(message: string): void },
  deps: Pick<ServerDeps, "logger" | "redactor">,
  startedAt = Date.now(),
): ToolContext {
  return {
    signal: run.signal,
    startedAt,
    logger: deps.logger,
    progress: async (message) => run.progress(deps.redactor.text(message)),
  };
}
