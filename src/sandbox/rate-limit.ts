import type { SandboxRateLimit } from "./types.js";

export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Unix seconds at which the window ends (rounded up, so a client waiting until then is never early). */
  resetS: number;
  /** Whole seconds until the reset, at least 1: the Retry-After of a 429. */
  retryAfterS: number;
}

interface Window {
  startMs: number;
  used: number;
}

/**
 * Fixed windows opened by the first counted request of a bucket, like most API gateways. The clock is the
 * sandbox's injectable one, so a test moves past a window without sleeping. Buckets are keyed by API key,
 * or by remote address for requests without a valid key; stale ones are swept so memory stays bounded.
 */
export class RateLimiter {
  private readonly windows = new Map<string, Window>();
  private lastSweepMs = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly config: SandboxRateLimit,
    private readonly clock: () => number,
  ) {
    if (!Number.isInteger(config.limit) || config.limit < 1)
      throw new RangeError("rateLimit.limit must be an integer >= 1");
    if (!(config.windowMs > 0)) throw new RangeError("rateLimit.windowMs must be > 0");
  }

  /** Counts one request; `allowed` is false once the window's limit is spent. */
  consume(bucket: string): RateLimitState & { allowed: boolean } {
    const now = this.clock();
    this.sweep(now);
    const window = this.current(bucket, now, true);
    const allowed = window.used < this.config.limit;
    if (allowed) window.used += 1;
    return { allowed, ...this.describe(window, now) };
  }

  /** The state without counting: for answers that never reach the limiter (404, 405). */
  peek(bucket: string): RateLimitState {
    const now = this.clock();
    return this.describe(this.current(bucket, now, false), now);
  }

  private current(bucket: string, now: number, create: boolean): Window {
    const existing = this.windows.get(bucket);
    if (existing && now < existing.startMs + this.config.windowMs) return existing;
    const fresh: Window = { startMs: now, used: 0 };
    if (create) this.windows.set(bucket, fresh);
    return fresh;
  }

  private describe(window: Window, now: number): RateLimitState {
    const endMs = window.startMs + this.config.windowMs;
    return {
      limit: this.config.limit,
      remaining: Math.max(0, this.config.limit - window.used),
      resetS: Math.ceil(endMs / 1000),
      retryAfterS: Math.max(1, Math.ceil((endMs - now) / 1000)),
    };
  }

  private sweep(now: number): void {
    if (now - this.lastSweepMs < this.config.windowMs) return;
    this.lastSweepMs = now;
    for (const [bucket, window] of this.windows) {
      if (now >= window.startMs + this.config.windowMs) this.windows.delete(bucket);
    }
  }
}

export function rateLimitHeaders(state: RateLimitState): Record<string, string> {
  return {
    "X-RateLimit-Limit": String(state.limit),
    "X-RateLimit-Remaining": String(state.remaining),
    "X-RateLimit-Reset": String(state.resetS),
  };
}
