/**
 * MCP Streamable HTTP at `/mcp`, stateless: every POST is served by a fresh MCP server (mcp/http.ts), so any
 * replica can answer any request; one runtime per service key (runtime-pool.ts). Before any MCP processing
 * each request passes, in order: the Host check (DNS rebinding), the Origin check, authentication, the body
 * limits and the caller's concurrency cap (the checks are in http-guards.ts); a refusal is a small JSON
 * answer, never a stack trace. A client that disconnects, or sends `notifications/cancelled` for a call still
 * running here, cancels it (the task itself goes on). Bounded before anyone is trusted: connections, the
 * bytes of bodies being read at once, the time to send headers and the whole request, and the calls in
 * flight per caller, a batch counting as its calls.
 *
 * Cancellation needs a correlation a stateless server otherwise lacks: two clients of one key both number
 * their calls from 0. The answer to `initialize` therefore carries a random `Mcp-Session-Id` that the server
 * does not store; a cancel names the call by caller, that id and the request id.
 */
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { authFor } from "../auth/bearer.js";
import { missingScopes, type Caller } from "../auth/caller.js";
import type { HttpConfig } from "../config/index.js";
import type { Logger } from "../logger.js";
import { createMcpHttp, messagesOf, type Served } from "../mcp/http.js";
import { startMetrics } from "../metrics.js";
import { registerSecret } from "../redact.js";
import { RuntimePool, type PooledRuntime } from "../runtime-pool.js";
import type { KeyParts, Session } from "../mcp/session.js";
import {
  answerMetrics,
  busy,
  callerSlots,
  effectiveHosts,
  hostAllowed,
  json,
  jsonRpcError,
  readBody,
  sameOrigin,
} from "./http-guards.js";

/** Bodies being read at once, in bytes, are bounded by this many full-size bodies. */
const BUFFERED_BODIES = 16;
const BODIES_PER_CALLER = 4;
/** Revisions without JSON-RPC batching: a batch from a client that speaks one of them is refused. */
const NO_BATCH_REVISIONS = /^(2025-06-18|2025-11-25|2026-)/;
/**
 * Where Protected Resource Metadata is looked for, besides the RFC 9728 §3.1 location of the resource
 * (`/.well-known/oauth-protected-resource/gen/mcp` for `https://host/gen/mcp`, config/http.ts): the root
 * form, and the form for `/mcp`, which is also what that location becomes behind a proxy that strips `/gen`.
 */
const PROTECTED_RESOURCE_PATHS = [
  "/.well-known/oauth-protected-resource",
  "/.well-known/oauth-protected-resource/mcp",
];
/** Where OAuth clients look for an authorization server (RFC 9728, RFC 8414, OpenID discovery, DCR). */
const OAUTH_PATHS =
  /^\/(\.well-known\/(oauth-protected-resource|oauth-authorization-server|openid-configuration)(\/.*)?|register|authorize|token)$/;

export type KeyRuntime = KeyParts & PooledRuntime;

export interface HttpServing {
  http: HttpConfig;
  version: string;
  logger: Logger;
  /** The key the server holds (gateway and OAuth callers are served with it). */
  serviceKey: string;
  mediaOrigin: string | undefined;
  /** Makes the runtime of one service key; `callerKey`: the key is a caller's own (passthrough). */
  makeRuntime(apiKey: string, callerKey: boolean): Promise<KeyRuntime>;
  /** False while the state shared with other replicas (Redis) is unreachable: `/readyz` says not ready. */
  sharedStateReady?: (() => boolean) | undefined;
}

