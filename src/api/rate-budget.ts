/**
 * The key's request budget, shared by every call of the process. The HTTP layer calls `acquire` before
 * every request and `observe` after every answer; background polls only spend what lies above a reserve
 * kept for the user's own calls, so waiting on many tasks never starves generate or credits.
 */
import { DEFAULT_RATE_LIMIT_PER_MINUTE } from "../models.js";
import { AbortedError, RateLimitError, type GenerationError } from "./errors.js";
import { headerValue, type HeaderBag } from "./headers.js";
import type { RequestPriority } from "./types.js";

export interface RateBudget {
  /** Resolves when a request of this priority may be sent; rejects with AbortedError when the signal aborts. */
  acquire(priority: RequestPriority, signal?: AbortSignal): Promise<void>;
  /**
   * Feeds the status and X-RateLimit-* headers of every answer back into the budget. Status 0 means "no
   * answer came" (connection failed or timed out): it only frees the in-flight slot taken by `acquire`.
   */
  observe(status: number, headers: HeaderBag): void;
  /** Milliseconds to wait before retrying after a 429, from the last headers seen (clamped). */
  retryDelayMs(headers?: HeaderBag): number;
  /** How long a request of this priority asked for now would wait, as far as the budget knows. */
  expectedWaitMs?(priority: RequestPriority): number;
}

export class UnlimitedBudget implements RateBudget {
  async acquire(): Promise<void> {}
  observe(): void {}
  retryDelayMs(): number {
    return 1000;
  }
}

/** Longest any wait derived from the service's headers may last: a minute's window plus slack. */
export const DEFAULT_MAX_WAIT_MS = 65_000;
/**
 * The longest a call made by the user (not a background poll) waits out a 429 before answering
 * rate_limit_exceeded instead: most MCP clients cut a tool call at about 60 s.
 */
export const MAX_FOREGROUND_429_WAIT_MS = 15_000;
export const MIN_RETRY_DELAY_MS = 250;
const WINDOW_MS = 60_000;
const HINTLESS_429_BASE_MS = 1000;
/** Epoch readings further than this from our clock are not timestamps of this window. */
const SANE_EPOCH_DISTANCE_MS = 24 * 60 * 60 * 1000;
/** A request that never reported back (no `observe`) stops counting as in flight after this long. */
const IN_FLIGHT_TTL_MS = 60_000;
const MAX_LIMIT = 100_000;

export interface TokenBucketOptions {
  /** Epoch milliseconds; defaults to Date.now (faked by vi.useFakeTimers). */
  now?: () => number;
  /** Assumed before any header arrives; defaults to the spec's 60 per minute. */
  limitPerMinute?: number;
  /** Share of the window kept for foreground calls (at least one request). Default 0.2. */
  reserveFraction?: number;
  /** Ceiling of every wait read from headers. Default 65 s. */
  maxWaitMs?: number;
  /** For jitter; defaults to Math.random. */
  random?: () => number;
}

interface Waiter {
  priority: RequestPriority;
  resolve: () => void;
  reject: (error: Error) => void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

/**
 * Window-seeded token bucket. Until the first answer it knows nothing about the key, so it spaces requests
 * evenly at `limitPerMinute` (the first one goes at once). Once the service has sent `X-RateLimit-*`, the
 * tokens are the window's remaining requests (minus our own requests still in flight), refilled to the
 * limit when the window resets. Foreground requests may spend every token; background requests only the
 * tokens above the reserve, served first-in first-out and spread evenly over what is left of the window.
 */
export class TokenBucketBudget implements RateBudget {
  private readonly now: () => number;
  private readonly reserveFraction: number;
  private readonly maxWaitMs: number;
  private readonly random: () => number;

  private limit: number;
  /** False until a usable X-RateLimit-Remaining header arrives. */
  private seeded = false;
  private remaining = 0;
  private resetAt = 0;
  /** Unseeded pacing: the earliest time of the next grant. */
  private nextPacedAt = 0;
  private lastBackgroundAt = Number.NEGATIVE_INFINITY;
  /** 429s in a row that named no usable reset. */
  private hintless429s = 0;
  /** Answers in a row with `X-RateLimit-Remaining: 0` and no usable reset. */
  private hintlessEmpty = 0;
  /** Acquire times of requests not yet observed, oldest first. */
  private inFlight: number[] = [];

