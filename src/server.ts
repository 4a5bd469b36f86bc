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
  isTaskAugmentedRequestParams,
  type CallToolResult,
  type CreateTaskResult,
  type ServerNotification,
  type ServerRequest,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import * as z from "zod";
import { AbortedError, ValidationError } from "./api/errors.js";
import { isObject } from "./api/normalize.js";
import { attachMcpLogging } from "./mcp-logging.js";
import type { Logger } from "./logger.js";
import type { McpTasks } from "./mcp-tasks.js";
import { withMedia, type MediaSettings } from "./media/content.js";
import { cleanText, redact, redactValue } from "./redact.js";
import type { ServerDeps, ToolContext, ToolDefinition } from "./tools/define-tool.js";
import { StoppingError, errorResult, validationMessage } from "./tools/format.js";
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

export interface ServerOptions {
  /**
   * Relay the runtime's log lines as MCP log notifications (default true). Off over HTTP: a runtime serves
   * every request of its key, and one caller's call must not hear about another's.
   */
  mcpLogging?: boolean;
  /** Passed to the deps factory (ServerHooks.scope). */
  scope?: string | undefined;
  /**
   * The runtime's MCP task records: with them the server declares the tasks capability and runs
   * task-augmented calls of the tools that allow it (generate_video, generate_image) in the background.
   */
  tasks?: McpTasks | undefined;
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

export function createServer(
  version: string,
  makeDeps: ServerDepsFactory,
  options: ServerOptions = {},
): Server {
  const tasks = options.tasks;
  const server = new Server(
    { name: SERVER_NAME, title: "Video & image generation", version },
    {
      capabilities: {
        tools: {},
        // Only the MCP Apps viewer (src/ui/viewer.ts): no subscriptions, the list never changes.
        resources: {},
        logging: {},
        ...(tasks !== undefined && { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } }),
      },
      instructions: INSTRUCTIONS,
      ...(tasks !== undefined && { taskStore: tasks.view(options.scope) }),
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
  const deps = makeDeps({ server, clientRoots, scope: options.scope });
  const listed = typeof __GENERATION_MCP_TOOLS__ === "object" ? __GENERATION_MCP_TOOLS__ : describeTools();
  const byName = new Map(TOOLS.map((tool) => [tool.name, tool]));

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: listed }));
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: listViewerResources(deps.mediaOrigin),
  }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({ resourceTemplates: [] }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const uri = request.params.uri;
    let contents;
    try {
      contents = readViewerResource(uri, deps.mediaOrigin);
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
    if (task !== undefined) {
      if (tasks === undefined || ("tool" in call && call.tool.task === undefined)) {
        throw new McpError(
          ErrorCode.MethodNotFound,
          `${cleanText(name, 80)} does not run as a task: call it without "task".`,
        );
      }
      const startedAt = Date.now();
      return tasks.start({
        tool: name,
        scope: options.scope,
        requestedTtl: task.ttl,
        stopping: deps.stopping,
        saved: "tool" in call ? call.tool.task?.save?.(call.data) : undefined,
        // A refused call becomes a task that failed at once, with the same error a plain call answers.
        run: (run) =>
          "refused" in call
            ? Promise.resolve(call.refused)
            : toolResult(
                call.tool,
                call.tool.handler(
                  call.tool.task?.prepare?.(call.data, run.ttlMs) ?? call.data,
                  deps,
                  backgroundContext(run, deps.logger, startedAt),
                ),
                deps,
                run.signal,
              ),
      });
    }
    if ("refused" in call) return call.refused;
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
            params: { progressToken, progress, message: redact(message) },
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
    const parsed = tool.input.safeParse(args ?? {});
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
    const task = isTaskAugmentedRequestParams(request.params) ? request.params.task : undefined;
    return callTool(name, params["arguments"], extra, task);
  };

  server.setNotificationHandler(RootsListChangedNotificationSchema, async () => {
    roots = undefined;
  });

  if (options.mcpLogging !== false) attachMcpLogging(server, deps.logger, SERVER_NAME);
  return server;
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
      content: [{ type: "text", text: redact(tool.summarize(result)) }],
      structuredContent: redactValue(result),
    };
    return await withMedia(
      answer,
      returned,
      mediaSettings(deps),
      AbortSignal.any([cancelled, deps.stopping]),
    );
  } catch (error) {
    if (error instanceof AbortedError && deps.stopping.aborted && !cancelled.aborted) {
      return errorResult(new StoppingError());
    }
    if (!(error instanceof Error && "code" in error) && !(error instanceof AbortedError)) {
      deps.logger.error(`${tool.name} failed unexpectedly`, {
        error: String(error instanceof Error ? error.stack : error),
      });
    }
    return errorResult(error);
  }
}

/** The context of a tool run in the background (an MCP task): its progress becomes the task's status. */
export function backgroundContext(
  run: { signal: AbortSignal; progress(message: string): void },
  logger: Logger,
  startedAt = Date.now(),
): ToolContext {
  return {
    signal: run.signal,
    startedAt,
    logger,
    progress: async (message) => run.progress(redact(message)),
  };
}
