/**
 * HTTP to the generation service: auth, the `{data, error}` envelope, timeouts joined with the caller's
 * signal and deadline, capped bodies, the rate budget, and retries for reads only (a charging POST: once).
 */
import { randomUUID } from "node:crypto";
import type { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import type * as UndiciModule from "undici";
import type { Dispatcher } from "undici";
import { fix } from "../advice.js";
import { metrics } from "../metrics.js";
import { joinSignals, sleep, type Sleep } from "./sleep.js";
import { cleanText } from "../redact.js";
import {
  ASK_USER,
  AbortedError,
  GenerationError,
  InternalServiceError,
  NetworkError,
  NotFoundError,
  RateLimitError,
  TimeoutError,
  errorFromResponse,
} from "./errors.js";
import {
  MAX_FOREGROUND_429_WAIT_MS,
  headerValue,
  type HeaderBag,
  retryHint,
  tooLongToWait,
  type RateBudget,
} from "./rate-budget.js";
import { isObject } from "./shapes.js";
import type { RequestOptions } from "./types.js";

let undici: Promise<typeof UndiciModule> | undefined;

/** undici, loaded on first use (a large module); CommonJS, so its names sit on `default` once bundled. */
export function loadUndici(): Promise<typeof UndiciModule> {
  undici ??= import("undici").then((module) =>
    "Agent" in module ? module : (module as { default: typeof UndiciModule }).default,
  );
  return undici;
}

export interface HttpOptions {
  baseUrl: string;
  apiKey: string;
  budget: RateBudget;
  userAgent?: string;
  /** Per attempt, from the first byte sent to the last byte read. */
  timeoutMs?: number;
  /** Retries of a read after the first attempt. */
  maxRetries?: number;
  dispatcher?: Dispatcher;
  /** Injectable for tests; must reject with AbortedError when the signal aborts. */
  sleep?: Sleep;
  /** Told the status of every answer that arrived (the client learns from it whether the key is accepted). */
  onStatus?: (status: number) => void;
}

export interface CallOptions extends RequestOptions {
  query?: Record<string, string>;
  json?: unknown;
  /** A streamed body with its headers (an upload), made afresh for every attempt. */
  stream?: () => { body: Readable; headers: Record<string, string> };
  retry: boolean;
  timeoutMs?: number;
  /** The path names one task (GET /videos/:id): only there does an enveloped 404 mean "no such id". */
  idRoute?: boolean;
}

/** A call without a deadline of its own still ends: every attempt, retry and budget wait included. */
const DEFAULT_CALL_DEADLINE_MS = 45_000;
/** Answers larger than this are not read (a status or a list is a few kilobytes). */
const MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
const TOO_LARGE = `The service's answer exceeded ${MAX_RESPONSE_BYTES} bytes; it was not read.`;
/** Below this much time left, another attempt could not get an answer in: stop and report. */
const MIN_ATTEMPT_MS = 1000;
/** Failures of the connection phase: no byte of the request reached the service, nothing was charged. */
const CONNECT_CODES =
  /^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EAI_NONAME|E(HOST|NET)UNREACH|EHOSTDOWN|EADDRNOTAVAIL|UND_ERR_CONNECT_TIMEOUT)$/;
/** TLS handshake failures (https against a plain-http port, a bad certificate): before any request byte. */
const TLS_CODE =
  /^(ERR_SSL_|ERR_TLS_|EPROTO$|CERT_|DEPTH_ZERO_|SELF_SIGNED_|UNABLE_TO_(GET|VERIFY)_|HOSTNAME_MISMATCH)/;

export class HttpTransport {
  private readonly base: URL;
  /** Made on the first request, so undici loads only once something is sent. */
  private dispatcher: Promise<Dispatcher> | undefined;

  constructor(private readonly options: HttpOptions) {
    this.base = new URL(options.baseUrl.endsWith("/") ? options.baseUrl : `${options.baseUrl}/`);
    if (options.dispatcher !== undefined) this.dispatcher = Promise.resolve(options.dispatcher);
  }

