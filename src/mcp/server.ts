/**
 * The MCP server for one connection (stdio) or one request (HTTP), in the era it speaks. No I/O at import;
 * cheap to make (the SDK's entries may make one per probe). The low-level SDK server, so that every argument
 * check answers with our `validation_error` text; every method has a params schema of ours, so a request that
 * breaks it is a -32602 naming the field (the SDK's own check answers its schema dump as -32603).
 */
import {
  ProtocolError,
  ProtocolErrorCode,
  SUPPORTED_PROTOCOL_VERSIONS,
  Server,
  type ServerCapabilities,
  type Tool,
} from "@modelcontextprotocol/server";
import * as z from "zod";
import { isObject } from "../api/shapes.js";
import type { Logger } from "../logger.js";
import { cleanText } from "../redact.js";
import type { ServerDeps } from "../tools/define-tool.js";
import { listViewerResources, readViewerResource } from "../ui/viewer.js";
import { guarded, handlerOn } from "./handlers.js";
import { LOGGER_NAME, attachSessionLogging } from "./logging.js";
import { getPrompt, listPrompts } from "./prompts.js";
import { MODERN, offersLegacyTasks, TASKS_EXTENSION, type Revision } from "./revisions.js";
import type { Session } from "./session.js";
import type * as ToolsCallModule from "./tools-call.js";
import { registerTasks } from "./tasks/wire.js";

/** The tool list computed at build time, inlined by scripts/bundle.mjs; unbundled runs use tool-list.ts. */
declare const __GENERATION_MCP_TOOLS__: Tool[] | undefined;

let listed: { withTasks: Tool[]; withoutTasks: Tool[] } | undefined;

/** `withTasks` false leaves out `execution`. The zod definitions (slow to load) come with the first call. */
async function toolList(withTasks: boolean): Promise<Tool[]> {
  if (listed === undefined) {
    const tools =
      typeof __GENERATION_MCP_TOOLS__ === "object"
        ? __GENERATION_MCP_TOOLS__
        : (await import("./tool-list.js")).describeTools();
    listed = { withTasks: tools, withoutTasks: tools.map(({ execution: _execution, ...tool }) => tool) };
  }
  return withTasks ? listed.withTasks : listed.withoutTasks;
}

let toolsCall: Promise<typeof ToolsCallModule> | undefined;

const INSTRUCTIONS =
  "Generates videos and images through a credit-based service. generate_video waits up to a window " +
  "(about 45 s) and then returns video_id with the current status; the task keeps running, so call " +
  "get_status with wait: true to resume instead of starting it again. Use dry_run: true to see the cost " +
  "in credits first, and get_credits to see the balance.";

/** Lists that never change while the server runs: a client may keep them for an hour, shared by all. */
const STATIC = { ttlMs: 60 * 60 * 1000, cacheScope: "public" as const };

const LIST = { params: z.looseObject({ cursor: z.string().optional() }) };
const READ = { params: z.looseObject({ uri: z.string() }) };
const PROMPT = {
  params: z.looseObject({ name: z.string(), arguments: z.record(z.string(), z.string()).optional() }),
};

export interface McpServerOptions {
  version: string;
  session: Session;
  /** Fixed for an HTTP request; for a 2025 stdio session (`negotiates`), what `initialize` agrees wins. */
  revision: Revision;
  negotiates?: boolean;
  logger: Logger;
  /** Relayed as MCP log notifications (a 2025 stdio session: logging.ts). */
  sessionLog?: Logger | undefined;
}

/** Advertises what the revision in use has, and nothing of a later one (`initialize` asks once it is known). */
class GenerationServer extends Server {
  constructor(
    version: string,
    private readonly planned: Revision,
    private readonly negotiates: boolean,
  ) {
    super(
      { name: LOGGER_NAME, title: "Video & image generation", version },
      {
        capabilities: {
          tools: {},
          resources: {},
          prompts: {},
          logging: {},
          ...(planned.era === "modern"
            ? { extensions: { [TASKS_EXTENSION]: {} } }
            : { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } }),
        },
        instructions: INSTRUCTIONS,
        // As the SDK's entries would add it (which also registers `server/discover`).
        ...(planned.era === "modern" && {
          supportedProtocolVersions: [...SUPPORTED_PROTOCOL_VERSIONS, MODERN.version],
        }),
        cacheHints: {
          "server/discover": STATIC,
          "tools/list": STATIC,
          "prompts/list": STATIC,
          "resources/list": STATIC,
          "resources/templates/list": STATIC,
          "resources/read": STATIC,
        },
      },
    );
  }

  revision(): Revision {
    const negotiated = this.negotiates ? this.getNegotiatedProtocolVersion() : undefined;
    return negotiated === undefined || this.planned.era === "modern"
      ? this.planned
      : { era: "legacy", version: negotiated };
  }

  override getCapabilities(): ServerCapabilities {
    const all = super.getCapabilities();
    if (this.planned.era === "modern" || offersLegacyTasks(this.revision())) return all;
    const { tasks: _tasks, ...rest } = all;
    return rest;
  }
}

export function createMcpServer(options: McpServerOptions): Server {
  const { session, logger } = options;
  const server = new GenerationServer(options.version, options.revision, options.negotiates ?? false);
  const scope = session.caller.scope;

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
  const deps = () => {
    made ??= session
      .runtime()
      .then((runtime) => runtime.depsFactory({ clientRoots, scope, callerId: session.caller.id }));
    // A refusal is not kept: the next call asks again (the pool remembers a key the service refused).
    made.catch(() => (made = undefined));
    return made;
  };

  const handle = handlerOn(server, logger);
  handle("tools/list", LIST, async () => ({ tools: await toolList(offersLegacyTasks(server.revision())) }));
  handle("resources/list", LIST, async () => ({ resources: listViewerResources(session.mediaOrigin) }));
  server.setRequestHandler("resources/templates/list", LIST, async () => ({ resourceTemplates: [] }));
  handle("prompts/list", LIST, async () => listPrompts());
  handle("prompts/get", PROMPT, async (params) => getPrompt(params.name, params.arguments));
  handle("resources/read", READ, async ({ uri }) => {
    const contents = readViewerResource(uri, session.mediaOrigin);
    if (contents !== undefined) return contents;
    const shown = cleanText(uri, 200);
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Resource not found: ${shown}`, { uri: shown });
  });

  // The fallback handler, as setRequestHandler would answer a malformed call (`arguments` not an object)
  // with a JSON-RPC error where the contract wants a validation_error result.
  server.fallbackRequestHandler = guarded("tools/call", logger, async (request, ctx) => {
    if (request.method !== "tools/call") {
      const shown = cleanText(request.method, 80);
      throw new ProtocolError(ProtocolErrorCode.MethodNotFound, `Method not found: ${shown}`);
    }
    const module = await (toolsCall ??= import("./tools-call.js"));
    const edge = {
      session,
      revision: server.revision(),
      deps,
      clientCapabilities: server.getClientCapabilities(),
    };
    return module.callTool(edge, isObject(request.params) ? request.params : {}, ctx);
  });

  registerTasks(options.revision, handle, session);

  server.setNotificationHandler("notifications/roots/list_changed", async () => {
    roots = undefined;
  });
  if (options.revision.era !== "modern") attachSessionLogging(server, options.sessionLog);
  return server;
}
