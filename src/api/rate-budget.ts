/** The key's request budget: background polls spend only what lies above a reserve for the user's calls. */
import { DEFAULT_RATE_LIMIT_PER_MINUTE } from "../models.js";
import { RateLimitError, type GenerationError } from "./errors.js";
import { abortable } from "./sleep.js";
import type { RequestPriority } from "./types.js";

export type HeaderBag = Record<string, string | string[] | undefined>;

/** Case-insensitive; the first value when the header came more than once. */
export function headerValue(headers: HeaderBag, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers)) {
    const first = Array.isArray(value) ? value[0] : value;
    if (key.toLowerCase() === wanted && first !== undefined) return first;
  }
  return undefined;
}

export interface RateBudget {
  /** Resolves when a request of this priority may be sent; rejects with AbortedError when the signal aborts. */
  acquire(priority: RequestPriority, signal?: AbortSignal): Promise<void>;
  /** Feeds every answer's status and X-RateLimit-* headers back; status 0 (no answer) only frees the slot. */
  observe(status: number, headers: HeaderBag): void;
  /** Milliseconds to wait before retrying after a 429, from the last headers seen (clamped). */
  retryDelayMs(headers?: HeaderBag): number;
  /** How long a request of this priority asked for now would wait, as far as the budget knows. */
  expectedWaitMs?(priority: RequestPriority): number;
}

/** Longest any wait derived from the service's headers may last: a minute's window plus slack. */
export const DEFAULT_MAX_WAIT_MS = 65_000;
/** The longest a user's own call waits out a 429 before answering it: most clients cut a call at ~60 s. */
export const MAX_FOREGROUND_429_WAIT_MS = 15_000;
export const MIN_RETRY_DELAY_MS = 250;
const WINDOW_MS = 60_000;
const HINTLESS_429_BASE_MS = 1000;
/** Epoch readings further than this from our clock are not timestamps of this window. */
const SANE_EPOCH_DISTANCE_MS = 24 * 60 * 60 * 1000;
/** A request that never reported back (no `observe`) stops counting as in flight after this long. */
const IN_FLIGHT_TTL_MS = 60_000;

/** Share of the window kept for foreground calls (at least one request), here and in the shared budget. */
export const RESERVE_FRACTION = 0.2;

export interface TokenBucketOptions {
  /** Epoch milliseconds; defaults to Date.now (faked by vi.useFakeTimers). */
  now?: () => number;
  random?: () => number;
}

/**
 * Window-seeded token bucket: until the first X-RateLimit-* headers it spaces requests at the spec's 60 per
 * minute; then the tokens are the window's remaining requests less ours in flight. Background requests spend
 * only the tokens above the reserve, first-in first-out, spread over the rest of the window.
 */
export class TokenBucketBudget implements RateBudget {
  private readonly now: () => number;
  private readonly random: () => number;
  private limit = DEFAULT_RATE_LIMIT_PER_MINUTE;
  /** False until a usable X-RateLimit-Remaining header arrives. */
  private seeded = false;
  private remaining = 0;
  private resetAt = 0;
  /** Unseeded pacing: the earliest time of the next grant. */
  private nextPacedAt = 0;
  private lastBackgroundAt = Number.NEGATIVE_INFINITY;
  /** 429s in a row that named no usable reset, and answers in a row with nothing left and no usable reset. */
  private hintless429s = 0;
  private hintlessEmpty = 0;
  /** Acquire times of requests not yet observed, oldest first. */
  private inFlight: number[] = [];
  private readonly queues: Record<RequestPriority, Array<() => void>> = { foreground: [], background: [] };
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timerAt = Number.POSITIVE_INFINITY;

  constructor(options: TokenBucketOptions = {}) {
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
  }

  acquire(priority: RequestPriority, signal?: AbortSignal): Promise<void> {
    let grant: () => void;
    const queue = this.queues[priority];
    return abortable<void>(
      signal,
      (resolve) => {
        queue.push((grant = resolve));
        this.pump();
      },
      () => {
        if (queue.includes(grant)) queue.splice(queue.indexOf(grant), 1);
        this.pump();
      },
    );
  }

