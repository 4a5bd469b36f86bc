/**
 * PLACEHOLDER — owned by the waiting work (issue 4); replaced by the token bucket.
 * The HTTP layer calls `acquire` before every request and `observe` after every answer.
 */
import type { RequestPriority } from "./types.js";

export type HeaderBag = Record<string, string | string[] | undefined>;

export interface RateBudget {
  /** Resolves when a request of this priority may be sent; rejects with AbortedError when the signal aborts. */
  acquire(priority: RequestPriority, signal?: AbortSignal): Promise<void>;
  /** Feeds the status and X-RateLimit-* headers of every answer back into the budget. */
  observe(status: number, headers: HeaderBag): void;
  /** Milliseconds to wait before retrying after a 429, from the last headers seen (clamped). */
  retryDelayMs(headers?: HeaderBag): number;
}

export class UnlimitedBudget implements RateBudget {
  async acquire(): Promise<void> {}
  observe(): void {}
  retryDelayMs(): number {
    return 1000;
  }
}
