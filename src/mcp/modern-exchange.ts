/**
 * 2026-07-28: one plain request answered as the SDK's entry (`createMcpHandler` behind `toNodeHandler`)
 * answers it, the same status, headers and body, without that entry's web Request/Response round trip
 * (copying the Node request into a `Request`, `Response.json`, reading the body back as a stream): about
 * 0.3 ms of the 1.25 ms this era added to a call went there (`BENCH_ONLY=http node bench/run.mjs`).
 * test/http/wire-paths.test.ts holds the two paths to the same wire.
 *
 * Plain: what that entry would hand straight to the server instance and answer with one JSON body. The
 * SDK's classifier has routed it as a 2026-07-28 request (a valid envelope naming that revision, headers
 * that agree with the body); the standard headers its entry then requires are there (MCP-Protocol-Version,
 * Mcp-Method, and Mcp-Name equal to the body's name, uri or taskId, without a Base64 sentinel); the
 * Content-Type is JSON; it is not `subscriptions/listen`; and it asks for nothing sent while it runs (no
 * progress token, no log level: those answers stream). Anything else takes the SDK's own path.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import {
  LOG_LEVEL_META_KEY,
  ProtocolErrorCode,
  isJsonContentType,
  type AuthInfo,
  type InboundClassificationOutcome,
  type InboundModernRoute,
  type JSONRPCMessage,
  type MessageExtraInfo,
  type Transport,
  type TransportSendOptions,
} from "@modelcontextprotocol/server";
import type { Logger } from "../logger.js";
import { MODERN_REVISION } from "./revisions.js";
import type { GenerationServer } from "./server.js";

/** A request the fast path serves, as the classifier passed it on. */
export interface PlainModernRequest {
  route: InboundModernRoute;
  message: { jsonrpc: "2.0"; id: string | number; method: string; params: Record<string, unknown> };
  meta: Record<string, unknown>;
}

/** The body field the `Mcp-Name` header mirrors, by method (the SDK's MCP_NAME_HEADER_SOURCE). */
const NAME_FIELDS: Readonly<Record<string, string>> = {
  "tools/call": "name",
  "prompts/get": "name",
  "resources/read": "uri",
  "tasks/get": "taskId",
  "tasks/update": "taskId",
  "tasks/cancel": "taskId",
};

/**
 * The HTTP status of an error the dispatch itself answered (before any handler ran), as the SDK's
 * per-request transport gives it (its LADDER_ERROR_HTTP_STATUS); any other error is a 200 answer.
 */
const LADDER_STATUS: Readonly<Record<number, number>> = {
  [ProtocolErrorCode.ParseError]: 400,
  [ProtocolErrorCode.InvalidRequest]: 400,
  [ProtocolErrorCode.MethodNotFound]: 404,
  [ProtocolErrorCode.UnsupportedProtocolVersion]: 400,
  [ProtocolErrorCode.MissingRequiredClientCapability]: 400,
  // HeaderMismatch
  [-32020]: 400,
};

const JSON_HEADERS = { "content-type": "application/json" };

/** The request, when `route` is a plain 2026-07-28 request (see above); else undefined. */
export function plainModernRequest(
  req: IncomingMessage,
  route: InboundClassificationOutcome,
): PlainModernRequest | undefined {
  if (route.kind !== "modern" || route.messageKind !== "request") return undefined;
  if (route.classification.revision !== MODERN_REVISION) return undefined;
  const message = route.message as PlainModernRequest["message"];
  // A modern route's request carries the envelope claim: its params and `_meta` are objects.
  const meta = message.params["_meta"] as Record<string, unknown>;
  if (message.method === "subscriptions/listen") return undefined;
  if (meta["progressToken"] !== undefined || meta[LOG_LEVEL_META_KEY] !== undefined) return undefined;
  if (!isJsonContentType(req.headers["content-type"])) return undefined;
  // The classifier has checked these two against the body when present; the entry requires them.
  if (typeof req.headers["mcp-protocol-version"] !== "string") return undefined;
  if (typeof req.headers["mcp-method"] !== "string") return undefined;
  const field = Object.hasOwn(NAME_FIELDS, message.method) ? NAME_FIELDS[message.method] : undefined;
  if (field !== undefined) {
    const value = message.params[field];
    const header = req.headers["mcp-name"];
    if (typeof value !== "string" || typeof header !== "string") return undefined;
    const name = header.replace(/^[ \t]+|[ \t]+$/g, "");
    if (name.startsWith("=?") || name !== value) return undefined;
  }
  return { route, message, meta };
}

