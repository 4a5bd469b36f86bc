/**
 * HTTP to the generation service: auth, the {data, error} envelope, per-attempt timeouts joined with the
 * caller's signal, capped bodies, the rate budget, and retries for reads only. A POST is sent once: whether
 * to try again is decided above this layer, where the cost of a second charge is known.
 */
import { randomUUID } from "node:crypto";
import type { Readable } from "node:stream";
import type { Dispatcher } from "undici";
import { fix } from "../advice.js";
import { loadUndici } from "./load-undici.js";
import type { Redactor } from "../redact.js";
import { sleep } from "../sleep.js";
import {
  ASK_USER,
  AbortedError,
  GenerationError,
  InternalServiceError,
  NetworkError,
  RateLimitError,
  TimeoutError,
} from "./errors.js";
import { unwrapEnvelope } from "./envelope.js";
import type { HeaderBag } from "./headers.js";
import type { RateBudget } from "./rate-budget.js";
import { MAX_FOREGROUND_429_WAIT_MS, tooLongToWait } from "./rate-budget.js";
import { isObject } from "./normalize.js";
import { metrics } from "../metrics.js";
import type { RequestPriority } from "./types.js";

export interface HttpOptions {
  baseUrl: string;
  apiKey: string;
  budget: RateBudget;
  userAgent: string;
  /** Per attempt, from the first byte sent to the last byte read. */
  timeoutMs?: number;
  /** Retries of a read after the first attempt. */
  maxRetries?: number;
  maxResponseBytes?: number;
  dispatcher?: Dispatcher;
  /** Injectable for tests; must reject with AbortedError when the signal aborts. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
  /**
   * Masks this key in every answer as soon as it is parsed, so nothing downstream (results, task records,
   * the journal, Redis) can hold it however the service echoes it (see redact.ts).
   */
  redactor?: Redactor;
  /** Told the status of every answer that arrived (the client learns from it whether the key is accepted). */
  onStatus?: (status: number) => void;
}

export interface CallOptions {
  query?: Record<string, string | number | undefined>;
  json?: unknown;
  /** A streamed body with its headers (multipart upload), built afresh for every attempt. */
  stream?: () => { body: Readable; headers: Record<string, string> };
  /** Reads and uploads may be retried; a charging POST never is. */
  retry: boolean;
  signal?: AbortSignal | undefined;
  priority?: RequestPriority | undefined;
  idempotencyKey?: string | undefined;
  timeoutMs?: number;
  /**
   * Epoch ms by which the whole call (every attempt, retry and wait for the rate budget) must be over, so a
   * tool answers inside the client's patience whatever the service does.
   */
  deadline?: number | undefined;
  /** The path names one task (GET /videos/:id): only there does an enveloped 404 mean "no such id". */
  idRoute?: boolean;
}

export interface HttpResult {
  data: unknown;
  status: number;
  headers: HeaderBag;
}

const DEFAULT_TIMEOUT_MS = 30_000;
/** A call without a deadline of its own still ends: every attempt, retry and budget wait included. */
const DEFAULT_CALL_DEADLINE_MS = 45_000;
/** Below this much time left, another attempt could not get an answer in: stop and report. */
const MIN_ATTEMPT_MS = 1000;
const DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
const RETRY_BASE_MS = 500;
const RETRY_CAP_MS = 10_000;
const RETRY_AFTER_CAP_MS = 60_000;
/**
 * Failures of the connection phase: no byte of the request can have reached the service, so nothing was
 * processed or charged. Those that a retry cannot cure are answered at once.
 */
const CONNECT_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EAI_NONAME",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EHOSTDOWN",
  "EADDRNOTAVAIL",
  "UND_ERR_CONNECT_TIMEOUT",
]);
const PERMANENT_CONNECT_CODES = new Set(["ENOTFOUND", "EAI_NONAME"]);
/** TLS handshake failures (e.g. https against a plain-http port, a bad certificate): before any request byte. */
const TLS_CODE =
  /^(ERR_SSL_|ERR_TLS_|EPROTO$|CERT_|DEPTH_ZERO_|SELF_SIGNED_|UNABLE_TO_(GET|VERIFY)_|HOSTNAME_MISMATCH)/;