  observe(status: number, headers: HeaderBag): void {
    const now = this.now();
    this.inFlight.shift();
    if (status === 0) return this.pump();
    if (status !== 429) this.hintless429s = 0;
    const limit = parseCount(headerValue(headers, "x-ratelimit-limit"));
    if (limit !== undefined && limit > 0) this.limit = Math.min(100_000, limit);
    const headerRemaining = parseCount(headerValue(headers, "x-ratelimit-remaining"));
    const headerReset = parseResetHeader(headerValue(headers, "x-ratelimit-reset"), now);

    if (status === 429) {
      // Without a usable hint a whole window would outlast the call: back off briefly, doubling.
      const until =
        retryHint(headers, now) ?? now + Math.min(WINDOW_MS, HINTLESS_429_BASE_MS * 2 ** this.hintless429s++);
      this.seeded = true;
      this.remaining = 0;
      this.resetAt = Math.min(Math.max(until, now + MIN_RETRY_DELAY_MS), now + DEFAULT_MAX_WAIT_MS);
      return this.pump();
    }
    if (headerRemaining === undefined) return this.pump();

    this.refresh(now);
    if (headerReset === undefined && headerRemaining === 0) {
      // "Nothing left" without a readable reset: probe again soon rather than hold every call a minute.
      this.remaining = 0;
      this.seeded = true;
      this.resetAt = now + Math.min(WINDOW_MS, HINTLESS_429_BASE_MS * 2 ** this.hintlessEmpty++);
      return this.pump();
    }
    this.hintlessEmpty = 0;
    // The header counted this request; the others still in flight may not have reached the service yet.
    const fromHeader = Math.max(0, headerRemaining - this.inFlight.length);
    const resetAt = headerReset ?? now + WINDOW_MS;
    // A first reading, or a window we had not modelled yet, is believed; otherwise the lower count wins.
    const fresh = !this.seeded || resetAt > this.resetAt + 1000;
    this.remaining = fresh ? Math.min(fromHeader, this.limit) : Math.min(this.remaining, fromHeader);
    this.seeded = true;
    this.resetAt = resetAt;
    this.pump();
  }

  retryDelayMs(headers?: HeaderBag): number {
    const now = this.now();
    const hinted = headers && retryHint(headers, now);
    let delay = hinted === undefined ? undefined : hinted - now;
    if (delay === undefined && this.seeded && this.remaining <= 0) delay = this.resetAt - now;
    const jitter = this.random() * 250;
    return Math.round(Math.min(DEFAULT_MAX_WAIT_MS, Math.max(MIN_RETRY_DELAY_MS, delay ?? 1000) + jitter));
  }

  expectedWaitMs(priority: RequestPriority): number {
    const now = this.now();
    this.refresh(now);
    return Math.max(0, this.grantTime(priority, now) - now);
  }

  /** What the budget believes now; for logs and tests. */
  snapshot() {
    this.refresh(this.now());
    const { seeded, limit, remaining, resetAt } = this;
    const queued = this.queues.foreground.length + this.queues.background.length;
    return { seeded, limit, remaining, resetAt, reserve: this.reserve(), queued };
  }

