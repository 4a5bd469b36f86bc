/**
 * The start request itself: one logical start under one Idempotency-Key, sent once and again only after a
 * 429 (which the service answers before doing anything), within the call's deadline less the time a history
 * lookup needs. And the reading of its failure: which ones may have been processed (ambiguous), and the
 * error that then says a charge is possible.
 */
import { AbortedError, GenerationError } from "../api/errors.js";
import type { RateBudget } from "../api/rate-budget.js";
import {
  DEFAULT_MAX_WAIT_MS,
  MAX_FOREGROUND_429_WAIT_MS,
  MIN_RETRY_DELAY_MS,
  tooLongToWait,
} from "../api/rate-budget.js";
import type { Sleep } from "../sleep.js";
import type { TaskLogger } from "./logger.js";

/** Time kept for the history lookup when a start's own deadline is near. */
export const RECONCILE_RESERVE_MS = 5000;
/** The least time a start request is given, however little of the call's deadline is left. */
export const MIN_START_MS = 10_000;

export type Attempt<T> = (idempotencyKey: string) => Promise<T>;

export interface StartSenderOptions {
  budget: RateBudget;
  now: () => number;
  sleep: Sleep;
  logger: TaskLogger;
}

export class StartSender {
  private readonly budget: RateBudget;
  private readonly now: () => number;
  private readonly sleep: Sleep;
  private readonly logger: TaskLogger;

  constructor(options: StartSenderOptions) {
    this.budget = options.budget;
    this.now = options.now;
    this.sleep = options.sleep;
    this.logger = options.logger;
  }

  /** One logical start: one key, sent again only after a 429 (which the service refused before acting). */
  async sendOnce<T>(
    options: { signal?: AbortSignal | undefined; deadline?: number | undefined },
    key: string,
    attempt: Attempt<T>,
  ): Promise<T> {
    if (options.signal?.aborted) throw new AbortedError();
    try {
      return await attempt(key);
    } catch (error) {
      if (
        !(error instanceof GenerationError) ||
        error.code !== "rate_limit_exceeded" ||
        error.maybeProcessed
      ) {
        throw error;
      }
      const delay = this.retryDelay(error);
      const left = options.deadline === undefined ? Infinity : options.deadline - this.now();
      if (delay > Math.min(MAX_FOREGROUND_429_WAIT_MS, left - RECONCILE_RESERVE_MS)) {
        throw tooLongToWait(error, delay);
      }
      this.logger("info", "The start was refused by the rate limit; retrying once after the reset.", {
        delay_ms: delay,
      });
      await this.sleep(delay, options.signal);
      return await attempt(key);
    }
  }

  private retryDelay(error: GenerationError): number {
    if (error.retryAtMs === undefined) return this.budget.retryDelayMs();
    return Math.min(DEFAULT_MAX_WAIT_MS, Math.max(MIN_RETRY_DELAY_MS, error.retryAtMs - this.now()));
  }
}

const AMBIGUOUS_CODES = new Set(["timeout", "internal_error", "upstream_error"]);

/**
 * The HTTP layer marks a start that may have been processed (timeout after sending, broken connection,
 * 5xx); a 5xx or timeout is treated the same even when unmarked. A connection that never opened is not.
 */
export function isAmbiguous(error: unknown): error is GenerationError {
  return error instanceof GenerationError && (error.maybeProcessed || AMBIGUOUS_CODES.has(error.code));
}

export function chargePossible(error: GenerationError, nextStep: string): GenerationError {
  return new GenerationError(error.code, `${error.message} The start request may have been processed.`, {
    status: error.status,
    nextStep,
    maybeProcessed: true,
    requestId: error.requestId,
    cause: error,
  });
}
