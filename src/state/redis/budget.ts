/**
 * The key's rate budget shared by every replica, a token bucket in Redis (scripts.ts). When Redis does not
 * answer, the replica falls back on its local bucket, kept seeded from the same headers: a possible 429 the
 * usual backoff absorbs.
 */
import { AbortedError } from "../../api/errors.js";
import {
  DEFAULT_MAX_WAIT_MS,
  MIN_RETRY_DELAY_MS,
  RESERVE_FRACTION,
  headerValue,
  parseResetHeader,
  retryHint,
  type HeaderBag,
  type RateBudget,
  type TokenBucketBudget,
} from "../../api/rate-budget.js";
import { sleep } from "../../api/sleep.js";
import type { RequestPriority } from "../../api/types.js";
import { DEFAULT_RATE_LIMIT_PER_MINUTE } from "../../models.js";
import type { KeyContext } from "./context.js";

/** Longest one sleep between two takes: another replica's answer may free a token sooner than predicted. */
const MAX_STEP_MS = 1000;
const HINTLESS_BACKOFF_MS = 1000;
/** The budget's keys go once the key has been idle this long. */
const BUDGET_TTL_MS = 10 * 60 * 1000;

export class RedisBudget implements RateBudget {
  /** Grant ids in the order they were given; undefined for a grant of the local fallback. */
  private readonly grants: Array<string | undefined> = [];
  private nextGrant = 0;
  private readonly keys: [string, string];

  constructor(
    private readonly context: KeyContext,
    private readonly local: TokenBucketBudget,
  ) {
    this.keys = [context.key("budget"), context.key("inflight")];
  }

  async acquire(priority: RequestPriority, signal?: AbortSignal): Promise<void> {
    for (;;) {
      if (signal?.aborted) throw new AbortedError();
      const grantId = `${this.context.owner}:${this.nextGrant++}`;
      let waitMs: number;
      try {
        waitMs = Number(
          await this.context.commands.budgetTake(
            ...this.keys,
            Date.now(),
            priority === "background" ? 1 : 0,
            RESERVE_FRACTION,
            DEFAULT_RATE_LIMIT_PER_MINUTE,
            grantId,
            BUDGET_TTL_MS,
          ),
        );
      } catch (error) {
        this.context.onError(error);
        await this.local.acquire(priority, signal);
        this.grants.push(undefined);
        return;
      }
      if (waitMs <= 0) {
        this.grants.push(grantId);
        return;
      }
      await sleep(Math.min(waitMs, MAX_STEP_MS), signal);
    }
  }

  observe(status: number, headers: HeaderBag): void {
    const grantId = this.grants.shift();
    // The local bucket learns the window too: it serves if Redis goes away.
    this.local.observe(status, headers);
    if (grantId === undefined) return;
    const { now, limit, remaining, resetAt } = readHeaders(status, headers, Date.now());
    this.context.commands
      .budgetObserve(...this.keys, now, grantId, status, limit, remaining, resetAt, BUDGET_TTL_MS)
      .catch(this.context.onError);
  }

  retryDelayMs(headers?: HeaderBag): number {
    return this.local.retryDelayMs(headers);
  }

  /** The local bucket follows the same headers (the service counts every replica's requests). */
  expectedWaitMs(priority: RequestPriority): number {
    return this.local.expectedWaitMs(priority);
  }
}

/** The answer's rate-limit headers as the observe script takes them (-1: absent or unreadable). */
function readHeaders(status: number, headers: HeaderBag, now: number) {
  const count = (name: string) => {
    const value = Number(headerValue(headers, name));
    return Number.isFinite(value) && value >= 0 ? Math.floor(value) : -1;
  };
  const limit = Math.min(100_000, count("x-ratelimit-limit"));
  const remaining = count("x-ratelimit-remaining");
  let resetAt = parseResetHeader(headerValue(headers, "x-ratelimit-reset"), now) ?? -1;
  if (status === 429) {
    const until = retryHint(headers, now) ?? now + HINTLESS_BACKOFF_MS;
    resetAt = Math.min(Math.max(until, now + MIN_RETRY_DELAY_MS), now + DEFAULT_MAX_WAIT_MS);
  } else if (remaining === 0 && resetAt < 0) {
    // "Nothing left" with no reset we can read: probe again soon rather than hold every replica a minute.
    resetAt = now + HINTLESS_BACKOFF_MS;
  }
  return { now, limit: limit > 0 ? limit : -1, remaining, resetAt };
}
