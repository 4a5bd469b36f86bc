/**
 * The daily limit (GENERATION_DAILY_CREDITS): estimated credits one caller may start per UTC day, reserved
 * just before a start is sent and given back only when the service said it did nothing.
 */
import { createHash } from "node:crypto";
import { fix } from "../advice.js";
import { BudgetExceededError, GenerationError } from "../api/errors.js";
import { StateFileError } from "../state/local/store.js";
import type { SpendStore } from "../state/records.js";

function utcDay(now: number): string {
  return new Date(now).toISOString().slice(0, 10);
}

function nextUtcMidnight(now: number): string {
  return new Date(Date.parse(utcDay(now)) + 24 * 60 * 60 * 1000).toISOString();
}

/** The store counts whole hundredths of a credit (the price table has halves). */
const hundredths = (credits: number) => Math.round(credits * 100);
const credits = (amount: number) => Math.round(amount) / 100;

export class DailySpend {
  constructor(
    readonly limit: number,
    private readonly store: SpendStore,
  ) {}

  /** Reserves `amount` of the caller's day, or throws budget_exceeded (or the store's error). */
  async reserve(callerId: string, amount: number, what: string) {
    const now = Date.now();
    const [caller, day, cents] = [spendCaller(callerId), utcDay(now), hundredths(amount)];
    const { reserved, used } = await this.store.reserve(caller, day, cents, hundredths(this.limit));
    if (!reserved) {
      const [remaining, resetsAt] = [this.remaining(credits(used)), nextUtcMidnight(now)];
      throw new BudgetExceededError(
        `${what.charAt(0).toUpperCase()}${what.slice(1)} is estimated at ${amount} credits, but only ${remaining} of today's ${this.limit} credits remain for this caller (GENERATION_DAILY_CREDITS; ${credits(used)} started today). The allowance resets at ${resetsAt} (midnight UTC).`,
        {
          nextStep: `The start was not sent to the service and nothing was charged. Wait until ${resetsAt}, or choose a request that fits the remaining ${remaining} credits (dry_run: true shows the cost; get_credits shows the allowance), or ask the user to ${fix("spend_limits")}.`,
        },
      );
    }
    let released = false;
    return {
      release: async () => {
        if (released) return;
        released = true;
        await this.store.release(caller, day, cents);
      },
    };
  }

  /** What get_credits reports of a caller's day: the count, or why it cannot be told now and what to do. */
  async allowance(callerId: string) {
    const now = Date.now();
    const day = { daily_limit: this.limit, resets_at: nextUtcMidnight(now) };
    try {
      const used = credits(await this.store.used(spendCaller(callerId), utcDay(now)));
      return { ...day, used_today: used, remaining_today: this.remaining(used) };
    } catch (error) {
      if (!(error instanceof GenerationError)) throw error;
      const why = error instanceof StateFileError ? `today's spend record ${error.problem}` : error.message;
      return {
        ...day,
        known: false as const,
        reason: `This server cannot tell how much of today's limit is left, and sends no start until it can: ${why}.`,
        next_step: error.nextStep,
      };
    }
  }

  private remaining(used: number): number {
    return Math.max(0, credits(hundredths(this.limit - used)));
  }
}

/** A digest of the caller's id (itself a digest): the store holds nothing a credential could be read from. */
function spendCaller(callerId: string): string {
  return createHash("sha256").update(`generation-mcp spend\n${callerId}`).digest("hex").slice(0, 32);
}