  /** The answer's `data`, after retries of a read's transient failures; a typed error otherwise. */
  async call(method: "GET" | "POST", path: string, call: CallOptions): Promise<unknown> {
    const maxRetries = call.retry ? (this.options.maxRetries ?? 3) : 0;
    const deadline = call.deadline ?? Date.now() + DEFAULT_CALL_DEADLINE_MS;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.attempt(method, path, call, deadline);
      } catch (error) {
        if (!(error instanceof GenerationError) || !error.transient || attempt >= maxRetries) throw error;
        const delay = this.retryDelay(error, attempt);
        const limited = error.code === "rate_limit_exceeded";
        if (limited && call.priority !== "background" && delay > MAX_FOREGROUND_429_WAIT_MS) {
          throw tooLongToWait(error, delay);
        }
        // Another try could not finish before the caller's deadline: the failure in hand is the answer.
        if (Date.now() + delay + MIN_ATTEMPT_MS > deadline)
          throw limited ? tooLongToWait(error, delay) : error;
        await (this.options.sleep ?? sleep)(delay, call.signal);
      }
    }
  }

  async close(): Promise<void> {
    if (this.options.dispatcher === undefined && this.dispatcher !== undefined)
      await (await this.dispatcher).close();
  }

  private async attempt(method: "GET" | "POST", path: string, call: CallOptions, deadline: number) {
    if (call.signal?.aborted) throw new AbortedError();
    // Loaded before the budget and the clock of the attempt: loading is not the service's time.
    const dispatcher = await (this.dispatcher ??= loadUndici().then(
      ({ Agent }) => new Agent({ keepAliveTimeout: 10_000, connect: { timeout: 10_000 } }),
    ));
    await this.acquireBefore(call, deadline);
    const query = new URLSearchParams(call.query);
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.options.apiKey}`,
      accept: "application/json",
      "user-agent": this.options.userAgent ?? "generation-mcp",
      "x-request-id": randomUUID(),
      ...(call.idempotencyKey !== undefined && { "idempotency-key": call.idempotencyKey }),
      ...(call.json !== undefined && { "content-type": "application/json" }),
    };
    let body: string | Readable | undefined = call.json === undefined ? undefined : JSON.stringify(call.json);
    const perAttempt = call.timeoutMs ?? this.options.timeoutMs ?? 30_000;
    const guard = joinSignals([call.signal], Math.max(1, Math.min(perAttempt, deadline - Date.now())));
    const charging = method === "POST" && !call.retry;
    let response: Dispatcher.ResponseData | undefined;
    let answered: ((status: number) => void) | undefined;
    let text: string;
    try {
      // Made inside the try: a body that cannot be made still frees the rate budget's in-flight slot.
      if (call.stream !== undefined) {
        const streamed = call.stream();
        Object.assign(headers, streamed.headers);
        body = streamed.body;
      }
      answered = metrics().upstreamRequest(method, path);
      response = await dispatcher.request({
        origin: this.base.origin,
        // The path goes as is: a WHATWG URL would resolve an id like %2E%2E as "..".
        path: `${this.base.pathname}${path.replace(/^\//, "")}${query.size > 0 ? `?${query}` : ""}`,
        method,
        headers,
        signal: guard.signal,
        ...(body !== undefined && { body }),
      });
      // One observe per acquire: as soon as the headers are in, the budget learns the window.
      this.options.budget.observe(response.statusCode, response.headers);
      this.options.onStatus?.(response.statusCode);
      const tooLarge = () => new InternalServiceError(TOO_LARGE);
      text = (await buffer(capped(response.body, MAX_RESPONSE_BYTES, tooLarge))).toString("utf8");
      answered(response.statusCode);
    } catch (error) {
      answered?.(response?.statusCode ?? 0);
      if (typeof body === "object") body.destroy();
      if (response === undefined) this.options.budget.observe(0, {});
      throw this.transportError(error, call.signal, guard.timedOut(), charging, response !== undefined);
    } finally {
      guard.release();
    }
    return this.unwrap(response.statusCode, response.headers, text, charging, call.idRoute === true);
  }

  /** The `data` of one answer, or the typed error its status and code say; never relays HTML or huge text. */
  private unwrap(status: number, headers: HeaderBag, text: string, charging: boolean, idRoute: boolean) {
    const requestId = headerValue(headers, "x-request-id");
    let body: unknown;
    try {
      body = text.length === 0 ? undefined : JSON.parse(text);
    } catch {
      body = undefined;
    }
    const envelope = isObject(body) ? body : undefined;
    const error = isObject(envelope?.["error"]) ? envelope["error"] : undefined;
    if (error === undefined && status < 300) {
      if (envelope !== undefined && envelope["data"] !== undefined && envelope["data"] !== null)
        return envelope["data"];
      throw new InternalServiceError(describeBadAnswer(status, headers, text, envelope !== undefined), {
        status,
        requestId,
        maybeProcessed: charging,
      });
    }
    // Service text relayed as data, never as instructions: one cleaned, bounded line in quotes.
    const message =
      error?.["message"] !== undefined
        ? `The service answered HTTP ${status}: "${cleanText(error["message"]).replace(/"/g, "'")}"`
        : describeBadAnswer(status, headers, text, envelope !== undefined);
    // A 404 or 405 that is not the service's enveloped "no such task" means a wrong GENERATION_BASE_URL.
    if (status === 405 || (status === 404 && !(idRoute && error !== undefined))) {
      throw new NotFoundError(message, {
        status,
        requestId,
        transient: false,
        nextStep:
          status === 404 && idRoute
            ? "No task with that video_id was found, or the base URL is wrong (the answer was not the service's " +
              "JSON). If the other tools work, the id is wrong: call list_videos to find the right one. If they " +
              `fail the same way, ${ASK_USER.toLowerCase()} ${fix("base_url")}.`
            : `${this.base.origin} answered, but not as the generation service's API (no such route). ` +
              `${ASK_USER} ${fix("base_url")}.`,
      });
    }
    const code = typeof error?.["code"] === "string" ? error["code"] : undefined;
    throw errorFromResponse(status, code, message, {
      requestId,
      retryAtMs: retryHint(headers, Date.now(), status),
      maybeProcessed: charging && (status >= 500 || status === 408),
    });
  }

  /** Waits for the rate budget, never past the deadline; a known wait too long for the user is a 429 now. */
  private async acquireBefore(call: CallOptions, deadline: number): Promise<void> {
    const priority = call.priority ?? "foreground";
    const left = deadline - Date.now();
    const expected = this.options.budget.expectedWaitMs?.(priority) ?? 0;
    if (priority === "foreground" && expected > Math.min(MAX_FOREGROUND_429_WAIT_MS, left - MIN_ATTEMPT_MS)) {
      throw budgetSpent(expected);
    }
    const guard = joinSignals([call.signal], Math.max(1, left - MIN_ATTEMPT_MS));
    try {
      await this.options.budget.acquire(priority, guard.signal);
    } catch (error) {
      if (call.signal?.aborted || !guard.timedOut()) throw error;
      throw budgetSpent(Math.max(0, expected));
    } finally {
      guard.release();
    }
  }

  private transportError(
    error: unknown,
    callerSignal: AbortSignal | undefined,
    timedOut: boolean,
    charging: boolean,
    gotHeaders: boolean,
  ): Error {
    if (error instanceof GenerationError) return error;
    if (callerSignal?.aborted) return new AbortedError();
    const code = errorCode(error);
    const origin = this.base.origin;
    if (!gotHeaders && code !== undefined && TLS_CODE.test(code)) {
      return new NetworkError(
        `The TLS handshake with ${origin} failed (${code}); no request was sent, so nothing was charged.`,
        {
          transient: false,
          cause: error,
          nextStep:
            "https was used against a server that does not speak TLS there (should the address start with " +
            `http://?), or the server's certificate is not valid. ${ASK_USER} ${fix("base_url")}.`,
        },
      );
    }
    if (timedOut || code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT") {
      return new TimeoutError(
        gotHeaders
          ? "The service started answering but did not finish in time."
          : "The service did not answer in time.",
        { maybeProcessed: charging, cause: error },
      );
    }
    // Only failures of the connection are network errors; anything else is a bug and stays itself.
    if (code === undefined && !(error instanceof Error && error.name === "SocketError")) {
      return error instanceof Error ? error : new Error(String(error));
    }
    if (!gotHeaders && code !== undefined && CONNECT_CODES.test(code)) {
      const permanent = code === "ENOTFOUND" || code === "EAI_NONAME";
      return new NetworkError(
        `Could not connect to the generation service at ${origin} (${code}); no request was sent, so nothing was charged.`,
        {
          cause: error,
          ...(permanent && { transient: false }),
          nextStep: permanent
            ? `The service address's host name does not resolve. ${ASK_USER} ${fix("base_url")}.`
            : `Try again in a moment. If it keeps failing, the service is down or its address (host and port) is wrong: ${ASK_USER.toLowerCase()} ${fix("base_url")}.`,
        },
      );
    }
    return new NetworkError(
      `The connection to the generation service broke (${code ?? "connection closed"}).`,
      { maybeProcessed: charging, cause: error },
    );
  }

  private retryDelay(error: GenerationError, attempt: number): number {
    if (error.retryAtMs !== undefined)
      return Math.min(60_000, Math.max(0, error.retryAtMs - Date.now() || 0));
    if (error.code === "rate_limit_exceeded") return this.options.budget.retryDelayMs();
    const ceiling = Math.min(10_000, 500 * 2 ** attempt);
    return ceiling / 2 + Math.random() * (ceiling / 2);
  }
}