  private reserve(): number {
    return Math.min(this.limit - 1, Math.max(1, Math.ceil(this.limit * RESERVE_FRACTION)));
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
    for (const priority of ["foreground", "background"] as const) {
      const queue = this.queues[priority];
      // Background never jumps the foreground queue.
      while (queue.length > 0 && (priority === "foreground" || this.queues.foreground.length === 0)) {
        const at = this.grantTime(priority, now);
        if (at > now) {
          wakeAt = Math.min(wakeAt, at);
          break;
        }
        const grant = queue.shift() as () => void;
        this.inFlight.push(now);
        if (this.seeded) this.remaining -= 1;
        else this.nextPacedAt = now + WINDOW_MS / this.limit;
        if (priority === "background") this.lastBackgroundAt = now;
        grant();
      }
    }
    if (wakeAt !== Number.POSITIVE_INFINITY && this.timer !== undefined && this.timerAt <= wakeAt) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    if (wakeAt === Number.POSITIVE_INFINITY) return;
    this.timerAt = wakeAt;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.pump();
      },
      Math.min(DEFAULT_MAX_WAIT_MS, Math.max(1, Math.ceil(wakeAt - now))),
    );
    // An idle queue must not keep the process alive.
    this.timer.unref?.();
  }

  private grantTime(priority: RequestPriority, now: number): number {
    if (!this.seeded) return Math.max(now, this.nextPacedAt);
    const usable = priority === "foreground" ? this.remaining : this.remaining - this.reserve();
    if (usable < 1) return Math.max(this.resetAt, now + 1);
    if (priority === "foreground") return now;
    // Spread the background share over the rest of the window: fair to a sliding-window limiter too.
    return Math.max(now, this.lastBackgroundAt + Math.max(0, this.resetAt - now) / usable);
  }
}

type HeaderInput = string | readonly string[] | number | undefined;

/**
 * Reads `X-RateLimit-Reset` (epoch seconds or milliseconds, seconds from now, an HTTP-date) as an epoch in ms
 * within [nowMs, nowMs + maxWaitMs]; undefined when malformed, negative, or far from our clock.
 */
export function parseResetHeader(value: HeaderInput, nowMs: number, maxWaitMs = DEFAULT_MAX_WAIT_MS) {
  const delay = parseRetryAfter(value, nowMs);
  // Read as Retry-After is, but seconds from now may reach no further than an epoch may (an HTTP-date may).
  const tooFar = delay !== undefined && delay > SANE_EPOCH_DISTANCE_MS && parseNumber(value) !== undefined;
  return delay === undefined || tooFar ? undefined : nowMs + Math.min(delay, maxWaitMs);
}

/** Reads `Retry-After` (delta seconds, an HTTP-date, or an epoch) as a delay in ms, not clamped; past: 0. */
export function parseRetryAfter(value: HeaderInput, nowMs: number): number | undefined {
  const text = firstText(value);
  const n = parseNumber(text);
  if (n !== undefined) {
    if (n < 0) return undefined;
    if (n < 1e9) return n * 1000;
    const at = n >= 1e11 ? n : n * 1000;
    return Math.abs(at - nowMs) > SANE_EPOCH_DISTANCE_MS ? undefined : Math.max(0, at - nowMs);
  }
  // HTTP-date ("Wed, 21 Oct 2015 07:28:00 GMT"); demand a letter so bare junk is not read as a date.
  const at = text !== undefined && /[a-z]/i.test(text) ? Date.parse(text) : Number.NaN;
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

function firstText(value: HeaderInput): string | undefined {
  const raw = typeof value === "number" ? String(value) : Array.isArray(value) ? value[0] : value;
  const text = typeof raw === "string" ? raw.trim() : "";
  return text === "" ? undefined : text;
}

/** When an answer says to ask again (epoch ms): a 429's or 503's Retry-After, else a 429's window reset. */
export function retryHint(headers: HeaderBag, nowMs: number, status = 429): number | undefined {
  if (status !== 429 && status !== 503) return undefined;
  const delay = parseRetryAfter(headerValue(headers, "retry-after"), nowMs);
  if (delay !== undefined) return nowMs + Math.min(delay, DEFAULT_MAX_WAIT_MS);
  return status === 429 ? parseResetHeader(headerValue(headers, "x-ratelimit-reset"), nowMs) : undefined;
}

/** A leading decimal number ("60", "59.5", "60, 60" from a folded duplicate header); nothing else. */
function parseNumber(value: HeaderInput): number | undefined {
  const match = /^(-?\d+(?:\.\d+)?)\s*(?:,|$)/.exec(firstText(value) ?? "");
  const n = Number(match?.[1] ?? Number.NaN);
  return Number.isFinite(n) ? n : undefined;
}

function parseCount(value: HeaderInput): number | undefined {
  const n = parseNumber(value);
  return n === undefined || n < 0 ? undefined : Math.floor(n);
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
