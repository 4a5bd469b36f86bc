/**
 * The request pipeline. Its order is part of the contract the client's tests rely on:
 * log -> route (404 / 405) -> latency fault -> drop "before" -> rate limit + auth (429 / 401)
 * -> forced error / malformed answer -> early answer / reset after N body bytes (body not read further)
 * -> handler (validation 400 -> paid access 403 -> credits 403 -> work) -> drop "after"
 * -> data patch (success answers only) -> headers (X-RateLimit-*, X-Request-Id, header overrides)
 * -> answer, maybe dripped.
 */
import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import type { Account } from "./auth.js";
import { parseBearer } from "./auth.js";
import type { BearerResult } from "./auth.js";
import { earlyResponse, readBodyBytes } from "./body-faults.js";
import type { SandboxContext } from "./context.js";
import type { Drip } from "./faults.js";
import { HttpError, JSON_CONTENT_TYPE, errorResponse } from "./http.js";
import type { SandboxResponse } from "./http.js";
import { rateLimitHeaders } from "./rate-limit.js";
import type { RateLimitState } from "./rate-limit.js";
import { malformedResponse, patchedResponse, writeResponse } from "./respond.js";
import { isMediaPath, matchRoute } from "./router.js";
import type { RequestRecord } from "./types.js";

/** The request log is for tests; a long demo session keeps only the most recent entries. */
export const MAX_LOGGED_REQUESTS = 10_000;

