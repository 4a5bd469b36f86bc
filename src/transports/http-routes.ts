/**
 * What `--http` answers, as one ordered chain: each step answers the request or passes it on. First what
 * anyone may ask (the probes; an upload link, whose token is its only permission), then the Host check (DNS
 * rebinding) and the Origin check, the small routes (metrics, OAuth metadata), and last `/mcp`: the caller,
 * the body and the scopes before any MCP processing. A refusal is a small JSON answer, never a stack trace.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { authFor } from "../auth/bearer.js";
import { missingScopes, type Caller } from "../auth/caller.js";
import type { HttpConfig } from "../config/index.js";
import type { Logger } from "../logger.js";
import { messagesOf } from "../mcp/http.js";
import type { MetricsEndpoint } from "../metrics.js";
import type { UploadDesk } from "../uploads/desk.js";
import { UPLOAD_PATH, answerUpload } from "../uploads/receive.js";
import {
  answerMetrics,
  busy,
  callerSlots,
  hostAllowed,
  json,
  jsonRpcError,
  readBody,
  sameOrigin,
} from "./http-guards.js";

/** Answers the request (true), or leaves it to the next step. */
type Step = (req: IncomingMessage, res: ServerResponse, path: string) => boolean | Promise<boolean>;

/** Bodies being read at once, in bytes, are bounded by this many full-size bodies. */
const BUFFERED_BODIES = 16;
const BODIES_PER_CALLER = 4;
/** Revisions without JSON-RPC batching: a batch from a client that speaks one of them is refused. */
const NO_BATCH_REVISIONS = /^(2025-06-18|2025-11-25|2026-)/;
/**
 * Where Protected Resource Metadata is looked for besides the RFC 9728 §3.1 location (config/http.ts): the
 * root form, and the form for `/mcp`, which that location becomes behind a proxy that strips a prefix.
 */
const PROTECTED_RESOURCE_PATHS = [
  "/.well-known/oauth-protected-resource",
  "/.well-known/oauth-protected-resource/mcp",
];
/** Where OAuth clients look for an authorization server (RFC 9728, RFC 8414, OpenID discovery, DCR). */
const OAUTH_PATHS =
  /^\/(\.well-known\/(oauth-protected-resource|oauth-authorization-server|openid-configuration)(\/.*)?|register|authorize|token)$/;

export interface RouteParts {
  config: HttpConfig;
  auth: Awaited<ReturnType<typeof authFor>>;
  metrics: MetricsEndpoint | undefined;
  uploads: UploadDesk;
  logger: Logger;
  /** Changes as the server starts and stops: the Host values it answers to, whether it is ready. */
  state: { phase: "starting" | "ready" | "stopping"; allowedHosts: ReadonlySet<string> };
  sharedStateReady: () => boolean;
  serveMcp(req: IncomingMessage, res: ServerResponse, message: unknown, caller: Caller): Promise<void>;
}