export class HttpTransport {
  private readonly base: URL;
  /** Created on the first request: undici is loaded only once something is sent (a faster cold start). */
  private dispatcher: Promise<Dispatcher> | undefined;

  constructor(private readonly options: HttpOptions) {
    this.base = new URL(options.baseUrl.endsWith("/") ? options.baseUrl : `${options.baseUrl}/`);
    if (options.dispatcher !== undefined) this.dispatcher = Promise.resolve(options.dispatcher);
  }

  async call(method: "GET" | "POST", path: string, call: CallOptions): Promise<HttpResult> {
    const maxRetries = call.retry ? (this.options.maxRetries ?? 3) : 0;
    const deadline = call.deadline ?? Date.now() + DEFAULT_CALL_DEADLINE_MS;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.attempt(method, path, call, deadline);
      } catch (error) {
        if (!(error instanceof GenerationError) || !error.transient || attempt >= maxRetries) throw error;
        const delay = this.retryDelay(error, attempt);
        const background = call.priority === "background";
        if (error.code === "rate_limit_exceeded" && !background && delay > MAX_FOREGROUND_429_WAIT_MS) {
          throw tooLongToWait(error, delay);
        }
        // Another try could not finish before the caller's deadline: the failure in hand is the answer.
        if (Date.now() + delay + MIN_ATTEMPT_MS > deadline) {
          throw error.code === "rate_limit_exceeded" ? tooLongToWait(error, delay) : error;
        }
        await this.sleep(delay, call.signal);
      }
    }
  }

  async close(): Promise<void> {
    if (this.options.dispatcher === undefined && this.dispatcher !== undefined)
      await (await this.dispatcher).close();
  }

  private getDispatcher(): Promise<Dispatcher> {
    this.dispatcher ??= loadUndici().then(
      ({ Agent }) => new Agent({ keepAliveTimeout: 10_000, connect: { timeout: 10_000 } }),
    );
    return this.dispatcher;
  }

  private async attempt(
    method: "GET" | "POST",
    path: string,
    call: CallOptions,
    deadline: number,
  ): Promise<HttpResult> {
    throwIfAborted(call.signal);
    await this.acquireBefore(call, deadline);

    // The path is handed to the dispatcher as is: a WHATWG URL would resolve an id like %2E%2E as "..".
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(call.query ?? {})) {
      if (value !== undefined) query.set(key, String(value));
    }
    const fullPath = `${this.base.pathname}${path.replace(/^\//, "")}${query.size > 0 ? `?${query}` : ""}`;
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.options.apiKey}`,
      accept: "application/json",
      "user-agent": this.options.userAgent,
      "x-request-id": randomUUID(),
    };
    if (call.idempotencyKey !== undefined) headers["idempotency-key"] = call.idempotencyKey;
    let body: string | Readable | undefined;
    if (call.json !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(call.json);
    }

    const perAttempt = call.timeoutMs ?? this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const timeout = AbortSignal.timeout(Math.max(1, Math.min(perAttempt, deadline - Date.now())));
    const signal = call.signal ? AbortSignal.any([call.signal, timeout]) : timeout;
    const charging = method === "POST" && !call.retry;
    let response: Dispatcher.ResponseData | undefined;
    let text: string;
    let answered: ((status: number) => void) | undefined;
    try {
      // Built inside the try: a body that cannot be made still frees the rate budget's in-flight slot.
      if (call.stream !== undefined) {
        const streamed = call.stream();
        Object.assign(headers, streamed.headers);
        body = streamed.body;
      }
      const dispatcher = await this.getDispatcher();
      answered = metrics().upstreamRequest(method, path);
      response = await dispatcher.request({
        origin: this.base.origin,
        path: fullPath,
        method,
        headers,
        signal,
        ...(body !== undefined && { body }),
      });
      // One observe per acquire: as soon as the headers are in, the budget learns the window.
      this.options.budget.observe(response.statusCode, response.headers);
      this.options.onStatus?.(response.statusCode);
      text = await readCapped(response.body, this.options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES);
      answered(response.statusCode);
    } catch (error) {
      answered?.(response?.statusCode ?? 0);
      if (body !== undefined && typeof body !== "string") body.destroy();
      if (response === undefined) this.options.budget.observe(0, {});
      throw this.transportError(error, {
        callerSignal: call.signal,
        timeout,
        charging,
        gotHeaders: response !== undefined,
      });
    }
    const { statusCode: status, headers: responseHeaders } = response;
    return {
      data: unwrapEnvelope(status, responseHeaders, text, charging, {
        idRoute: call.idRoute === true,
        origin: this.base.origin,
        redactor: this.options.redactor,
      }),
      status,
      headers: responseHeaders,
    };
  }

  /**
   * Waits for the rate budget, but never past the deadline: when the budget already knows the wait would be
   * longer than a call of the user's can afford, it answers rate_limit_exceeded at once (nothing was sent).
   */
  private async acquireBefore(call: CallOptions, deadline: number): Promise<void> {
    const priority = call.priority ?? "foreground";
    const left = deadline - Date.now();
    const expected = this.options.budget.expectedWaitMs?.(priority) ?? 0;
    if (priority === "foreground" && expected > Math.min(MAX_FOREGROUND_429_WAIT_MS, left - MIN_ATTEMPT_MS)) {
      throw budgetSpent(expected);
    }
    const timer = AbortSignal.timeout(Math.max(1, left - MIN_ATTEMPT_MS));
    const signal = call.signal ? AbortSignal.any([call.signal, timer]) : timer;
    try {
      await this.options.budget.acquire(priority, signal);
    } catch (error) {
      if (call.signal?.aborted || !timer.aborted) throw error;
      throw budgetSpent(Math.max(0, expected));
    }
  }

  private transportError(
    error: unknown,
    context: {
      callerSignal: AbortSignal | undefined;
      timeout: AbortSignal;
      charging: boolean;
      gotHeaders: boolean;
    },
  ): Error {
    if (error instanceof GenerationError) return error;
    if (context.callerSignal?.aborted) return new AbortedError();
    const code = errorCode(error);
    if (!context.gotHeaders && code !== undefined && TLS_CODE.test(code)) {
      return new NetworkError(
        `The TLS handshake with ${this.base.origin} failed (${code}); no request was sent, so nothing was charged.`,
        {
          transient: false,
          cause: error,
          nextStep:
            "https was used against a server that does not speak TLS there (should the address start with " +
            `http://?), or the server's certificate is not valid. ${ASK_USER} ${fix("base_url")}.`,
        },
      );
    }
    if (context.timeout.aborted || code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT") {
      return new TimeoutError(
        context.gotHeaders
          ? "The service started answering but did not finish in time."
          : "The service did not answer in time.",
        { maybeProcessed: context.charging, cause: error },
      );
    }
    // Only failures of the connection are network errors; anything else is a bug and stays itself.
    if (code === undefined && !(error instanceof Error && error.name === "SocketError"))
      return asError(error);
    const notSent = !context.gotHeaders && code !== undefined && CONNECT_CODES.has(code);
    if (notSent) {
      const permanent = PERMANENT_CONNECT_CODES.has(code);
      return new NetworkError(
        `Could not connect to the generation service at ${this.base.origin} (${code}); no request was sent, so nothing was charged.`,
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
      { maybeProcessed: context.charging, cause: error },
    );
  }

  private retryDelay(error: GenerationError, attempt: number): number {
    if (error.retryAtMs !== undefined) {
      return clamp(error.retryAtMs - Date.now(), 0, RETRY_AFTER_CAP_MS);
    }
    if (error.code === "rate_limit_exceeded") return this.options.budget.retryDelayMs();
    const random = this.options.random ?? Math.random;
    const ceiling = Math.min(RETRY_CAP_MS, RETRY_BASE_MS * 2 ** attempt);
    return ceiling / 2 + random() * (ceiling / 2);
  }

  private sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return (this.options.sleep ?? sleep)(ms, signal);
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

async function readCapped(body: AsyncIterable<Buffer | Uint8Array> & { destroy?: () => void }, cap: number) {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > cap) {
      body.destroy?.();
      throw new InternalServiceError(`The service's answer exceeded ${cap} bytes; it was not read.`);
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks).toString("utf8");
}

function errorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && isObject(current); depth++) {
    if (typeof current["code"] === "string") return current["code"];
    current = current["cause"];
  }
  return undefined;
}

function asError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new AbortedError();
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, Number.isFinite(value) ? value : min));
}
