/**
 * Reading an HTTP request to /mcp and answering one without MCP (and `GET /metrics`): which Host and Origin are this server's
 * (DNS rebinding), what a JSON-RPC message asks for (its ids, cancellations, the scopes it needs), the body
 * read within its limits, and the small JSON answers a refusal is.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { scopesNeeded } from "../auth/scopes.js";
import type { Caller } from "../auth/caller.js";
import type { HttpConfig } from "../config/index.js";
import { isLoopbackHost } from "../config/index.js";
import { messagesOf } from "../mcp/http.js";
import type { MetricsEndpoint } from "../metrics.js";

/**
 * The Host values served: those configured, else (loopback only) the loopback names with the port and the
 * public address (GENERATION_PUBLIC_URL) when there is one. A Host header a DNS-rebinding page would send
 * (its own name) is then refused.
 */
export function effectiveHosts(config: HttpConfig, port: number): Set<string> {
  if (config.allowedHosts.length > 0) return new Set(config.allowedHosts);
  const names = new Set(["localhost", "127.0.0.1", "[::1]"]);
  if (isLoopbackHost(config.host)) names.add(config.host.includes(":") ? `[${config.host}]` : config.host);
  const served = new Set([...names].map((name) => `${name}:${port}`));
  // Behind a reverse proxy that passes the public Host on: the public address is this server's too.
  if (config.oauth !== undefined) served.add(new URL(config.oauth.publicUrl).host.toLowerCase());
  return served;
}

export function hostAllowed(header: string | undefined, allowed: ReadonlySet<string>): boolean {
  if (header === undefined) return false;
  const host = header.trim().toLowerCase();
  if (allowed.has(host)) return true;
  // A configured entry without a port allows the name on any port.
  const name = host.replace(/:\d+$/, "");
  return allowed.has(name);
}

/** An Origin whose host (and port) is one this server answers to. */
export function sameOrigin(origin: string, allowed: ReadonlySet<string>): boolean {
  if (!URL.canParse(origin)) return false;
  const url = new URL(origin);
  if (url.protocol !== "http:" && url.protocol !== "https:") return false;
  return hostAllowed(url.host, allowed);
}

/** The scopes a signed-in caller's token lacks for this message (none for callers without grants). */
export function missingScopes(caller: Caller, message: unknown): string[] {
  if (caller.grants === undefined) return [];
  const grants = caller.grants;
  return scopesNeeded(messagesOf(message)).filter((scope) => !grants.has(scope));
}

export function headerText(req: IncomingMessage, name: string): string {
  const value = req.headers[name];
  return typeof value === "string" ? value.trim() : "";
}

/** The ids of the requests in a message, as correlation keys. */
export function requestIds(message: unknown): string[] {
  return messagesOf(message)
    .filter((entry) => typeof entry.method === "string" && entry.id !== undefined && entry.id !== null)
    .map((entry) => JSON.stringify(entry.id));
}

/** The request ids that `notifications/cancelled` messages in the message name. */
export function cancelledIds(message: unknown): string[] {
  return messagesOf(message)
    .filter((entry) => entry.method === "notifications/cancelled")
    .map((entry) => (entry.params as { requestId?: unknown } | undefined)?.requestId)
    .filter((id) => typeof id === "string" || typeof id === "number")
    .map((id) => JSON.stringify(id));
}

export function isInitialize(message: unknown): boolean {
  return messagesOf(message).some((entry) => entry.method === "initialize");
}

/** The client's `Mcp-Session-Id`, when it sends one that could be ours (a UUID). */
export function sessionIdOf(req: IncomingMessage): string | undefined {
  const value = req.headers["mcp-session-id"];
  return typeof value === "string" && /^[0-9a-f-]{36}$/i.test(value) ? value.toLowerCase() : undefined;
}

export type Body =
  { kind: "ok"; text: string } | { kind: "too-large" } | { kind: "aborted" } | { kind: "busy" };

/**
 * Reads the body up to `limit` bytes; stops reading (and says so) as soon as it passes the limit. The bytes
 * held by every body being read count against `budget`: past it this body is refused (`busy`) rather than
 * buffered, so many slow senders cannot hold the memory of many full bodies.
 */
export function readBody(
  req: IncomingMessage,
  limit: number,
  budget: { buffered: number; limit: number },
): Promise<Body> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.resolve({ kind: "too-large" });
  }
  return new Promise<Body>((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (body: Body) => {
      if (settled) return;
      settled = true;
      budget.buffered -= size;
      req.off("data", onData);
      resolve(body);
    };
    const onData = (chunk: Buffer) => {
      if (size + chunk.length > limit) {
        req.resume();
        settle({ kind: "too-large" });
        return;
      }
      if (budget.buffered + chunk.length > budget.limit) {
        // Stop reading this one: the connection is closed once the refusal is written.
        req.pause();
        settle({ kind: "busy" });
        return;
      }
      size += chunk.length;
      budget.buffered += chunk.length;
      chunks.push(chunk);
    };
    req.on("data", onData);
    req.once("end", () => {
      const text = Buffer.concat(chunks, size).toString("utf8");
      settle({ kind: "ok", text });
    });
    req.once("error", () => settle({ kind: "aborted" }));
    req.once("close", () => {
      if (!req.complete) settle({ kind: "aborted" });
    });
  });
}

/** A refusal for load: try again in a moment; the connection is closed so its unread body goes too. */
export function busy(res: ServerResponse, message: string): void {
  res.setHeader("retry-after", "1");
  res.setHeader("connection", "close");
  jsonRpcError(res, 503, -32000, `${message} Retry in a moment.`);
}

export function json(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    "cache-control": "no-store",
  });
  res.end(text);
}

export function jsonRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  json(res, status, { jsonrpc: "2.0", error: { code, message }, id: null });
}

/**
 * `GET /metrics`: the Prometheus text. Its labels hold no key, token, subject, prompt or id, so it needs no
 * caller's credentials; with GENERATION_METRICS_TOKEN set, a scrape must present that token.
 */
export async function answerMetrics(
  req: IncomingMessage,
  res: ServerResponse,
  metrics: { endpoint: MetricsEndpoint; token: string | undefined },
): Promise<void> {
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.setHeader("allow", "GET, HEAD");
    return json(res, 405, { error: "method_not_allowed", message: "GET /metrics." });
  }
  if (metrics.token !== undefined && !sameSecret(bearerOf(req), metrics.token)) {
    res.setHeader("www-authenticate", 'Bearer realm="metrics"');
    return json(res, 401, {
      error: "unauthorized",
      message: "Send the metrics token (GENERATION_METRICS_TOKEN) as 'Authorization: Bearer <token>'.",
    });
  }
  const { contentType, text } = await metrics.endpoint.scrape();
  res.writeHead(200, {
    "content-type": contentType,
    "content-length": Buffer.byteLength(text),
    "cache-control": "no-store",
  });
  res.end(req.method === "HEAD" ? undefined : text);
}

function bearerOf(req: IncomingMessage): string {
  return /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? "")?.[1] ?? "";
}

/** Compares digests, so neither the length nor the content of the token leaks through timing. */
function sameSecret(presented: string, expected: string): boolean {
  const digest = (text: string) => createHash("sha256").update(text).digest();
  return timingSafeEqual(digest(presented), digest(expected));
}