export function routeSteps(parts: RouteParts): Step[] {
  const { config, auth, state } = parts;
  const { oauth } = auth;
  const metadataPaths = new Set(PROTECTED_RESOURCE_PATHS);
  if (config.oauth !== undefined) metadataPaths.add(new URL(config.oauth.metadataUrl).pathname);
  const bodies = callerSlots(BODIES_PER_CALLER);
  const bodyBytes = { buffered: 0, limit: config.maxBodyBytes * BUFFERED_BODIES };
  const answered = (answer: void | Promise<void>) => Promise.resolve(answer).then(() => true);
  const probe = (req: IncomingMessage) => req.method === "GET" || req.method === "HEAD";
  const listed = (req: IncomingMessage) => config.allowedOrigins.includes(req.headers.origin ?? "");

  return [
    // Probes carry whatever Host a load balancer uses, and reveal nothing: no Host or auth check.
    (req, res, path) => path === "/healthz" && probe(req) && answered(json(res, 200, { status: "ok" })),
    (req, res, path) => {
      if (path !== "/readyz" || !probe(req)) return false;
      const shared = parts.sharedStateReady() && (oauth?.ready() ?? true);
      const status = state.phase === "ready" && !shared ? "shared state unavailable" : state.phase;
      return answered(json(res, status === "ready" ? 200 : 503, { status }));
    },
    // A link's token is its only permission: the person's browser reaches it through any name or proxy.
    (req, res, path) => {
      const token = UPLOAD_PATH.exec(path)?.[1];
      return token !== undefined && answered(answerUpload(req, res, token, parts.uploads, parts.logger));
    },
    (req, res) =>
      !hostAllowed(req.headers.host, state.allowedHosts) &&
      answered(json(res, 403, { error: "forbidden", message: "This Host is not served here." })),
    (req, res) => {
      const origin = req.headers.origin;
      // A page of this server's own origin is not a rebinding attack; any other origin must be listed.
      if (origin !== undefined && !listed(req) && !sameOrigin(origin, state.allowedHosts)) {
        return answered(json(res, 403, { error: "forbidden", message: "This Origin is not allowed." }));
      }
      if (origin !== undefined && listed(req)) {
        res.setHeader("access-control-allow-origin", origin);
        res.setHeader("vary", "Origin");
        res.setHeader("access-control-expose-headers", "www-authenticate, mcp-session-id");
      }
      return false;
    },
    (req, res, path) =>
      path === "/metrics" &&
      parts.metrics !== undefined &&
      answered(answerMetrics(req, res, parts.metrics, config.metrics?.token)),
    (_req, res, path) => {
      if (oauth === undefined || !metadataPaths.has(path)) return false;
      // Public metadata (RFC 9728): where to sign in for this resource, readable from any page.
      res.setHeader("access-control-allow-origin", "*");
      return answered(json(res, 200, oauth.metadata()));
    },
    (_req, res, path) => {
      if (!OAUTH_PATHS.test(path)) return false;
      // Clients that try OAuth first (Claude Code, mcp-remote) learn what this server takes instead.
      if (oauth === undefined)
        return answered(json(res, 404, { error: "not_found", oauth: false, message: auth.bearerHint }));
      const issuer = oauth.metadata()["authorization_servers"];
      const message = `This server is an OAuth resource server only: sign in at the authorization server ${JSON.stringify(issuer)}; its metadata is at ${config.oauth?.metadataUrl ?? "/.well-known/oauth-protected-resource/mcp"}.`;
      return answered(json(res, 404, { error: "not_found", message }));
    },
    (_req, res, path) =>
      path !== "/mcp" && answered(json(res, 404, { error: "not_found", message: "MCP is served at /mcp." })),
    (req, res) => {
      if (req.method !== "OPTIONS" || !listed(req)) return false;
      res.writeHead(204, {
        "access-control-allow-methods": "POST, OPTIONS",
        "access-control-allow-headers":
          "authorization, content-type, accept, mcp-protocol-version, mcp-session-id, last-event-id",
        "access-control-max-age": "600",
      });
      return answered(void res.end());
    },
    (req, res) => {
      if (req.method === "POST") return false;
      // Stateless: there is no session stream to GET and no session to DELETE.
      res.setHeader("allow", "POST");
      const text = "Method not allowed: this server is stateless; POST to /mcp.";
      return answered(jsonRpcError(res, 405, -32000, text));
    },
    (_req, res) =>
      state.phase === "stopping" &&
      answered(jsonRpcError(res, 503, -32000, "The server is shutting down; try another replica.")),
    (req, res) => answered(acceptMcp(req, res)),
  ];

  /** `/mcp`: the caller, the body and the scopes it needs, then the call itself. */
  async function acceptMcp(req: IncomingMessage, res: ServerResponse): Promise<void> {
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
      // No "Connection: close": closing while the client still sends would cost it the answer (EPIPE, not
      // 413); Node discards the rest of the body, and the request timeout bounds a client that never stops.
      const text = `The request body is larger than this server accepts (${config.maxBodyBytes} bytes). For an image, pass its URL as image_url instead of data_base64.`;
      return jsonRpcError(res, 413, -32000, text);
    }
    if (body === "aborted") return;
    let message: unknown;
    try {
      message = JSON.parse(body.text);
    } catch {
      return jsonRpcError(res, 400, -32700, "Parse error: the body is not JSON.");
    }
    const scope = missingScopes(caller, messagesOf(message)).join(" ");
    if (scope !== "" && oauth !== undefined) {
      // Step-up: the client asks the user for more, and nothing reached the service.
      res.setHeader("www-authenticate", oauth.challenge({ error: "insufficient_scope", scope }));
      const text = `insufficient_scope: this call needs the scope ${scope}; sign in again granting it.`;
      return jsonRpcError(res, 403, -32001, text);
    }
    const revision = req.headers["mcp-protocol-version"];
    if (Array.isArray(message) && typeof revision === "string" && NO_BATCH_REVISIONS.test(revision.trim())) {
      const text =
        "Invalid Request: this protocol revision has no JSON-RPC batches; send one message per POST.";
      return jsonRpcError(res, 400, -32600, text);
    }
    await parts.serveMcp(req, res, message, caller);
  }
}