  private readonly foreground: Waiter[] = [];
  private readonly background: Waiter[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timerAt = Number.POSITIVE_INFINITY;

  constructor(options: TokenBucketOptions = {}) {
    this.now = options.now ?? Date.now;
    this.limit = clampLimit(options.limitPerMinute ?? DEFAULT_RATE_LIMIT_PER_MINUTE);
    this.reserveFraction = Math.min(0.9, Math.max(0, options.reserveFraction ?? 0.2));
    this.maxWaitMs = Math.max(MIN_RETRY_DELAY_MS, options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS);
    this.random = options.random ?? Math.random;
  }

  acquire(priority: RequestPriority, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(new AbortedError());
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { priority, resolve, reject, signal, onAbort: undefined };
      if (signal) {
        waiter.onAbort = () => {
          this.remove(waiter);
          reject(new AbortedError());
          this.pump();
        };
        signal.addEventListener("abort", waiter.onAbort, { once: true });
      }
      (priority === "foreground" ? this.foreground : this.background).push(waiter);
      this.pump();
    });
  }

  observe(status: number, headers: HeaderBag): void {
    const now = this.now();
    this.inFlight.shift();
    if (status === 0) return this.pump();
    if (status !== 429) this.hintless429s = 0;

    const limit = parseCount(headerValue(headers, "x-ratelimit-limit"));
    if (limit !== undefined && limit > 0) this.limit = clampLimit(limit);
    const headerRemaining = parseCount(headerValue(headers, "x-ratelimit-remaining"));
    const headerReset = parseResetHeader(headerValue(headers, "x-ratelimit-reset"), now, this.maxWaitMs);

    if (status === 429) {
      const retryAfter = parseRetryAfter(headerValue(headers, "retry-after"), now);
      // Without a usable hint (headers missing or garbage) a whole window would outlast the tool call:
      // back off briefly instead, doubling while such 429s keep coming.
      const until =
        retryAfter !== undefined
          ? now + Math.min(retryAfter, this.maxWaitMs)
          : (headerReset ?? now + Math.min(WINDOW_MS, HINTLESS_429_BASE_MS * 2 ** this.hintless429s++));
      this.seeded = true;
      this.remaining = 0;
      this.resetAt = Math.min(Math.max(until, now + MIN_RETRY_DELAY_MS), now + this.maxWaitMs);
      return this.pump();
    }
    if (headerRemaining === undefined) return this.pump();

    this.refresh(now);
    // The header counted this request; the others still in flight may not have reached the service yet.
    const fromHeader = Math.max(0, headerRemaining - this.inFlight.length);
    let resetAt = headerReset ?? now + WINDOW_MS;
    if (headerReset === undefined && headerRemaining === 0) {
      // "Nothing left" with a reset we cannot read (absent, garbage, absurdly far): believing a whole window
      // would hold every call for a minute. Probe again soon instead; a 429 then tells us more.
      resetAt = now + Math.min(WINDOW_MS, HINTLESS_429_BASE_MS * 2 ** this.hintlessEmpty++);
      this.remaining = 0;
      this.seeded = true;
      this.resetAt = resetAt;
      return this.pump();
    }
    this.hintlessEmpty = 0;
    if (!this.seeded || resetAt > this.resetAt + 1000) {
      // First reading, or the service has started a window we had not modelled yet.
      this.remaining = Math.min(fromHeader, this.limit);
    } else {
      this.remaining = Math.min(this.remaining, fromHeader);
    }
    this.seeded = true;
    this.resetAt = resetAt;
    this.pump();
  }

