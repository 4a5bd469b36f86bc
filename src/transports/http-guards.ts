/**
 * What a request to `--http` must pass before any MCP processing, and the small answers of a refusal. Not the
 * SDK's Host and Origin validators: they compare names only, where this server also holds the port.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { HttpConfig } from "../config/index.js";
import type { MetricsEndpoint } from "../metrics.js";

/** How many of something each caller may hold at once: `take` gets all `count` slots or none. */
export function callerSlots(max: number) {
  const held = new Map<string, number>();
  return {
    take(callerId: string, count: number) {
      const now = held.get(callerId) ?? 0;
      if (count > 0 && now + count > max) return undefined;
      held.set(callerId, now + count);
      let given = false;
      return () => {
        if (given) return;
        given = true;
        const left = (held.get(callerId) ?? 0) - count;
        if (left > 0) held.set(callerId, left);
        else held.delete(callerId);
      };
    },
  };
}

/**
 * The Host values served (a DNS-rebinding page sends its own name): those configured, else the loopback
 * names with the port, and the public address (GENERATION_PUBLIC_URL) when there is one.
 */
export function effectiveHosts(config: HttpConfig, port: number): Set<string> {
  const bound = config.host.includes(":") ? `[${config.host}]` : config.host;
  const loopback = ["localhost", "127.0.0.1", "[::1]", bound].map((name) => `${name}:${port}`);
  const served = new Set(config.allowedHosts.length > 0 ? config.allowedHosts : loopback);
  // Behind a reverse proxy that passes the public Host on: the public address is this server's too.
  if (config.oauth !== undefined) served.add(new URL(config.oauth.publicUrl).host);
  return served;
}

/** A configured entry without a port allows the name on any port. */
export function hostAllowed(header: string | undefined, allowed: ReadonlySet<string>): boolean {
  const host = header?.trim().toLowerCase();
  return host !== undefined && (allowed.has(host) || allowed.has(host.replace(/:\d+$/, "")));
}

/** An Origin whose host (and port) is one this server answers to. */
export function sameOrigin(origin: string, allowed: ReadonlySet<string>): boolean {
  const url = URL.canParse(origin) ? new URL(origin) : undefined;
  return (url?.protocol === "http:" || url?.protocol === "https:") && hostAllowed(url.host, allowed);
}

/** The body up to `limit` bytes; `busy` past the `budget` all bodies share (slow senders hoard no memory). */
export function readBody(
  req: IncomingMessage,
  limit: number,
  budget: { buffered: number; limit: number },
): Promise<{ text: string } | "too-large" | "aborted" | "busy"> {
  if (Number(req.headers["content-length"]) > limit) {
    req.resume();
    return Promise.resolve("too-large");
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (body: { text: string } | "too-large" | "aborted" | "busy") => {
      if (settled) return;
      settled = true;
      budget.buffered -= size;
      req.off("data", onData);
      resolve(body);
    };
    const onData = (chunk: Buffer) => {
      if (size + chunk.length > limit) {
        req.resume();
        return settle("too-large");
      }
      if (budget.buffered + chunk.length > budget.limit) {
        // Stop reading this one: the connection is closed once the refusal is written.
        req.pause();
        return settle("busy");
      }
      size += chunk.length;
      budget.buffered += chunk.length;
      chunks.push(chunk);
    };
    req.on("data", onData);
    req.once("end", () => settle({ text: Buffer.concat(chunks, size).toString("utf8") }));
    req.once("error", () => settle("aborted"));
    req.once("close", () => {
      if (!req.complete) settle("aborted");
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
  if (!res.headersSent) send(res, status, "application/json", JSON.stringify(body));
}

/** A whole answer; to a HEAD request Node sends its headers only. */
function send(res: ServerResponse, status: number, contentType: string, text: string): void {
  res.writeHead(status, {
    "content-type": contentType,
    "content-length": Buffer.byteLength(text),
    "cache-control": "no-store",
  });
  res.end(text);
}

export function jsonRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  json(res, status, { jsonrpc: "2.0", error: { code, message }, id: null });
}

/**
 * `GET /metrics`: its labels hold no key, token, subject, prompt or id, so it needs no caller's credentials;
 * a GENERATION_METRICS_TOKEN is compared as digests, so neither its length nor its content leaks by timing.
 */
export async function answerMetrics(
  req: IncomingMessage,
  res: ServerResponse,
  metrics: MetricsEndpoint,
  token: string | undefined,
): Promise<void> {
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.setHeader("allow", "GET, HEAD");
    return json(res, 405, { error: "method_not_allowed", message: "GET /metrics." });
  }
  const digest = (text: string) => createHash("sha256").update(text).digest();
  const presented = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? "")?.[1] ?? "";
  if (token !== undefined && !timingSafeEqual(digest(presented), digest(token))) {
    res.setHeader("www-authenticate", 'Bearer realm="metrics"');
    return json(res, 401, {
      error: "unauthorized",
      message: "Send the metrics token (GENERATION_METRICS_TOKEN) as 'Authorization: Bearer <token>'.",
    });
  }
  const { contentType, text } = await metrics.scrape();
  send(res, 200, contentType, text);
}