export function createSandboxServer(
  ctx: SandboxContext,
  log: RequestRecord[],
  shutdown: AbortSignal,
): Server {
  const server = createServer(
    { requestTimeout: 120_000, headersTimeout: 30_000, keepAliveTimeout: 5_000 },
    (req, res) => {
      handleRequest(ctx, log, shutdown, req, res).catch(() => {
        // Only reached when writing itself failed; the socket is the one thing left to clean up.
        res.destroy();
      });
    },
  );
  server.on("clientError", (_error, socket) => {
    // Unparseable HTTP never reaches the pipeline; answer in the envelope when the socket still allows it.
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    const body = JSON.stringify({
      data: null,
      error: { message: "Malformed HTTP request", code: "validation_error" },
    });
    socket.end(
      `HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Type: ${JSON_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  });
  return server;
}

async function handleRequest(
  ctx: SandboxContext,
  log: RequestRecord[],
  shutdown: AbortSignal,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const method = req.method ?? "GET";
  const rawUrl = req.url ?? "/";
  const queryStart = rawUrl.indexOf("?");
  const path = queryStart === -1 ? rawUrl : rawUrl.slice(0, queryStart);
  const query = new URLSearchParams(queryStart === -1 ? "" : rawUrl.slice(queryStart + 1));
  const target = matchRoute(path);
  const bearer = parseBearer(req.headers.authorization);
  const media = target ? target.kind === "media" : isMediaPath(path);
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
  appendLog(log, record);
  const account = bearer.kind === "token" ? ctx.accounts.find(bearer.token) : undefined;
  const bucket = account ? `key:${account.key}` : `addr:${req.socket.remoteAddress ?? "unknown"}`;
  let rate: RateLimitState | undefined;

  const answer = async (response: SandboxResponse, drip?: Drip): Promise<void> => {
    if (target && patchable(response)) {
      const patch = ctx.faults.takePatch(target.route);
      if (patch) response = patchedResponse(response, patch);
    }
    const headers: Record<string, string> = { ...response.headers };
    if (!media && !response.bare) {
      Object.assign(headers, rateLimitHeaders(rate ?? ctx.limiter.peek(bucket)));
      if (record.requestId !== undefined) headers["X-Request-Id"] = record.requestId;
    }
    if (response.closeConnection) headers.Connection = "close";
    const overrides = target ? ctx.faults.takeHeaders(target.route) : undefined;
    await writeResponse(res, record, response, headers, overrides, drip, shutdown);
  };

  if (!target) {
    return answer(errorResponse(404, "not_found", `No route ${method} ${path}`));
  }
  if (!target.methods.includes(method)) {
    const allow = target.methods.join(", ");
    return answer(
      errorResponse(405, "method_not_allowed", `${method} is not allowed on ${path}; use ${allow}`, {
        Allow: allow,
      }),
    );
  }
  const route = target.route;

  const latency = ctx.faults.latencyFor(route);
  if (latency > 0) {
    try {
      await sleep(latency, undefined, { signal: shutdown });
    } catch {
      return;
    }
  }
  if (ctx.faults.takeDrop(route, "before")) {
    req.socket.destroy();
    return;
  }

  if (target.kind === "api") {
    // Requests without a valid key count against their address, so key guessing is throttled too.
    const state = ctx.limiter.consume(bucket);
    rate = state;
    if (!state.allowed) {
      return answer(
        errorResponse(
          429,
          "rate_limit_exceeded",
          `Rate limit of ${state.limit} requests per window exceeded; retry after ${state.retryAfterS} s`,
          {
            "Retry-After": String(state.retryAfterS),
          },
        ),
      );
    }
    if (!account) return answer(errorResponse(401, "unauthorized", unauthorizedMessage(bearer)));
  }

  const forced = ctx.faults.takeError(route);
  if (forced) return answer(errorResponse(forced.status, forced.code, forced.message));
  const malformed = ctx.faults.takeMalformed(route);
  if (malformed) return answer(malformedResponse(malformed));

  const runHandler = async (): Promise<SandboxResponse> => {
    try {
      return target.kind === "api"
        ? await target.handler(ctx, { req, query, params: target.params, account: account as Account })
        : await target.handler(ctx, req, target.file);
    } catch (error) {
      return toErrorResponse(error, record.requestId);
    }
  };

  const early = ctx.faults.takeEarlyAnswer(route);
  if (early) {
    const bodyBytes = await readBodyBytes(req, early.afterBytes);
    record.bodyBytes = bodyBytes;
    const response = earlyResponse(ctx, route, account, early, bodyBytes) ?? (await runHandler());
    return answer({ ...response, closeConnection: true, closeAbruptly: true });
  }
  const resetAfter = ctx.faults.takeReset(route);
  if (resetAfter !== undefined) {
    record.bodyBytes = await readBodyBytes(req, resetAfter);
    if (!req.socket.destroyed) req.socket.resetAndDestroy();
    return;
  }

  const response = await runHandler();
  if (ctx.faults.takeDrop(route, "after")) {
    req.socket.destroy();
    return;
  }
  return answer(response, ctx.faults.takeDrip(route));
}

function patchable(response: SandboxResponse): boolean {
  const { data } = response;
  return (
    response.status >= 200 &&
    response.status < 300 &&
    typeof data === "object" &&
    data !== null &&
    !Array.isArray(data)
  );
}

function unauthorizedMessage(bearer: BearerResult): string {
  switch (bearer.kind) {
    case "missing":
      return "Missing API key: send the header 'Authorization: Bearer <API key>'";
    case "malformed":
      return "Malformed Authorization header: expected 'Bearer <API key>'";
    case "token":
      return "Invalid API key";
  }
}

function toErrorResponse(error: unknown, requestId: string | undefined): SandboxResponse {
  if (error instanceof HttpError) {
    const response = errorResponse(error.status, error.code, error.message, error.headers);
    if (error.closeConnection) response.closeConnection = true;
    return response;
  }
  // A bug or hostile input must never take the sandbox down: it becomes an envelope 500.
  return errorResponse(
    500,
    "internal_error",
    `Internal error in the sandbox${requestId ? ` (request ${requestId})` : ""}`,
  );
}

function appendLog(log: RequestRecord[], record: RequestRecord): void {
  log.push(record);
  // Trim in place: callers may hold a reference to the array.
  if (log.length > MAX_LOGGED_REQUESTS) log.splice(0, log.length - MAX_LOGGED_REQUESTS);
}
