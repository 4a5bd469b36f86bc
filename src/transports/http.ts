/**
 * MCP Streamable HTTP at `/mcp`, stateless: every POST is served by a fresh MCP server (the SDK's stateless
 * pattern), so any replica can answer any request. Quick calls get a JSON answer; a call that asked for
 * progress gets an SSE stream carrying its progress notifications. Before any MCP processing each request
 * passes, in order: the Host check (DNS rebinding), the Origin check, authentication (one `Caller`), the
 * body limits and the caller's concurrency cap; a refusal is a small JSON answer, never a stack trace. A
 * client that disconnects, or sends `notifications/cancelled` for a call still running here, cancels it (the
 * task itself goes on and stays recoverable). `GET /healthz` says the process is alive, `GET /readyz`
 * whether it serves; with GENERATION_METRICS=on, `GET /metrics` the Prometheus metrics (src/metrics.ts).
 *
 * Bounded before anyone is trusted: connections (`maxConnections`), the bytes of bodies being read at once
 * (whatever the bearer), the time to send headers and the whole request (checked every second, so the
 * documented limits hold), and the calls in flight per caller, a batch counting as its calls.
 *
 * Cancellation needs a correlation a stateless server otherwise lacks: two clients of one key both number
 * their calls from 0. The answer to `initialize` therefore carries a random `Mcp-Session-Id` that the server
 * does not store (any replica accepts any value, or none); a cancel names the call by caller, that id and the
 * request id.
 */
import { randomUUID } from "node:crypto";
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { isRefusal, type Authenticator } from "../auth/bearer.js";
import type { OAuthGate } from "../auth/oauth.js";
import type { Caller } from "../auth/caller.js";
import type { HttpConfig } from "../config/index.js";
import type { Logger } from "../logger.js";
import type { Lease, RuntimePool } from "../runtime-pool.js";
import { createMcpHttp, type Served } from "../mcp/http.js";
import type { Session } from "../mcp/session.js";
import type { MetricsEndpoint } from "../metrics.js";
import { CallerSlots } from "./caller-slots.js";
import {
  answerMetrics,
  busy,
  cancelledIds,
  effectiveHosts,
  headerText,
  hostAllowed,
  isInitialize,
  json,
  jsonRpcError,
  missingScopes,
  readBody,
  requestIds,
  sameOrigin,
  sessionIdOf,
  type Body,
} from "./http-request.js";

export interface HttpServerOptions {
  config: HttpConfig;
  version: string;
  logger: Logger;
  pool: RuntimePool;
  /** Turns each request's `Authorization` header into a caller, or a refusal. */
  authenticate: Authenticator;
  /** OAuth mode: the resource server's metadata, challenges and readiness (auth/oauth.ts). */
  oauth?: OAuthGate | undefined;
  /** What the discovery paths of OAuth answer when this server has no OAuth: who to send what. */
  bearerHint: string;
  /** The configured service's origin (the viewer's media origin). */
  mediaOrigin: string | undefined;
  /** False while the state shared with other replicas (Redis) is unreachable: `/readyz` says not ready. */
  sharedStateReady?: () => boolean;
  /** GENERATION_METRICS=on: `GET /metrics` (behind the Host and Origin checks, and the token when set). */
  metrics?: { endpoint: MetricsEndpoint; token: string | undefined } | undefined;
}

export interface HttpServerHandle {
  /** `http://host:port/mcp` */
  url: string;
  port: number;
  /**
   * Stops accepting requests, lets every running call answer with what it has (a started task with its
   * video_id), then closes every connection; bounded by `graceMs` plus a little.
   */
  close(graceMs?: number): Promise<void>;
}

/** Longest a client may take to send its headers, and its whole request. */
export const HEADERS_TIMEOUT_MS = 10_000;
export const REQUEST_TIMEOUT_MS = 30_000;
const KEEP_ALIVE_TIMEOUT_MS = 5_000;
/** How often Node checks those two: the limits hold to within this. */
const TIMEOUT_CHECK_MS = 1000;
/** Bodies being read at once, in bytes, are bounded by this many full-size bodies. */
const BUFFERED_BODIES = 16;
/** Bodies one caller may have being read at once. */
const BODIES_PER_CALLER = 4;
const CORS_HEADERS =
  "authorization, content-type, accept, mcp-protocol-version, mcp-session-id, last-event-id";