  retryDelayMs(headers?: HeaderBag): number {
    const now = this.now();
    let delay: number | undefined;
    if (headers) {
      delay = parseRetryAfter(headerValue(headers, "retry-after"), now);
      if (delay === undefined) {
        const reset = parseResetHeader(headerValue(headers, "x-ratelimit-reset"), now, this.maxWaitMs);
        if (reset !== undefined) delay = reset - now;
      }
    }
    if (delay === undefined && this.seeded && this.remaining <= 0) delay = this.resetAt - now;
    delay ??= 1000;
    const jitter = this.random() * 250;
    return Math.round(Math.min(this.maxWaitMs, Math.max(MIN_RETRY_DELAY_MS, delay) + jitter));
  }

  expectedWaitMs(priority: RequestPriority): number {
    const now = this.now();
    this.refresh(now);
    return Math.max(0, this.grantTime(priority, now) - now);
  }

  /** What the budget believes now; for logs and tests. */
  snapshot(): {
    seeded: boolean;
    limit: number;
    remaining: number;
    resetAt: number;
    reserve: number;
    queued: number;
  } {
    this.refresh(this.now());
    return {
      seeded: this.seeded,
      limit: this.limit,
      remaining: this.remaining,
      resetAt: this.resetAt,
      reserve: this.reserve(),
      queued: this.foreground.length + this.background.length,
    };
  }

  private reserve(): number {
    return Math.min(this.limit - 1, Math.max(1, Math.ceil(this.limit * this.reserveFraction)));
  }

  private refresh(now: number): void {
    this.inFlight = this.inFlight.filter((at) => now - at < IN_FLIGHT_TTL_MS);
    if (this.seeded && now >= this.resetAt) {
      // We assume a fresh window; the next answer's headers correct the guess.
      this.remaining = Math.max(0, this.limit - this.inFlight.length);
      this.resetAt = now + WINDOW_MS;
    }
  }

  /** Grants what can be granted now and arms one timer for the earliest moment anything else could be. */
  private pump(): void {
    const now = this.now();
    this.refresh(now);
    let wakeAt = Number.POSITIVE_INFINITY;

    while (this.foreground.length > 0) {
      const at = this.grantTime("foreground", now);
      if (at > now) {
        wakeAt = Math.min(wakeAt, at);
        break;
      }
      this.grant(this.foreground.shift(), "foreground", now);
    }
    // Background never jumps the foreground queue.
    while (this.background.length > 0 && this.foreground.length === 0) {
      const at = this.grantTime("background", now);
      if (at > now) {
        wakeAt = Math.min(wakeAt, at);
        break;
      }
      this.grant(this.background.shift(), "background", now);
    }
    this.arm(wakeAt, now);
  }

  /** The earliest time a request of this priority may go, given the current state. */
  private grantTime(priority: RequestPriority, now: number): number {
    if (!this.seeded) return Math.max(now, this.nextPacedAt);
    const usable = priority === "foreground" ? this.remaining : this.remaining - this.reserve();
    if (usable < 1) return Math.max(this.resetAt, now + 1);
    if (priority === "foreground") return now;
    // Spread the background share over the rest of the window: fair to a sliding-window limiter too.
    const spacing = Math.max(0, this.resetAt - now) / usable;
    return Math.max(now, this.lastBackgroundAt + spacing);
  }

  private grant(waiter: Waiter | undefined, priority: RequestPriority, now: number): void {
    if (!waiter) return;
    if (waiter.signal && waiter.onAbort) waiter.signal.removeEventListener("abort", waiter.onAbort);
    this.inFlight.push(now);
    if (this.seeded) this.remaining -= 1;
    else this.nextPacedAt = now + WINDOW_MS / this.limit;
    if (priority === "background") this.lastBackgroundAt = now;
    waiter.resolve();
  }

  private arm(wakeAt: number, now: number): void {
    if (wakeAt === Number.POSITIVE_INFINITY) return this.disarm();
    if (this.timer !== undefined && this.timerAt <= wakeAt) return;
    this.disarm();
    this.timerAt = wakeAt;
    const delay = Math.min(this.maxWaitMs, Math.max(1, Math.ceil(wakeAt - now)));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.timerAt = Number.POSITIVE_INFINITY;
      this.pump();
    }, delay);
    // An idle queue must not keep the process alive.
    this.timer.unref?.();
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
  }

  private remove(waiter: Waiter): void {
    for (const queue of [this.foreground, this.background]) {
      const index = queue.indexOf(waiter);
      if (index >= 0) queue.splice(index, 1);
    }
  }
}

