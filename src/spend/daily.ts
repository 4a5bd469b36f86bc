/**
 * The daily limit (GENERATION_DAILY_CREDITS): estimated credits one caller may start per UTC day, reserved
 * when a start is about to be sent (tasks/starter.ts, after the duplicate guard decided it is new) and given
 * back only when the service said it did nothing. The totals live in a SpendStore: this process's file, or
 * Redis for every replica.
 */
import { createHash } from "node:crypto";
import { BudgetExceededError, GenerationError } from "../api/errors.js";
import { fix } from "../advice.js";
import type { SpendStore } from "../state/shared-state.js";
import { SpendRecordUnavailableError } from "./local-store.js";

/**
 * What get_credits reports of a caller's day: the count, or (`known: false`) why it cannot be told now and
 * what to do, rather than a count it cannot vouch for.
 */
export type Allowance = {
  daily_limit: number;
  /** ISO time of the next UTC midnight, when the day's count starts again. */
  resets_at: string;
} & ({ used_today: number; remaining_today: number } | { known: false; reason: string; next_step: string });

/** A reservation that the service may still refuse: `release` gives it back. */
export interface Reservation {
  release(): Promise<void>;
}

/** `YYYY-MM-DD` of the UTC day of `now`. */
export function utcDay(now: number): string {
  return new Date(now).toISOString().slice(0, 10);
}

/** The next UTC midnight after `now`, as ISO text. */
export function nextUtcMidnight(now: number): string {
  const date = new Date(now);
  return new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1)).toISOString();
}

/** Credits as the store counts them: whole hundredths. */
function toHundredths(credits: number): number {
  return Math.round(credits * 100);
}

function fromHundredths(amount: number): number {
  return Math.round(amount) / 100;
}

/**
 * The name a caller's spend is stored under: a digest of its id (itself a digest of the credential), so the
 * store never holds anything a credential could be read or replayed from.
 */
export function spendCaller(callerId: string): string {
  return createHash("sha256").update(`generation-mcp spend\n${callerId}`).digest("hex").slice(0, 32);
}

export class DailySpend {
  constructor(
    readonly limit: number,
    private readonly store: SpendStore,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Reserves `credits` of the caller's day, or throws budget_exceeded naming what remains and when it
   * resets. Throws SharedStateUnavailableError when the replicas cannot agree on it.
   */
  async reserve(callerId: string, credits: number, what: string): Promise<Reservation> {
    const now = this.now();
    const day = utcDay(now);
    const caller = spendCaller(callerId);
    const amount = toHundredths(credits);
    const { reserved, used } = await this.store.reserve(caller, day, amount, toHundredths(this.limit));
    if (!reserved) throw this.refusal(credits, fromHundredths(used), now, what);
    let released = false;
    return {
      release: async () => {
        if (released) return;
        released = true;
        await this.store.release(caller, day, amount);
      },
    };
  }

  async allowance(callerId: string): Promise<Allowance> {
    const now = this.now();
    const day = { daily_limit: this.limit, resets_at: nextUtcMidnight(now) };
    let used: number;
    try {
      used = fromHundredths(await this.store.used(spendCaller(callerId), utcDay(now)));
    } catch (error) {
      if (!(error instanceof GenerationError)) throw error;
      const why =
        error instanceof SpendRecordUnavailableError
          ? `today's spend record ${error.problem}`
          : error.message;
      return {
        ...day,
        known: false,
        reason: `This server cannot tell how much of today's limit is left, and sends no start until it can: ${why}.`,
        next_step: error.nextStep,
      };
    }
    return {
      ...day,
      used_today: used,
      remaining_today: Math.max(0, Math.round((this.limit - used) * 100) / 100),
    };
  }

  private refusal(credits: number, used: number, now: number, what: string): BudgetExceededError {
    const remaining = Math.max(0, Math.round((this.limit - used) * 100) / 100);
    const resetsAt = nextUtcMidnight(now);
    return new BudgetExceededError(
      `${what.charAt(0).toUpperCase()}${what.slice(1)} is estimated at ${credits} credits, but only ${remaining} of today's ${this.limit} credits remain for this caller (GENERATION_DAILY_CREDITS; ${used} started today). The allowance resets at ${resetsAt} (midnight UTC).`,
      {
        nextStep: `The start was not sent to the service and nothing was charged. Wait until ${resetsAt}, or choose a request that fits the remaining ${remaining} credits (dry_run: true shows the cost; get_credits shows the allowance), or ask the user to ${fix("spend_limits")}.`,
      },
    );
  }
}