function budgetSpent(waitMs: number): RateLimitError {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new RateLimitError(
    `The API key's request budget is spent for about ${seconds} s (the service's rate limit); no request was sent.`,
    {
      retryAtMs: Date.now() + waitMs,
      nextStep: `Nothing was charged. Wait about ${seconds} s for the service's rate limit to reset, then call again.`,
    },
  );
}

/** A body's chunks, failing with `tooLarge()` once they pass `maxBytes` (leaving the loop drops the rest). */
export async function* capped(body: AsyncIterable<Uint8Array>, maxBytes: number, tooLarge: () => Error) {
  let bytes = 0;
  for await (const chunk of body) {
    if ((bytes += chunk.length) > maxBytes) throw tooLarge();
    yield chunk;
  }
}

function errorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && isObject(current); depth++) {
    if (typeof current["code"] === "string") return current["code"];
    current = current["cause"];
  }
  return undefined;
}

function describeBadAnswer(status: number, headers: HeaderBag, text: string, wasJson: boolean): string {
  if (text.length === 0) return `The service answered HTTP ${status} with an empty body.`;
  if (wasJson) return `The service answered HTTP ${status} without the expected {data, error} envelope.`;
  const type = headerValue(headers, "content-type") ?? "no content type";
  const kind =
    /html/i.test(type) || /^\s*</.test(text) ? "an HTML page" : `a body that is not JSON (${type})`;
  return `The service answered HTTP ${status} with ${cleanText(kind, 80)}.`;
}