type HeaderInput = string | readonly string[] | number | undefined;

/**
 * Reads `X-RateLimit-Reset` as an epoch in milliseconds, whatever the service meant: epoch seconds
 * (~1.7e9), epoch milliseconds (~1.7e12), seconds from now, or an HTTP-date. The answer lies in [nowMs, nowMs + maxWaitMs];
 * undefined for values that are malformed, negative, or epochs far from our clock (e.g. 1e12 read as a delay).
 */
export function parseResetHeader(
  value: HeaderInput,
  nowMs: number,
  maxWaitMs: number = DEFAULT_MAX_WAIT_MS,
): number | undefined {
  const n = parseNumber(value);
  if (n === undefined) {
    // Some services send an HTTP-date here, as in Retry-After.
    const delay = parseRetryAfter(value, nowMs);
    return delay === undefined ? undefined : Math.min(nowMs + delay, nowMs + maxWaitMs);
  }
  if (n < 0) return undefined;
  let at: number;
  if (n >= 1e11) at = n;
  else if (n >= 1e9) at = n * 1000;
  else at = nowMs + n * 1000;
  if (Math.abs(at - nowMs) > SANE_EPOCH_DISTANCE_MS) return undefined;
  return Math.min(Math.max(at, nowMs), nowMs + maxWaitMs);
}

/**
 * Reads `Retry-After` as a delay in milliseconds: delta seconds or an HTTP-date (an epoch in seconds is
 * tolerated too). Not clamped; undefined for malformed or negative values. A past date means 0.
 */
export function parseRetryAfter(value: HeaderInput, nowMs: number): number | undefined {
  const text = firstText(value);
  if (text === undefined) return undefined;
  const n = parseNumber(text);
  if (n !== undefined) {
    if (n < 0) return undefined;
    if (n >= 1e9) {
      const at = n >= 1e11 ? n : n * 1000;
      return Math.abs(at - nowMs) > SANE_EPOCH_DISTANCE_MS ? undefined : Math.max(0, at - nowMs);
    }
    return n * 1000;
  }
  // HTTP-date ("Wed, 21 Oct 2015 07:28:00 GMT"); demand a letter so bare junk is not read as a date.
  if (!/[a-z]/i.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

function firstText(value: HeaderInput): string | undefined {
  const raw = typeof value === "number" ? String(value) : Array.isArray(value) ? value[0] : value;
  if (typeof raw !== "string") return undefined;
  const text = raw.trim();
  return text === "" ? undefined : text;
}

/** A leading decimal number ("60", "59.5", "60, 60" from a folded duplicate header); nothing else. */
function parseNumber(value: HeaderInput): number | undefined {
  const text = firstText(value);
  if (text === undefined) return undefined;
  const match = /^(-?\d+(?:\.\d+)?)\s*(?:,|$)/.exec(text);
  if (!match?.[1]) return undefined;
  const n = Number(match[1]);
  return Number.isFinite(n) ? n : undefined;
}

function parseCount(value: HeaderInput): number | undefined {
  const n = parseNumber(value);
  return n === undefined || n < 0 ? undefined : Math.floor(n);
}

function clampLimit(limit: number): number {
  return Number.isFinite(limit)
    ? Math.min(MAX_LIMIT, Math.max(1, Math.floor(limit)))
    : DEFAULT_RATE_LIMIT_PER_MINUTE;
}

/** The 429 to give the user when waiting out the window would outlast a tool call; nothing was processed. */
export function tooLongToWait(error: GenerationError, delayMs: number): GenerationError {
  const seconds = Math.ceil(delayMs / 1000);
  return new RateLimitError(`${error.message} The window resets in about ${seconds} s.`, {
    status: error.status,
    retryAtMs: Date.now() + delayMs,
    requestId: error.requestId,
    nextStep: `Nothing was charged. Wait about ${seconds} s for the service's rate limit to reset, then call again.`,
  });
}
