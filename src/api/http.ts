/**
 * HTTP to the generation service: auth, the {data, error} envelope, per-attempt timeouts joined with the
 * caller's signal, capped bodies, the rate budget, and retries for reads only. A POST is sent once: whether
 * to try again is decided above this layer, where the cost of a second charge is known.
 */
import { randomUUID } from "node:crypto";
import type { Readable } from "node:stream";
import type { Dispatcher } from "undici";
import { loadUndici } from "./load-undici.js";
import { cleanText } from "../redact.js";
import { sleep } from "../sleep.js";
import {
  AbortedError,
  GenerationError,
  InternalServiceError,
  NetworkError,
  TimeoutError,
  errorFromResponse,
} from "./errors.js";
import { headerValue, type HeaderBag } from "./headers.js";
import type { RateBudget } from "./rate-budget.js";
import {
  DEFAULT_MAX_WAIT_MS,
  MAX_FOREGROUND_429_WAIT_MS,
  parseResetHeader,
  parseRetryAfter,
  tooLongToWait,
} from "./rate-budget.js";
import { isObject } from "./normalize.js";
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
}

export interface HttpResult {
  data: unknown;
  status: number;
  headers: HeaderBag;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
const RETRY_BASE_MS = 500;
const RETRY_CAP_MS = 10_000;
const RETRY_AFTER_CAP_MS = 60_000;
/** Failures that happen before a single byte of the request left: safe to say nothing was processed. */
const NOT_SENT_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"]);
const NOT_SENT_UNDICI = new Set(["UND_ERR_CONNECT_TIMEOUT"]);

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
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.attempt(method, path, call);
      } catch (error) {
        if (!(error instanceof GenerationError) || !error.transient || attempt >= maxRetries) throw error;
        const delay = this.retryDelay(error, attempt);
        const background = call.priority === "background";
        if (error.code === "rate_limit_exceeded" && !background && delay > MAX_FOREGROUND_429_WAIT_MS) {
          throw tooLongToWait(error, delay);
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

  private async attempt(method: "GET" | "POST", path: string, call: CallOptions): Promise<HttpResult> {
    throwIfAborted(call.signal);
    await this.options.budget.acquire(call.priority ?? "foreground", call.signal);

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
    } else if (call.stream !== undefined) {
      const streamed = call.stream();
      Object.assign(headers, streamed.headers);
      body = streamed.body;
    }

    const timeout = AbortSignal.timeout(call.timeoutMs ?? this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    const signal = call.signal ? AbortSignal.any([call.signal, timeout]) : timeout;
    const charging = method === "POST" && !call.retry;
    let response: Dispatcher.ResponseData | undefined;
    let text: string;
    try {
      const dispatcher = await this.getDispatcher();
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
      text = await readCapped(response.body, this.options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES);
    } catch (error) {
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
      data: unwrapEnvelope(status, responseHeaders, text, charging),
      status,
      headers: responseHeaders,
    };
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
    const notSent = code !== undefined && (NOT_SENT_CODES.has(code) || NOT_SENT_UNDICI.has(code));
    return new NetworkError(
      notSent
        ? `Could not connect to the generation service (${code}).`
        : `The connection to the generation service broke (${code ?? "connection closed"}).`,
      { maybeProcessed: context.charging && !notSent, cause: error },
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

/** Turns one answer into the `data` payload or a typed error; never relays raw HTML or huge text. */
export function unwrapEnvelope(status: number, headers: HeaderBag, text: string, charging: boolean): unknown {
  const requestId = headerValue(headers, "x-request-id");
  const retryAtMs = retryAt(status, headers);
  let body: unknown;
  try {
    body = text.length === 0 ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  const envelope = isObject(body) ? body : undefined;
  const errorField = envelope?.["error"];
  const ambiguous = charging && (status >= 500 || status === 408);

  if (isObject(errorField) || status >= 300) {
    const code =
      isObject(errorField) && typeof errorField["code"] === "string" ? errorField["code"] : undefined;
    const message =
      isObject(errorField) && errorField["message"] !== undefined
        ? cleanText(errorField["message"])
        : describeBadAnswer(status, headers, text, envelope !== undefined);
    return throwing(
      errorFromResponse(status, code, message, { requestId, retryAtMs, maybeProcessed: ambiguous }),
    );
  }
  if (envelope === undefined || !("data" in envelope) || envelope["data"] === null) {
    return throwing(
      new InternalServiceError(describeBadAnswer(status, headers, text, envelope !== undefined), {
        status,
        requestId,
        maybeProcessed: charging,
      }),
    );
  }
  return envelope["data"];
}

function describeBadAnswer(status: number, headers: HeaderBag, text: string, wasJson: boolean): string {
  const type = headerValue(headers, "content-type") ?? "no content type";
  if (text.length === 0) return `The service answered HTTP ${status} with an empty body.`;
  if (wasJson) return `The service answered HTTP ${status} without the expected {data, error} envelope.`;
  const kind =
    /html/i.test(type) || /^\s*</.test(text) ? "an HTML page" : `a body that is not JSON (${type})`;
  return `The service answered HTTP ${status} with ${cleanText(kind, 80)}.`;
}

function retryAt(status: number, headers: HeaderBag): number | undefined {
  if (status !== 429 && status !== 503) return undefined;
  const now = Date.now();
  const delay = parseRetryAfter(headerValue(headers, "retry-after"), now);
  if (delay !== undefined) return now + Math.min(delay, DEFAULT_MAX_WAIT_MS);
  return status === 429 ? parseResetHeader(headerValue(headers, "x-ratelimit-reset"), now) : undefined;
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

function throwing(error: Error): never {
  throw error;
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new AbortedError();
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, Number.isFinite(value) ? value : min));
}