/** `--http`: the caller's authentication as configured, the metrics when on, and the server. */
export async function serveHttp(options: HttpServing) {
  const { http: config, logger } = options;
  registerSecret(config.metrics?.token);
  // Loads prom-client only now; every other mode keeps the no-op recorder (src/metrics.ts).
  const metrics =
    config.metrics === undefined
      ? undefined
      : await startMetrics({
          tools: (await import("../tools/index.js")).TOOLS.map((tool) => tool.name),
          sharedStateReady: options.sharedStateReady,
        });
  const auth = await authFor(config, options.serviceKey, logger);
  const { oauth } = auth;
  const pool = new RuntimePool<KeyRuntime>({
    create: (apiKey) => options.makeRuntime(apiKey, auth.callerKeys),
  });
  const open = new Set<ServerResponse>();
  const running = new Map<string, Set<() => void>>();
  const calls = callerSlots(config.maxConcurrentPerKey);
  const bodies = callerSlots(BODIES_PER_CALLER);
  const bodyBytes = { buffered: 0, limit: config.maxBodyBytes * BUFFERED_BODIES };
  const mcpHttp = createMcpHttp({ version: options.version, logger });
  let phase: "starting" | "ready" | "stopping" = "starting";
  let allowedHosts = new Set<string>();
  const metadataPaths = new Set(PROTECTED_RESOURCE_PATHS);
  if (config.oauth !== undefined) metadataPaths.add(new URL(config.oauth.metadataUrl).pathname);

  const server = createHttpServer(
    {
      headersTimeout: 10_000,
      requestTimeout: 30_000,
      keepAliveTimeout: 5_000,
      // How often Node checks those two: the limits hold to within this.
      connectionsCheckingInterval: 1000,
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
    const probe = req.method === "GET" || req.method === "HEAD";
    // Probes carry whatever Host a load balancer uses, and reveal nothing: no Host or auth check.
    if (path === "/healthz" && probe) return json(res, 200, { status: "ok" });
    if (path === "/readyz" && probe) {
      const shared = (options.sharedStateReady?.() ?? true) && (oauth?.ready() ?? true);
      const status = phase === "ready" && !shared ? "shared state unavailable" : phase;
      return json(res, status === "ready" ? 200 : 503, { status });
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
    if (path === "/metrics" && metrics !== undefined) {
      return answerMetrics(req, res, metrics, config.metrics?.token);
    }
    if (oauth !== undefined && metadataPaths.has(path)) {
      // Public metadata (RFC 9728): where to sign in for this resource, readable from any page.
      res.setHeader("access-control-allow-origin", "*");
      return json(res, 200, oauth.metadata());
    }
    if (OAUTH_PATHS.test(path)) {
      // Clients that try OAuth first (Claude Code, mcp-remote) learn what this server takes instead.
      if (oauth === undefined)
        return json(res, 404, { error: "not_found", oauth: false, message: auth.bearerHint });
      const issuer = oauth.metadata()["authorization_servers"];
      return json(res, 404, {
        error: "not_found",
        message: `This server is an OAuth resource server only: sign in at the authorization server ${JSON.stringify(issuer)}; its metadata is at ${config.oauth?.metadataUrl ?? "/.well-known/oauth-protected-resource/mcp"}.`,
      });
    }
    if (path !== "/mcp") return json(res, 404, { error: "not_found", message: "MCP is served at /mcp." });
    if (req.method === "OPTIONS" && listed) {
      res.writeHead(204, {
        "access-control-allow-methods": "POST, OPTIONS",
        "access-control-allow-headers":
          "authorization, content-type, accept, mcp-protocol-version, mcp-session-id, last-event-id",
        "access-control-max-age": "600",
      });
      return void res.end();
    }
    if (req.method !== "POST") {
      // Stateless: there is no session stream to GET and no session to DELETE.
      res.setHeader("allow", "POST");
      return jsonRpcError(res, 405, -32000, "Method not allowed: this server is stateless; POST to /mcp.");
    }
    if (phase === "stopping")
      return jsonRpcError(res, 503, -32000, "The server is shutting down; try another replica.");

    const caller = await auth.authenticate(req.headers.authorization);
    if ("unavailable" in caller) {
      res.setHeader("retry-after", "5");
      return jsonRpcError(res, 503, -32000, `Service unavailable: ${caller.unavailable}; retry in a moment.`);
    }
    if ("challenge" in caller) {
      res.setHeader("www-authenticate", caller.challenge);
      return jsonRpcError(res, caller.status, -32001, `unauthorized: ${caller.message}`);
    }
    if (!/^application\/json\s*(;|$)/i.test(req.headers["content-type"] ?? "")) {
      const text = "Unsupported Media Type: send the JSON-RPC message as application/json.";
      return jsonRpcError(res, 415, -32000, text);
    }
    const bodySlot = bodies.take(caller.id, 1);
    if (bodySlot === undefined)
      return busy(res, "Too many requests of yours are still sending their bodies.");
    const body = await readBody(req, config.maxBodyBytes, bodyBytes).finally(bodySlot);
    if (body === "busy") return busy(res, "The server is reading too many request bodies at once.");
    if (body === "too-large") {
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
    if (body === "aborted") return;
    let message: unknown;
    try {
      message = JSON.parse(body.text);
    } catch {
      return jsonRpcError(res, 400, -32700, "Parse error: the body is not JSON.");
    }
    const missing = missingScopes(caller, messagesOf(message));
    if (missing.length > 0 && oauth !== undefined) {
      // Step-up: the client asks the user for more, and nothing reached the service.
      res.setHeader(
        "www-authenticate",
        oauth.challenge({ error: "insufficient_scope", scope: missing.join(" ") }),
      );
      const text = `insufficient_scope: this call needs the scope ${missing.join(" ")}; sign in again granting it.`;
      return jsonRpcError(res, 403, -32001, text);
    }
    const revision = req.headers["mcp-protocol-version"];
    if (Array.isArray(message) && typeof revision === "string" && NO_BATCH_REVISIONS.test(revision.trim())) {
      const text =
        "Invalid Request: this protocol revision has no JSON-RPC batches; send one message per POST.";
      return jsonRpcError(res, 400, -32600, text);
    }
    await serveMcp(req, res, message, caller);
  }

  async function serveMcp(req: IncomingMessage, res: ServerResponse, message: unknown, caller: Caller) {
    const sessionId = req.headers["mcp-session-id"];
    // Only an id that could be ours (a UUID) correlates.
    const correlation = `${caller.id}:${typeof sessionId === "string" && /^[0-9a-f-]{36}$/i.test(sessionId) ? sessionId.toLowerCase() : "-"}:`;
    const messages = messagesOf(message);
    for (const entry of messages) {
      if (entry.method !== "notifications/cancelled") continue;
      const id = (entry.params as { requestId?: unknown } | undefined)?.requestId;
      if (typeof id !== "string" && typeof id !== "number") continue;
      const cancels = running.get(correlation + JSON.stringify(id));
      // Two running calls with one id (clients without a session id): cancelling either could be wrong.
      if (cancels?.size === 1) for (const cancel of cancels) cancel();
    }
    const keys = messages
      .filter((entry) => typeof entry.method === "string" && entry.id !== undefined && entry.id !== null)
      .map((entry) => correlation + JSON.stringify(entry.id));
    // Each request of a batch is a call of its own against the caller's cap.
    const slot = calls.take(caller.id, keys.length);
    if (slot === undefined) {
      res.setHeader("retry-after", "1");
      const text = `Too many calls at once for this caller (at most ${config.maxConcurrentPerKey}); retry in a moment.`;
      return jsonRpcError(res, 429, -32000, text);
    }
    let lease: ReturnType<RuntimePool<KeyRuntime>["acquire"]> | undefined;
    let served: Served | undefined;
    let ended = false;
    const release = () =>
      void lease?.then(
        (held) => held.release(),
        () => undefined,
      );
    const session: Session = {
      caller,
      advice: caller.scope === undefined ? "http-key" : "shared",
      mediaOrigin: options.mediaOrigin,
      runtime: async () => {
        lease ??= pool.acquire(caller.serviceKey);
        // Asked for after the client went away: the call is being cancelled, and nothing releases it later.
        if (ended) release();
        return (await lease).runtime;
      },
    };
    const end = () => {
      if (ended) return;
      ended = true;
      for (const key of keys) {
        const cancels = running.get(key);
        cancels?.delete(end);
        if (cancels?.size === 0) running.delete(key);
      }
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
      release();
    };
    for (const key of keys) running.set(key, (running.get(key) ?? new Set()).add(end));
    res.once("close", end);
    if (messages.some((entry) => entry.method === "initialize"))
      res.setHeader("mcp-session-id", randomUUID());
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

  server.listen(config.port, config.host);
  await once(server, "listening").catch((error: unknown) => {
    oauth?.close();
    throw error;
  });
  const port = (server.address() as AddressInfo).port;
  allowedHosts = effectiveHosts(config, port);
  phase = "ready";
  const url = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${port}/mcp`;
  logger.info(`generation-mcp ${options.version} serving MCP at ${url} (${auth.mode})`);
  if (metrics !== undefined) {
    const access = config.metrics?.token === undefined ? "no auth" : "Bearer GENERATION_METRICS_TOKEN";
    logger.info(`Prometheus metrics at ${url.replace(/\/mcp$/, "/metrics")} (${access})`);
  }

  return {
    /**
     * Stops accepting requests, lets every running call answer with what it has (a started task with its
     * video_id), then closes every connection; bounded by `graceMs` plus a little.
     */
    async close(graceMs = 3000) {
      phase = "stopping";
      server.close();
      // Running calls answer now (waits end with their video_id); then the last answers are written.
      await pool.close(graceMs);
      const deadline = Date.now() + 2000;
      while (open.size > 0 && Date.now() < deadline) await sleep(20);
      server.closeAllConnections();
      oauth?.close();
    },
  };
}
