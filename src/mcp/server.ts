/**
 * The MCP server for one connection (stdio) or one request (HTTP), in the era that connection or request
 * speaks: 2026-07-28 (`server/discover`, stateless, tasks through the extension) or a 2025 revision
 * (`initialize`, tasks as the 2025-11-25 capability). No I/O at import; cheap to make (the SDK's entries may
 * make one per probe). The low-level SDK server is used so that every argument check answers with our
 * `validation_error` text, so that no failure can escape as a crash, and so that task answers are written
 * exactly as each era's wire form says (wire-2025.ts, wire-2026.ts).
 *
 * What differs between revisions is decided here and nowhere else: the `tasks` capability and each tool's
 * `execution` only for 2025-11-25, and the tasks extension only for 2026-07-28. (An unknown resource is
 * -32602 with its uri in every revision: the SDK answers 2026-07-28's code for the older ones too.)
 */
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
  SUPPORTED_PROTOCOL_VERSIONS,
  Server,
  type ClientCapabilities,
  type Implementation,
  type ServerCapabilities,
  type ServerContext,
  type Tool,
} from "@modelcontextprotocol/server";
import { isObject } from "../api/shapes.js";
import type { Logger } from "../logger.js";
import { cleanText } from "../redact.js";
import type { ServerDeps } from "../tools/define-tool.js";
import { listViewerResources, readViewerResource } from "../ui/viewer.js";
import { attachSessionLogging } from "./logging.js";
import { MODERN_REVISION, offersLegacyTasks, TASKS_EXTENSION, type Revision } from "./revisions.js";
import type { Session } from "./session.js";
import type * as ToolsCallModule from "./tools-call.js";
import type { CallerTasks } from "./tasks/access.js";
import { registerTasks2025 } from "./tasks/wire-2025.js";
import { registerTasks2026 } from "./tasks/wire-2026.js";

export const SERVER_NAME = "generation-mcp";

/**
 * The tool list as computed at build time from the tools' zod schemas, inlined by the bundler
 * (scripts/bundle.mjs); unbundled runs compute it (tool-list.ts) on the first `tools/list`.
 */
declare const __GENERATION_MCP_TOOLS__: Tool[] | undefined;

let listed: { withTasks: Tool[]; withoutTasks: Tool[] } | undefined;

/**
 * The tools as `tools/list` answers them, the same list for every client (made once per process, both
 * forms); `withTasks` false leaves out `execution` (2025-11-25 tasks). Neither this nor a server's
 * construction loads the tool definitions (their zod schemas are a good part of the start-up work):
 * `tools/list` answers from the inlined list, and `tools/call` loads them with its module on the first call.
 */
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

/** tools/call and the tools it runs, loaded on the first call. */
let toolsCall: Promise<typeof ToolsCallModule> | undefined;

const INSTRUCTIONS =
  "Generates videos and images through a credit-based service. generate_video waits up to a window " +
  "(about 45 s) and then returns video_id with the current status; the task keeps running, so call " +
  "get_status with wait: true to resume instead of starting it again. Use dry_run: true to see the cost " +
  "in credits first, and get_credits to see the balance.";

/** Lists that never change while the server runs: a client may keep them for an hour, shared by all. */
const STATIC = { ttlMs: 60 * 60 * 1000, cacheScope: "public" as const };

export interface McpServerOptions {
  version: string;
  session: Session;
  /**
   * The revision the requests of this instance speak: fixed for a request over HTTP (its body or header
   * says), a starting point for a 2025 stdio session, where the revision `initialize` negotiates wins.
   */
  revision: Revision;
  /** Whether this instance negotiates its revision with `initialize` (a stdio session) or is told it. */
  negotiates?: boolean;
  /** Where an unexpected failure's details go (the client gets none). */
  logger: Logger;
  /**
   * The log whose lines are relayed as MCP log notifications (a 2025-era stdio session: the runtime's).
   * None over HTTP: a runtime serves every request of its key, and one caller's call must not hear about
   * another's.
   */
  sessionLog?: Logger | undefined;
}

/**
 * Advertises what the negotiated revision has, and nothing of a later one: `initialize` asks once the
 * client's revision is known.
 */
export class GenerationServer extends Server {
  /** What a 2026-07-28 request's envelope says of its client (bindModernRequest). */
  private envelopeClient?: { capabilities: unknown; info: unknown };

