/**
 * MCP over Streamable HTTP, one request at a time, in the era the request speaks (the body decides, as the
 * spec says: a request whose `_meta` carries a protocol version is 2026-07-28; so does a request whose
 * `MCP-Protocol-Version` header names 2026-07-28, which the 2026 path then refuses for its missing
 * envelope; the SDK's own classifier routes, so this entry and the SDK's never disagree). The transport
 * (transports/http.ts) has already checked the Host, the Origin, the caller and the body; here the SDK's
 * own entries serve the wire:
 * - 2026-07-28: `createMcpHandler` (the SDK v2 entry): `server/discover`, header and envelope validation,
 *   `resultType` and cache fields, progress and logs on the request's own stream (SSE when there are any).
 *   One plain request (the usual call) gets the same answer written directly (modern-exchange.ts).
 * - 2025 revisions: a fresh stateless server per request on the SDK's Node transport, answering JSON for a
 *   quick call and SSE for a call that asked for progress (as before: a plain curl reads the JSON). One
 *   plain request (the usual call) gets the same JSON answer written directly (JsonExchange).
 * The two direct paths skip the SDK's conversions between Node's request and response and the web's, which
 * were most of what HTTP added to a call; test/http/wire-paths.test.ts holds them to the SDK's wire.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { NodeStreamableHTTPServerTransport, toNodeHandler } from "@modelcontextprotocol/node";
import {
  PROTOCOL_VERSION_META_KEY,
  RELATED_TASK_META_KEY,
  classifyInboundRequest,
  createMcpHandler,
  isJsonContentType,
  type AuthInfo,
  type JSONRPCMessage,
  type Server,
  type Transport,
} from "@modelcontextprotocol/server";
import type { Logger } from "../logger.js";
import { cleanText } from "../redact.js";
import {
  DEFAULT_LEGACY_REVISION,
  LEGACY_REVISIONS,
  MODERN,
  MODERN_METHODS,
  negotiatedLegacy,
  type Revision,
} from "./revisions.js";
import { plainModernRequest, serveModernExchange } from "./modern-exchange.js";
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

export interface McpHttpOptions {
  version: string;
  logger: Logger;
  /**
   * False serves every request through the SDK's own entries, the plain ones too (the wire test compares
   * the two). Default true.
   */
  direct?: boolean;
}

