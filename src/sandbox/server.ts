/**
 * The request pipeline. Its order is part of the contract the client's tests rely on:
 * log -> route (404 / 405) -> latency fault -> drop "before" -> rate limit + auth (429 / 401)
 * -> forced error / malformed answer -> early answer / reset after N body bytes (body not read further)
 * -> handler (validation 400 -> paid access 403 -> credits 403 -> work) -> drop "after"
 * -> data patch (success answers only) -> headers (X-RateLimit-*, X-Request-Id, header overrides)
 * -> answer, maybe dripped.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { pipeline } from "node:stream/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { UNAUTHORIZED, parseBearer, type Account, type RateLimitState } from "./auth.js";
import { readBodyBytes } from "./body.js";
import type { SandboxContext } from "./context.js";
import type { Plans } from "./faults.js";
import { HttpError, JSON_TYPE, errorResponse, type SandboxResponse } from "./http.js";
import { earlyResponse, malformedResponse, patchedResponse } from "./fault-answers.js";
import { matchRoute } from "./routes.js";
import type { RequestRecord } from "./types.js";

/** The request log is for tests; a long demo session keeps only the most recent entries. */
const MAX_LOGGED_REQUESTS = 10_000;

export function createSandboxServer(ctx: SandboxContext): Server {
  const options = { requestTimeout: 120_000, headersTimeout: 30_000, keepAliveTimeout: 5_000 };
  const server = createServer(options, (req, res) => void handle(ctx, req, res).catch(() => res.destroy()));
  server.on("clientError", (_error, socket) => {
    // Unparseable HTTP: answered in the envelope when the socket still allows it.
    if (!socket.writable) return void socket.destroy();
    const { body } = errorResponse(400, "validation_error", "Malformed HTTP request");
    const head = `HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Type: ${JSON_TYPE}`;
    socket.end(`${head}\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  });
  return server;
}

async function handle(ctx: SandboxContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { requests: log } = ctx;
  // Ends early, resolving false, when the sandbox closes.
  const wait = (ms: number) => sleep(ms, true, { signal: ctx.shutdown }).catch(() => false);
  const method = req.method ?? "GET";
  const [path = "/", search = ""] = (req.url ?? "/").split(/\?(.*)/s);
  const query = new URLSearchParams(search);
  const target = matchRoute(path);
  const bearer = parseBearer(req.headers.authorization);
  const media = target ? target.route === "media" : path.startsWith("/media/");
  const record: RequestRecord = {
    method,
    path,
    query: Object.fromEntries(query),
    route: target?.route ?? "unknown",
    key: bearer.kind === "missing" ? undefined : bearer.token,
    status: 0,
    at: ctx.clock(),
    requestId: media ? undefined : ctx.newId("request"),
  };
  log.push(record);
  // In place: callers may hold the array.
  if (log.length > MAX_LOGGED_REQUESTS) log.splice(0, log.length - MAX_LOGGED_REQUESTS);
  const account = bearer.kind === "token" ? ctx.accounts.get(bearer.token) : undefined;
  const bucket = account ? `key:${account.key}` : `addr:${req.socket.remoteAddress}`;
  let rate: RateLimitState | undefined;

  const answer = async (response: SandboxResponse, drip?: Plans["drip"]): Promise<void> => {
    const route = target?.route;
    const { status, data } = response;
    const patchable = status < 300 && typeof data === "object" && data !== null && !Array.isArray(data);
    const patch = route && patchable ? ctx.faults.take("patch", route) : undefined;
    if (patch) response = patchedResponse(response, patch);
    const { body } = response;
    const overrides = route && ctx.faults.take("headers", route);
    if (res.destroyed || res.headersSent) return;
    const headers = { ...response.headers };
    if (body instanceof Buffer) headers["Content-Length"] = String(body.length);
    if (!media && !response.bare) {
      const { limit, remaining, resetS } = rate ?? ctx.limiter.peek(bucket);
      headers["X-RateLimit-Limit"] = String(limit);
      headers["X-RateLimit-Remaining"] = String(remaining);
      headers["X-RateLimit-Reset"] = String(resetS);
      if (record.requestId !== undefined) headers["X-Request-Id"] = record.requestId;
    }
    if (response.closeConnection) headers.Connection = "close";
    // An override's empty value removes the header.
    for (const [name, value] of [...Object.entries(headers), ...Object.entries(overrides ?? {})]) {
      if (value === "") res.removeHeader(name);
      else res.setHeader(name, value);
    }
    res.statusCode = record.status = status;
    if (response.closeConnection && !response.closeAbruptly) lingerThenClose(res);
    // HEAD: the headers describe the body, none of which is sent (nor dripped, nor streamed).
    if (req.method === "HEAD") return void res.end();
    if (!(body instanceof Buffer)) return pipeline(body, res).catch(() => undefined);
    if (!drip || body.length === 0) return void res.end(body);
    res.flushHeaders();
    const size = Math.ceil(body.length / drip.chunks);
    for (let offset = 0; offset < body.length; offset += size) {
      if ((offset > 0 && !(await wait(drip.chunkDelayMs))) || res.destroyed) return;
      res.write(body.subarray(offset, offset + size));
    }
    res.end();
  };

  if (!target) return answer(errorResponse(404, "not_found", `No route ${method} ${path}`));
  if (!target.methods.includes(method)) {
    const allow = target.methods.join(", ");
    const message = `${method} is not allowed on ${path}; use ${allow}`;
    return answer(errorResponse(405, "method_not_allowed", message, { Allow: allow }));
  }
  const { route } = target;
  const latency = ctx.faults.latencyFor(route);
  if (latency > 0 && !(await wait(latency))) return;
  if (ctx.faults.take("drop-before", route)) return void req.socket.destroy();

  if (!media) {
    // Requests without a valid key count against their address, so key guessing is throttled too.
    const state = (rate = ctx.limiter.consume(bucket));
    if (!state.allowed) {
      const message = `Rate limit of ${state.limit} requests per window exceeded; retry after ${state.retryAfterS} s`;
      const retry = { "Retry-After": String(state.retryAfterS) };
      return answer(errorResponse(429, "rate_limit_exceeded", message, retry));
    }
    if (!account) return answer(errorResponse(401, "unauthorized", UNAUTHORIZED[bearer.kind]));
  }
  const forced = ctx.faults.take("error", route);
  if (forced) return answer(errorResponse(forced.status, forced.code, forced.message));
  const malformed = ctx.faults.take("malformed", route);
  if (malformed) return answer(malformedResponse(malformed));

  const run = (): Promise<SandboxResponse> =>
    target.handle({ ctx, req, query, account: account as Account }).catch((error: unknown) => {
      if (error instanceof HttpError) {
        const { status, code, message, closeConnection } = error;
        return { ...errorResponse(status, code, message), closeConnection };
      }
      // A bug or hostile input must never take the sandbox down: it becomes an envelope 500.
      const id = record.requestId ? ` (request ${record.requestId})` : "";
      return errorResponse(500, "internal_error", `Internal error in the sandbox${id}`);
    });
  const early = ctx.faults.take("early", route);
  if (early) {
    const bodyBytes = (record.bodyBytes = await readBodyBytes(req, early.afterBytes));
    const response = earlyResponse(ctx, route, account, early, bodyBytes) ?? (await run());
    return answer({ ...response, closeConnection: true, closeAbruptly: true });
  }
  const resetAfter = ctx.faults.take("reset", route);
  if (resetAfter !== undefined) {
    record.bodyBytes = await readBodyBytes(req, resetAfter);
    if (!req.socket.destroyed) req.socket.resetAndDestroy();
    return;
  }
  const response = await run();
  if (ctx.faults.take("drop-after", route)) return void req.socket.destroy();
  return answer(response, ctx.faults.take("drip", route));
}

/**
 * Closing while the client still sends makes the kernel reset the connection, which can destroy our answer
 * unread. So, like Apache's lingering close: answer, half-close, discard what still arrives for a moment.
 */
function lingerThenClose(res: ServerResponse): void {
  const socket = res.req.socket;
  socket.destroySoon = () => {
    socket.end();
    res.req.resume();
    socket.resume();
    const timer = setTimeout(() => socket.destroy(), 1000);
    timer.unref();
    socket.once("close", () => clearTimeout(timer));
  };
}