  constructor(
    version: string,
    private readonly planned: Revision,
    private readonly negotiates: boolean,
    private readonly logger: Logger,
  ) {
    super(
      { name: SERVER_NAME, title: "Video & image generation", version },
      {
        capabilities: {
          tools: {},
          // Only the MCP Apps viewer (src/ui/viewer.ts): no subscriptions, the list never changes.
          resources: {},
          logging: {},
          ...(planned.era === "modern"
            ? { extensions: { [TASKS_EXTENSION]: {} } }
            : { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } }),
        },
        instructions: INSTRUCTIONS,
        // A 2026-07-28 instance lists its revision among those it speaks from the start, as the SDK's entries
        // add it (which also registers `server/discover`): the same list and handler either way.
        ...(planned.era === "modern" && {
          supportedProtocolVersions: [...SUPPORTED_PROTOCOL_VERSIONS, MODERN_REVISION],
        }),
        cacheHints: {
          "server/discover": STATIC,
          "tools/list": STATIC,
          "resources/list": STATIC,
          "resources/templates/list": STATIC,
          "resources/read": STATIC,
        },
      },
    );
  }

  /**
   * Readies this instance for the one 2026-07-28 request modern-exchange.ts serves on it, as the SDK's HTTP
   * entry (createMcpHandler) readies the instances it makes: bound to that revision, and the client's identity
   * read from the request's envelope (`meta`).
   */
  bindModernRequest(meta: Record<string, unknown>): void {
    this._negotiatedProtocolVersion = MODERN_REVISION;
    this.envelopeClient = {
      capabilities: meta[CLIENT_CAPABILITIES_META_KEY],
      info: meta[CLIENT_INFO_META_KEY],
    };
  }

  override getClientCapabilities(): ClientCapabilities | undefined {
    return (
      (this.envelopeClient?.capabilities as ClientCapabilities | undefined) ?? super.getClientCapabilities()
    );
  }

  override getClientVersion(): Implementation | undefined {
    return (this.envelopeClient?.info as Implementation | undefined) ?? super.getClientVersion();
  }

  /** The revision in use: for a negotiating session the one `initialize` agreed, else the planned one. */
  revision(): Revision {
    const negotiated = this.negotiates ? this.getNegotiatedProtocolVersion() : undefined;
    return negotiated === undefined || this.planned.era === "modern"
      ? this.planned
      : { era: "legacy", version: negotiated };
  }

  /**
   * Every handler's failures, as a client should see them: the SDK's own check of a spec method's params
   * throws a raw schema dump that would go out as -32603; it goes out as a clean -32602 naming the field.
   * Any other unexpected failure is -32603 with no detail (the details go to the log).
   */
  protected override _wrapHandler(
    method: string,
    handler: Parameters<Server["_wrapHandler"]>[1],
  ): ReturnType<Server["_wrapHandler"]> {
    const wrapped = super._wrapHandler(method, handler);
    return async (request, ctx) => {
      try {
        return await wrapped(request, ctx);
      } catch (error) {
        throw this.clientError(method, error);
      }
    };
  }

  clientError(method: string, error: unknown): unknown {
    if (error instanceof ProtocolError || (error instanceof Error && "code" in error)) return error;
    const issues = schemaIssues(error);
    if (issues !== undefined) {
      return new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `Invalid params for ${cleanText(method, 40)}: ${issues}`,
      );
    }
    this.logger.error(`${method} failed unexpectedly`, {
      error: String(error instanceof Error ? error.stack : error),
    });
    return new ProtocolError(ProtocolErrorCode.InternalError, "Internal error.");
  }

  override getCapabilities(): ServerCapabilities {
    const all = super.getCapabilities();
    if (this.planned.era === "modern" || offersLegacyTasks(this.revision())) return all;
    const { tasks: _tasks, ...rest } = all;
    return rest;
  }
}

export function createMcpServer(options: McpServerOptions): GenerationServer {
  const { session } = options;
  const server = new GenerationServer(
    options.version,
    options.revision,
    options.negotiates ?? false,
    options.logger,
  );
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
  const tasks: CallerTasks = {
    callerId: session.caller.id,
    scope,
    store: async () => (await session.runtime()).tasks,
  };

  server.setRequestHandler("tools/list", async () => ({
    tools: await toolList(offersLegacyTasks(server.revision())),
  }));
  server.setRequestHandler("resources/list", async () => ({
    resources: listViewerResources(session.mediaOrigin),
  }));
  server.setRequestHandler("resources/templates/list", async () => ({ resourceTemplates: [] }));
  server.setRequestHandler("resources/read", async (request) => {
    const uri = request.params.uri;
    const contents = readViewerResource(uri, session.mediaOrigin);
    if (contents !== undefined) return contents;
    const shown = cleanText(uri, 200);
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Resource not found: ${shown}`, { uri: shown });
  });

  // tools/call is answered by the fallback handler rather than setRequestHandler: the SDK would check the
  // request shape first there and answer a JSON-RPC error (e.g. for `arguments` that is not an object),
  // where the contract wants a validation_error tool result; and task answers go out in their era's form.
  server.fallbackRequestHandler = async (request, ctx: ServerContext) => {
    if (request.method !== "tools/call") {
      throw new ProtocolError(
        ProtocolErrorCode.MethodNotFound,
        `Method not found: ${cleanText(request.method, 80)}`,
      );
    }
    const params = isObject(request.params) ? request.params : {};
    try {
      const { callTool } = await (toolsCall ??= import("./tools-call.js"));
      const clientCapabilities = () => server.getClientCapabilities();
      return await callTool({ session, revision: server.revision(), deps, clientCapabilities }, params, ctx);
    } catch (error) {
      throw server.clientError(request.method, error);
    }
  };

  if (options.revision.era === "modern") registerTasks2026(server, tasks);
  else registerTasks2025(server, tasks);

  server.setNotificationHandler("notifications/roots/list_changed", async () => {
    roots = undefined;
  });
  if (options.sessionLog !== undefined) attachSessionLogging(server, options.sessionLog, SERVER_NAME);
  return server;
}

/** The issues of a schema check's dump (a JSON array of {path, message}), as one line; else undefined. */
function schemaIssues(error: unknown): string | undefined {
  if (!(error instanceof Error) || !error.message.trimStart().startsWith("[")) return undefined;
  let issues: unknown;
  try {
    issues = JSON.parse(error.message);
  } catch {
    return undefined;
  }
  if (!Array.isArray(issues) || issues.length === 0) return undefined;
  const lines = issues.slice(0, 5).map((issue: { path?: unknown; message?: unknown }) => {
    const path = Array.isArray(issue.path) ? issue.path.map(String).join(".") : "params";
    return `${cleanText(path, 80)}: ${cleanText(issue.message, 120)}`;
  });
  return lines.join("; ");
}
