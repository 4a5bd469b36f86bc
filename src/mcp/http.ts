/**
 * MCP over Streamable HTTP, one checked request at a time, in the era the SDK's own classifier finds (so this
 * entry and the SDK's never disagree), on the SDK's entries: `createMcpHandler` for 2026-07-28; for the 2025
 * revisions a fresh stateless server per request on its Node transport, answering JSON for a quick call
 * (a plain curl reads it) and SSE for a call that asked for progress.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { NodeStreamableHTTPServerTransport, toNodeHandler } from "@modelcontextprotocol/node";
import { classifyInboundRequest, createMcpHandler, type AuthInfo } from "@modelcontextprotocol/server";
import type { Logger } from "../logger.js";
import { cleanText } from "../redact.js";
import {
  DEFAULT_LEGACY_REVISION,
  MODERN,
  MODERN_METHODS,
  negotiatedLegacy,
  type Revision,
} from "./revisions.js";
import { createMcpServer } from "./server.js";
import type { Session } from "./session.js";

export interface Served {
  /** Stops what still runs for this request (its calls are cancelled; their tasks go on). */
  close(): Promise<void>;
}

/** The standard headers the SDK's classifier compares with the body, when sent once. */
const HEADER_FIELDS = [
  ["protocolVersionHeader", "mcp-protocol-version"],
  ["mcpMethodHeader", "mcp-method"],
  ["mcpNameHeader", "mcp-name"],
] as const;

const NOTHING_TO_CLOSE: Served = { close: async () => undefined };

export function createMcpHttp(options: { version: string; logger: Logger }) {
  const { version, logger } = options;
  const modern = toNodeHandler(
    createMcpHandler(
      ({ authInfo }) => {
        // The request's session rides the SDK's pass-through `authInfo` to the factory.
        const session = authInfo?.extra?.["session"] as Session | undefined;
        if (session === undefined) throw new Error("no session for a 2026-07-28 request");
        return createMcpServer({ version, session, revision: MODERN, logger });
      },
      { legacy: "reject", onerror: (error) => logger.error("MCP request failed", { error: String(error) }) },
    ),
  );
  return {
    /** Serves one parsed JSON-RPC message or 2025-03-26 batch; resolves once the answer is handed over. */
    async serve(req: IncomingMessage, res: ServerResponse, message: unknown, session: Session) {
      const headers: Record<string, string> = {};
      for (const [field, name] of HEADER_FIELDS) {
        const value = req.headers[name];
        if (typeof value === "string") headers[field] = value;
      }
      const route = classifyInboundRequest({ httpMethod: "POST", ...headers, body: message });
      if (route.kind === "legacy") {
        const server = createMcpServer({ version, session, revision: legacyRevision(req, message), logger });
        // No session id generator: stateless, any replica answers any request.
        const transport = new NodeStreamableHTTPServerTransport({
          enableJsonResponse: !asksForProgress(message),
        });
        await server.connect(transport);
        void transport.handleRequest(req, res, message).catch(() => undefined);
        return { close: () => server.close() };
      }
      // The 2026-07-28 entry owns its refusals (-32602 with the request's id); a method it lacks is HTTP 404.
      if (
        route.kind === "modern" &&
        route.messageKind === "request" &&
        !MODERN_METHODS.has(route.message.method)
      ) {
        const { id, method } = route.message;
        const error = { code: -32601, message: `Method not found: ${cleanText(method, 80)}` };
        const body = JSON.stringify({ jsonrpc: "2.0", id, error });
        res.writeHead(404, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
        res.end(body);
        return NOTHING_TO_CLOSE;
      }
      const auth: AuthInfo = { token: "", clientId: session.caller.id, scopes: [], extra: { session } };
      // The body was read and parsed already (transports/http.ts): the SDK takes it as parsed.
      const request = {
        method: "POST",
        url: "/mcp",
        headers: req.headers,
        auth,
        async *[Symbol.asyncIterator]() {},
      };
      await modern(request, res, message);
      return NOTHING_TO_CLOSE;
    },
  };
}

/** The revision of a 2025-era request: `initialize` names it, every later request in its header. */
function legacyRevision(req: IncomingMessage, message: unknown): Revision {
  const initialize = messagesOf(message).find((entry) => entry.method === "initialize");
  if (initialize !== undefined) {
    const asked = (initialize.params as { protocolVersion?: unknown } | undefined)?.protocolVersion;
    return { era: "legacy", version: negotiatedLegacy(asked) };
  }
  const header = req.headers["mcp-protocol-version"];
  return { era: "legacy", version: typeof header === "string" ? header.trim() : DEFAULT_LEGACY_REVISION };
}

/** Whether any request in the message asks for progress (then the answer streams as SSE). */
function asksForProgress(message: unknown): boolean {
  return messagesOf(message).some(
    (entry) =>
      (entry.params as { _meta?: { progressToken?: unknown } } | undefined)?._meta?.progressToken !==
      undefined,
  );
}

export function messagesOf(message: unknown): Array<{ method?: unknown; id?: unknown; params?: unknown }> {
  const messages = Array.isArray(message) ? message : [message];
  return messages.filter((entry): entry is object => typeof entry === "object" && entry !== null);
}