export function createMcpHttp(options: McpHttpOptions): McpHttp {
  const direct = options.direct ?? true;
  const modernServer = (session: Session) =>
    createMcpServer({ version: options.version, session, revision: MODERN, logger: options.logger });
  const modern = toNodeHandler(
    createMcpHandler(
      ({ authInfo }) => {
        const session = (authInfo as SessionAuth | undefined)?.extra.session;
        if (session === undefined) throw new Error("no session for a 2026-07-28 request");
        return modernServer(session);
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
      // The usual 2025 call is legacy by its shape (see isPlainCall): the classifier need not say so.
      if (direct && isPlainCall(req, message)) return serveLegacy(req, res, message, session, options, true);
      const route = classifyInboundRequest({
        httpMethod: "POST",
        ...headerField("protocolVersionHeader", req.headers["mcp-protocol-version"]),
        ...headerField("mcpMethodHeader", req.headers["mcp-method"]),
        ...headerField("mcpNameHeader", req.headers["mcp-name"]),
        body: message,
      });
      // Not legacy: served by the 2026-07-28 path, which also owns its refusals (a missing or malformed
      // envelope is -32602 there, with the request's id, never the legacy "unsupported version").
      if (route.kind !== "legacy") {
        if (route.kind === "modern" && route.messageKind === "request") {
          if (!MODERN_METHODS.has(route.message.method)) return unknownMethod(res, message);
        }
        const auth: SessionAuth = { token: "", clientId: session.caller.id, scopes: [], extra: { session } };
        const plain = direct ? plainModernRequest(req, route) : undefined;
        if (plain !== undefined) {
          const server = modernServer(session);
          await serveModernExchange({ res, request: plain, server, authInfo: auth, logger: options.logger });
        } else {
          Object.assign(req, { auth });
          await modern(req as unknown as Parameters<typeof modern>[0], res, message);
        }
        return { close: async () => undefined };
      }
      return serveLegacy(req, res, message, session, options, false);
    },
  };
}

async function serveLegacy(
  req: IncomingMessage,
  res: ServerResponse,
  message: unknown,
  session: Session,
  options: McpHttpOptions,
  plain: boolean,
): Promise<Served> {
  const { version, logger } = options;
  const revision = legacyRevision(req, message);
  const server: Server = createMcpServer({ version, logger, session, revision });
  if (plain && isPlainCall(req, message)) {
    const exchange = new JsonExchange(res, message.id);
    await server.connect(exchange);
    exchange.deliver(message);
    return { close: () => server.close() };
  }
  // No session id generator: stateless, any replica answers any request.
  const transport = new NodeStreamableHTTPServerTransport({
    // JSON for a quick answer; an SSE stream when the client asked for progress on its call.
    enableJsonResponse: !asksForProgress(message),
  });
  await server.connect(transport);
  void transport.handleRequest(req, res, message).catch(() => undefined);
  return { close: () => server.close() };
}

/** A JSON-RPC request as the SDK's transport accepts it (its JSONRPCRequestSchema), `params` checked apart. */
interface PlainRequest {
  jsonrpc: "2.0";
  id: string | number;
  method: string;
  params?: Record<string, unknown>;
}

const REQUEST_KEYS = new Set(["jsonrpc", "id", "method", "params"]);

/**
 * Whether a POST is one plain 2025-era request that the SDK's Node transport would answer with one JSON
 * body and nothing else: not a batch, a notification or `initialize`; no progress asked (that is an SSE
 * stream); Accept, Content-Type and MCP-Protocol-Version as that transport accepts them; the message in the
 * shape its schema accepts, exactly (only a subset: anything else takes the SDK's own path, which answers
 * it as before). Such a request is served by JsonExchange, which writes the same answer without the SDK's
 * web Request/Response round trip. Without the envelope's protocol version (the 2026-07-28 claim) and with
 * a 2025 revision in its header, or none, the SDK's classifier routes such a request as 2025-era traffic.
 */
function isPlainCall(req: IncomingMessage, message: unknown): message is PlainRequest {
  if (!isPlainObject(message)) return false;
  const { jsonrpc, id, method, params } = message;
  if (jsonrpc !== "2.0" || typeof method !== "string" || method === "initialize") return false;
  if (typeof id !== "string" && !Number.isSafeInteger(id)) return false;
  for (const key of Object.keys(message)) if (!REQUEST_KEYS.has(key)) return false;
  if (params !== undefined) {
    if (!isPlainObject(params)) return false;
    const meta = params["_meta"];
    if (meta !== undefined) {
      if (!isPlainObject(meta) || meta["progressToken"] !== undefined) return false;
      if (PROTOCOL_VERSION_META_KEY in meta) return false;
      if (meta[RELATED_TASK_META_KEY] !== undefined) return false;
    }
  }
  const accept = req.headers.accept;
  if (!accept?.includes("application/json") || !accept.includes("text/event-stream")) return false;
  if (!isJsonContentType(req.headers["content-type"])) return false;
  const version = req.headers["mcp-protocol-version"];
  if (version === undefined) return true;
  return typeof version === "string" && (LEGACY_REVISIONS as readonly string[]).includes(version);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * One request's exchange with a fresh server, answered as the SDK's Node transport answers it in JSON mode
 * (the wire is the same: status 200, `content-type: application/json`, the response as its body, with a
 * content length): the response to the request is the body; anything else the server sends meanwhile
 * (progress or log notifications, requests to the client) is dropped, as that transport drops it when it
 * answers with JSON. Closing it (the client went away, or cancelled) aborts the call, as closing the server
 * always did.
 */
class JsonExchange implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport["onmessage"];
  private answered = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly id: string | number,
  ) {}

  async start(): Promise<void> {}

  deliver(message: PlainRequest): void {
    this.onmessage?.(message as JSONRPCMessage, {});
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.answered || !("id" in message) || message.id !== this.id) return;
    if (!("result" in message) && !("error" in message)) return;
    this.answered = true;
    const { res } = this;
    if (res.headersSent || res.writableEnded || res.destroyed) return;
    const body = JSON.stringify(message);
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    res.end(body);
  }

  async close(): Promise<void> {
    this.onclose?.();
  }
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

/** One standard header for the SDK's classifier: present only when the request sent it once. */
function headerField<K extends string>(key: K, value: string | string[] | undefined): { [P in K]?: string } {
  return typeof value === "string" ? ({ [key]: value } as { [P in K]?: string }) : {};
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