/** Revisions without JSON-RPC batching: a batch from a client that speaks one of them is refused. */
const NO_BATCH_REVISIONS = /^(2025-06-18|2025-11-25|2026-)/;
/**
 * Where Protected Resource Metadata is looked for, besides the RFC 9728 §3.1 location of the resource
 * (`/.well-known/oauth-protected-resource/gen/mcp` for `https://host/gen/mcp`, config-http.ts): the root form,
 * and the form for `/mcp`, which is also what that location becomes behind a proxy that strips its `/gen`.
 */
const PROTECTED_RESOURCE_PATHS = [
  "/.well-known/oauth-protected-resource",
  "/.well-known/oauth-protected-resource/mcp",
];
/** Where OAuth clients look for an authorization server (RFC 9728, RFC 8414, OpenID discovery, DCR). */
const OAUTH_PATHS =
  /^\/(\.well-known\/(oauth-protected-resource|oauth-authorization-server|openid-configuration)(\/.*)?|register|authorize|token)$/;

export async function startHttpServer(options: HttpServerOptions): Promise<HttpServerHandle> {
  const { config, logger, pool } = options;
  const open = new Set<ServerResponse>();
  /** Calls running on this replica, by caller, session and request id: what a cancel notification ends. */
  const running = new Map<string, Set<() => void>>();
  const calls = new CallerSlots(config.maxConcurrentPerKey);
  const bodies = new CallerSlots(BODIES_PER_CALLER);
  const bodyBytes = { buffered: 0, limit: config.maxBodyBytes * BUFFERED_BODIES };
  const mcpHttp = createMcpHttp({ version: options.version, logger });
  let ready = false;
  let stopping = false;
  let allowedHosts = new Set<string>();
  const metadataPaths = new Set(PROTECTED_RESOURCE_PATHS);
  if (config.oauth !== undefined) metadataPaths.add(new URL(config.oauth.metadataUrl).pathname);

  const server = createHttpServer(
    {
      headersTimeout: HEADERS_TIMEOUT_MS,
      requestTimeout: REQUEST_TIMEOUT_MS,
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      connectionsCheckingInterval: TIMEOUT_CHECK_MS,
    },
    (req, res) => {
      open.add(res);
      res.once("close", () => open.delete(res));
      handle(req, res).catch((error: unknown) => {
        // Only a bug gets here: its details go to stderr, never into the answer.
        logger.error("HTTP request failed unexpectedly", { error: String(error) });
        if (!res.headersSent) jsonRpcError(res, 500, -32603, "internal error");
        else res.destroy();
      });
    },
  );
  server.maxConnections = config.maxConnections;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    // Probes carry whatever Host a load balancer uses, and reveal nothing: no Host or auth check.
    if (path === "/healthz" && (req.method === "GET" || req.method === "HEAD")) {
      return json(res, 200, { status: "ok" });
    }
    if (path === "/readyz" && (req.method === "GET" || req.method === "HEAD")) {
      const shared = (options.sharedStateReady?.() ?? true) && (options.oauth?.ready() ?? true);
      const status = !ready
        ? stopping
          ? "stopping"
          : "starting"
        : shared
          ? "ready"
          : "shared state unavailable";
      return json(res, ready && shared ? 200 : 503, { status });
    }
    if (!hostAllowed(req.headers.host, allowedHosts)) {
      return json(res, 403, { error: "forbidden", message: "This Host is not served here." });
    }
    const origin = req.headers.origin;
    const listed = origin !== undefined && config.allowedOrigins.includes(origin);
    // A page of this server's own origin is not a rebinding attack; any other origin must be listed.
    if (origin !== undefined && !listed && !sameOrigin(origin, allowedHosts)) {
      return json(res, 403, { error: "forbidden", message: "This Origin is not allowed." });
    }
    if (listed) {
      res.setHeader("access-control-allow-origin", origin);
      res.setHeader("vary", "Origin");
      res.setHeader("access-control-expose-headers", "www-authenticate, mcp-session-id");
    }
    if (path === "/metrics" && options.metrics !== undefined) return answerMetrics(req, res, options.metrics);
    if (options.oauth !== undefined && metadataPaths.has(path)) {
      // Public metadata (RFC 9728): where to sign in for this resource, readable from any page.
      res.setHeader("access-control-allow-origin", "*");
      return json(res, 200, options.oauth.metadata());
    }
    if (OAUTH_PATHS.test(path)) {
      if (options.oauth !== undefined) {
        const issuer = options.oauth.metadata()["authorization_servers"];
        return json(res, 404, {
          error: "not_found",
          message: `This server is an OAuth resource server only: sign in at the authorization server ${JSON.stringify(issuer)}; its metadata is at ${config.oauth?.metadataUrl ?? "/.well-known/oauth-protected-resource/mcp"}.`,
        });
      }
      // Clients that try OAuth first (Claude Code, mcp-remote) learn what this server takes instead.
      return json(res, 404, { error: "not_found", oauth: false, message: options.bearerHint });
    }
    if (path !== "/mcp") return json(res, 404, { error: "not_found", message: "MCP is served at /mcp." });
    if (req.method === "OPTIONS" && listed) {
      res.writeHead(204, {
        "access-control-allow-methods": "POST, OPTIONS",
        "access-control-allow-headers": CORS_HEADERS,
        "access-control-max-age": "600",
      });
      return void res.end();
    }
    if (req.method !== "POST") {
      // Stateless: there is no session stream to GET and no session to DELETE.
      res.setHeader("allow", "POST");
      return jsonRpcError(res, 405, -32000, "Method not allowed: this server is stateless; POST to /mcp.");
    }
    if (stopping) return jsonRpcError(res, 503, -32000, "The server is shutting down; try another replica.");

    const caller = await options.authenticate(req.headers.authorization);
    if ("unavailable" in caller) {
      res.setHeader("retry-after", "5");
      return jsonRpcError(res, 503, -32000, `Service unavailable: ${caller.unavailable}; retry in a moment.`);
    }
    if (isRefusal(caller)) {
      res.setHeader("www-authenticate", caller.challenge);
      return jsonRpcError(res, caller.status, -32001, `unauthorized: ${caller.message}`);
    }
    const type = req.headers["content-type"] ?? "";
    if (!/^application\/json\s*(;|$)/i.test(type)) {
      return jsonRpcError(
        res,
        415,
        -32000,
        "Unsupported Media Type: send the JSON-RPC message as application/json.",
      );
    }
    const bodySlot = bodies.take(caller.id, 1);
    if (bodySlot === undefined)
      return busy(res, "Too many requests of yours are still sending their bodies.");
    let body: Body;
    try {
      body = await readBody(req, config.maxBodyBytes, bodyBytes);
    } finally {
      bodySlot();
    }
    if (body.kind === "busy") return busy(res, "The server is reading too many request bodies at once.");
    if (body.kind === "too-large") {
      // No "Connection: close": closing while the client still sends would cost it the answer (it sees
      // EPIPE, not 413). Node discards the rest of the body; the request timeout bounds a client that
      // never stops sending.
      return jsonRpcError(
        res,
        413,
        -32000,
        `The request body is larger than this server accepts (${config.maxBodyBytes} bytes). For an image, pass its URL as image_url instead of data_base64.`,
      );
    }
    if (body.kind === "aborted") return;
    let message: unknown;
    try {
      message = JSON.parse(body.text);
    } catch {
      return jsonRpcError(res, 400, -32700, "Parse error: the body is not JSON.");
    }
    const missing = missingScopes(caller, message);
    if (missing.length > 0 && options.oauth !== undefined) {
      // Step-up: the client asks the user for more, and nothing reached the service.
      res.setHeader(
        "www-authenticate",
        options.oauth.challenge({ error: "insufficient_scope", scope: missing.join(" ") }),
      );
      return json(res, 403, {
        jsonrpc: "2.0",
        error: {
          code: -32001,
          message: `insufficient_scope: this call needs the scope ${missing.join(" ")}; sign in again granting it.`,
        },
        id: null,
      });
    }
    if (Array.isArray(message) && NO_BATCH_REVISIONS.test(headerText(req, "mcp-protocol-version"))) {
      return jsonRpcError(
        res,
        400,
        -32600,
        "Invalid Request: this protocol revision has no JSON-RPC batches; send one message per POST.",
      );
    }
    await serveMcp(req, res, message, caller);
  }

  async function serveMcp(
    req: IncomingMessage,
    res: ServerResponse,
    message: unknown,
    caller: Caller,
  ): Promise<void> {
    const correlation = `${caller.id}:${sessionIdOf(req) ?? "-"}:`;
    for (const requestId of cancelledIds(message)) {
      const calls = running.get(correlation + requestId);
      // Two running calls with one id (clients without a session id): cancelling either could be wrong.
      if (calls?.size === 1) for (const cancel of calls) cancel();
    }
    const ids = requestIds(message);
    // Each request of a batch is a call of its own against the caller's cap.
    const slot = calls.take(caller.id, ids.length);
    if (slot === undefined) {
      res.setHeader("retry-after", "1");
      return jsonRpcError(
        res,
        429,
        -32000,
        `Too many calls at once for this caller (at most ${config.maxConcurrentPerKey}); retry in a moment.`,
      );
    }
    let lease: Promise<Lease> | undefined;
    const session: Session = {
      caller,
      advice: caller.scope === undefined ? "http-key" : "shared",
      mediaOrigin: options.mediaOrigin,
      runtime: async () => {
        if (lease === undefined) {
          lease = pool.acquire(caller.serviceKey);
          // Asked for after the client went away: the call is being cancelled, and nothing releases it later.
          if (ended)
            lease.then(
              (held) => held.release(),
              () => undefined,
            );
        }
        return (await lease).runtime;
      },
    };
    const keys = ids.map((id) => correlation + id);
    let served: Served | undefined;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      for (const key of keys) forget(key, end);
      // Closing aborts the calls still running: a client that went away cancelled them. A cancelled call
      // sends no answer (the protocol says so), but its HTTP response must still end.
      void (served?.close() ?? Promise.resolve())
        .catch(() => undefined)
        .finally(() => {
          if (res.destroyed || res.writableEnded) return;
          if (!res.headersSent) res.writeHead(202);
          res.end();
        });
      slot();
      lease?.then(
        (held) => held.release(),
        () => undefined,
      );
    };
    for (const key of keys) remember(key, end);
    res.once("close", end);
    if (isInitialize(message)) res.setHeader("mcp-session-id", randomUUID());
    try {
      served = await mcpHttp.serve(req, res, message, session);
      // The client went away while the call was being set up: end() found nothing to close then.
      if (ended) void served.close().catch(() => undefined);
      else if (res.destroyed) end();
    } catch (error) {
      end();
      throw error;
    }
  }

  function remember(key: string, cancel: () => void): void {
    const calls = running.get(key) ?? new Set();
    calls.add(cancel);
    running.set(key, calls);
  }

  function forget(key: string, cancel: () => void): void {
    const calls = running.get(key);
    calls?.delete(cancel);
    if (calls?.size === 0) running.delete(key);
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, config.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  allowedHosts = effectiveHosts(config, port);
  ready = true;
  const shownHost = config.host.includes(":") ? `[${config.host}]` : config.host;

  return {
    url: `http://${shownHost}:${port}/mcp`,
    port,
    async close(graceMs = 3000) {
      stopping = true;
      ready = false;
      server.close();
      server.closeIdleConnections();
      // Running calls answer now (waits end with their video_id); then the last answers are written.
      await pool.close(graceMs);
      const deadline = Date.now() + 2000;
      while (open.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      server.closeAllConnections();
    },
  };
}