/**
 * Serves `request` on `server` (a fresh 2026-07-28 instance) and writes its answer to `res`. Resolves once
 * answered, or once the client went away (its call is then cancelled, as the SDK's entry cancels it).
 */
export async function serveModernExchange(input: {
  res: ServerResponse;
  request: PlainModernRequest;
  server: GenerationServer;
  authInfo: AuthInfo;
  logger: Logger;
}): Promise<void> {
  const { res, request, server, logger } = input;
  if (res.destroyed) return;
  const exchange = new ModernExchange(res, request.message.id, logger);
  res.once("close", () => void exchange.close());
  try {
    server.bindModernRequest(request.meta);
    await server.connect(exchange);
    exchange.deliver(request.message, {
      classification: request.route.classification,
      authInfo: input.authInfo,
    });
  } catch (error) {
    // What the SDK's entry answers for a failure of its own (no detail to the client).
    logger.error("MCP request failed", { error: String(error) });
    exchange.answer(500, {
      jsonrpc: "2.0",
      error: { code: ProtocolErrorCode.InternalError, message: "Internal server error" },
      id: request.message.id,
    });
    await exchange.close();
  }
  await exchange.finished;
}

/**
 * The server's side of one exchange, answered as the SDK's PerRequestHTTPServerTransport answers it in its
 * "auto" mode when nothing is sent before the response: the response is the JSON body, with status 200, or
 * the ladder's status for an error sent while the request was being dispatched (an unknown method is 404).
 * Closed before that response (the client went away), the SDK's entry answers 499 with no body.
 */
class ModernExchange implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport["onmessage"];
  readonly finished: Promise<void>;
  private finish: () => void = () => undefined;
  /** True while the request is being handed to the server: an error sent then is the dispatch's own. */
  private dispatching = false;
  private answered = false;
  private closed = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly id: string | number,
    private readonly logger: Logger,
  ) {
    this.finished = new Promise((resolve) => (this.finish = resolve));
  }

  async start(): Promise<void> {}

  deliver(message: PlainModernRequest["message"], extra: MessageExtraInfo): void {
    this.dispatching = true;
    try {
      this.onmessage?.(message as JSONRPCMessage, extra);
    } finally {
      this.dispatching = false;
    }
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (this.closed) return;
    const response = "result" in message || "error" in message;
    const related = response ? message.id : options?.relatedRequestId;
    if (related !== this.id) {
      if (response)
        this.onerror?.(new Error(`Received a response for an unknown request id: ${String(message.id)}`));
      return;
    }
    if (!response) {
      // A plain request asked for nothing that is sent while it runs; the SDK would have streamed this.
      this.logger.error("MCP: a message for a plain 2026-07-28 request was dropped", {
        method: "method" in message ? message.method : undefined,
      });
      return;
    }
    if (this.answered) return;
    const code = "error" in message ? message.error.code : undefined;
    const ladder =
      code !== undefined && (this.dispatching || code === ProtocolErrorCode.MissingRequiredClientCapability)
        ? LADDER_STATUS[code]
        : undefined;
    this.answer(ladder ?? 200, message);
    // Closed once the answer is out (the response's "close"), after the request's own bookkeeping: closing
    // sooner would only abort the finished call's signal.
    this.finish();
  }

  /** Writes the answer, unless one was written already (or the client is gone). */
  answer(status: number, message?: JSONRPCMessage): void {
    this.answered = true;
    const { res } = this;
    if (res.headersSent || res.writableEnded || res.destroyed) return;
    if (message === undefined) res.writeHead(status).end();
    else res.writeHead(status, JSON_HEADERS).end(JSON.stringify(message));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (!this.answered) this.answer(499);
    this.finish();
    this.onclose?.();
  }
}
