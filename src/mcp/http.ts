/**
 * MCP over Streamable HTTP, one request at a time, in the era the request speaks (the body decides, as the
 * spec says: a request whose `_meta` carries a protocol version is 2026-07-28). The transport
 * (transports/http.ts) has already checked the Host, the Origin, the caller and the body; here the SDK's
 * own entries serve the wire:
 * - 2026-07-28: `createMcpHandler` (the SDK v2 entry): `server/discover`, header and envelope validation,
 *   `resultType` and cache fields, progress and logs on the request's own stream (SSE when there are any).
 * - 2025 revisions: a fresh stateless server per request on the SDK's Node transport, answering JSON for a
 *   quick call and SSE for a call that asked for progress (as before: a plain curl reads the JSON).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { NodeStreamableHTTPServerTransport, toNodeHandler } from "@modelcontextprotocol/node";
import { createMcpHandler, type AuthInfo, type Server } from "@modelcontextprotocol/server";
import type { Logger } from "../logger.js";
import { cleanText } from "../redact.js";
import {
  DEFAULT_LEGACY_REVISION,
  MODERN,
  MODERN_METHODS,
  claimsModern,
  negotiatedLegacy,
  type Revision,
} from "./revisions.js";
import { createMcpServer } from "./server.js";
import type { Session } from "./session.js";

export interface McpHttp {
  /**
   * Serves one parsed JSON-RPC message (or a 2025-03-26 batch) for `session`. Resolves once the answer is
   * handed over; `closed` aborts a legacy request's calls (its client went away, or cancelled it).
   */
  serve(req: IncomingMessage, res: ServerResponse, message: unknown, session: Session): Promise<Served>;
}

export interface Served {
  /** Stops what still runs for this request (its calls are cancelled; their tasks go on). */
  close(): Promise<void>;
}

/** Carries the request's session through the SDK entry to the factory. */
interface SessionAuth extends AuthInfo {
  extra: { session: Session };
}

export function createMcpHttp(options: { version: string; logger: Logger }): McpHttp {
  const modern = toNodeHandler(
    createMcpHandler(
      ({ authInfo }) => {
        const session = (authInfo as SessionAuth | undefined)?.extra.session;
        if (session === undefined) throw new Error("no session for a 2026-07-28 request");
        return createMcpServer({
          version: options.version,
          session,
          revision: MODERN,
          logger: options.logger,
        });
      },
      {
        legacy: "reject",
        responseMode: "auto",
        onerror: (error) => options.logger.error("MCP request failed", { error: String(error) }),
      },
    ),
  );
  return {
    async serve(req, res, message, session) {
      if (!Array.isArray(message) && claimsModern(message)) {
        const method = (message as { method?: unknown; id?: unknown }).method;
        if ((message as { id?: unknown }).id !== undefined && !MODERN_METHODS.has(String(method))) {
          return unknownMethod(res, message);
        }
        const auth: SessionAuth = { token: "", clientId: session.caller.id, scopes: [], extra: { session } };
        Object.assign(req, { auth });
        await modern(req as unknown as Parameters<typeof modern>[0], res, message);
        return { close: async () => undefined };
      }
      return serveLegacy(req, res, message, session, options);
    },
  };
}

async function serveLegacy(
  req: IncomingMessage,
  res: ServerResponse,
  message: unknown,
  session: Session,
  options: { version: string; logger: Logger },
): Promise<Served> {
  const server: Server = createMcpServer({ ...options, session, revision: legacyRevision(req, message) });
  // No session id generator: stateless, any replica answers any request.
  const transport = new NodeStreamableHTTPServerTransport({
    // JSON for a quick answer; an SSE stream when the client asked for progress on its call.
    enableJsonResponse: !asksForProgress(message),
  });
  await server.connect(transport);
  void transport.handleRequest(req, res, message).catch(() => undefined);
  return { close: () => server.close() };
}

/** 2026-07-28: a method this server does not serve is HTTP 404 with -32601. */
function unknownMethod(res: ServerResponse, message: unknown): Served {
  const { id, method } = message as { id?: unknown; method?: unknown };
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: typeof id === "string" || typeof id === "number" ? id : null,
    error: { code: -32601, message: `Method not found: ${cleanText(method, 80)}` },
  });
  res.writeHead(404, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
  return { close: async () => undefined };
}

/** The revision of a 2025-era request: `initialize` names it, every later request in its header. */
function legacyRevision(req: IncomingMessage, message: unknown): Revision {
  const initialize = messagesOf(message).find((entry) => entry.method === "initialize");
  if (initialize !== undefined) {
    return {
      era: "legacy",
      version: negotiatedLegacy((initialize.params as { protocolVersion?: unknown })?.protocolVersion),
    };
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
