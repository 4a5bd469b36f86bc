/**
 * One start the duplicate guard (starter.ts) found new: the day reserved and the intent written before the
 * POST leaves under one Idempotency-Key (sent again only after a 429, answered before anything is done), then
 * the entry that settles the intent. An intent that cannot be written refuses the start; a settling entry
 * that cannot be written is logged (the id still reaches the caller).
 */
import { randomUUID } from "node:crypto";
import { AbortedError, GenerationError } from "../api/errors.js";
import {
  DEFAULT_MAX_WAIT_MS,
  MAX_FOREGROUND_429_WAIT_MS,
  MIN_RETRY_DELAY_MS,
  tooLongToWait,
  type RateBudget,
} from "../api/rate-budget.js";
import type { Sleep } from "../api/sleep.js";
import type { GenerateImageBody, GenerateVideoBody, ImageResult, StartedVideo } from "../api/types.js";
import { metrics } from "../metrics.js";
import { resolveVideoModel } from "../models.js";
import type { DailySpend } from "../spend/daily.js";
import type { Journal } from "../state/local/journal.js";
import {
  MAX_PROMPT_CHARS,
  type JournalEntry,
  type OwnershipStore,
  type StartClaims,
  type TaskLogger,
} from "../state/records.js";

/** How long an identical start request is answered with the earlier one instead of paying again. */
export const DUPLICATE_WINDOW_MS = 10 * 60 * 1000;
/** Time kept for the history lookup when a start's own deadline is near. */
export const RECONCILE_RESERVE_MS = 5000;

export interface SendOptions {
  fingerprint: string;
  signal?: AbortSignal | undefined;
  deadline?: number | undefined;
  scope?: string | undefined;
  spend?: { callerId: string; credits: number; what: string } | undefined;
}

export interface SenderParts {
  journal: Journal;
  budget: RateBudget;
  claims: StartClaims;
  ownership: OwnershipStore;
  daily?: DailySpend | undefined;
  now: () => number;
  sleep: Sleep;
  logger: TaskLogger;
}

export class StartSender {
  /** Intents this process wrote: they are not an earlier run's lost answers. */
  private readonly ownKeys = new Set<string>();

  constructor(private readonly parts: SenderParts) {}

  isOwnIntent(key: string): boolean {
    return this.ownKeys.has(key);
  }

  /**
   * Answers the task, or the ambiguous failure (the intent stays open); a failure the service did nothing
   * for settles the intent, gives the day's reservation back and is thrown.
   */
  async send<T>(
    kind: "video" | "image",
    body: GenerateVideoBody | GenerateImageBody,
    options: SendOptions,
    attempt: (idempotencyKey: string) => Promise<T>,
  ): Promise<{ task: T; intent: JournalEntry } | { error: GenerationError; intent: JournalEntry }> {
    const { spend } = options;
    const reservation = spend && (await this.parts.daily?.reserve(spend.callerId, spend.credits, spend.what));
    const key = randomUUID();
    const intent: JournalEntry = {
      kind,
      phase: "intent",
      key,
      id: undefined,
      fingerprint: options.fingerprint,
      started_at: this.parts.now(),
      request: { ...body },
      ...(options.scope !== undefined && { scope: options.scope }),
    };
    this.ownKeys.add(key);
    try {
      await this.parts.journal.append(intent);
      await this.parts.claims.mirror(intent, DUPLICATE_WINDOW_MS);
    } catch (error) {
      await reservation?.release();
      throw error;
    }
    try {
      const task = await this.withOneRetry(options, () => attempt(key));
      countStarted(kind, options);
      return { task, intent };
    } catch (error) {
      if (isAmbiguous(error)) {
        countStarted(kind, options);
        return { error, intent };
      }
      await this.recordVoid(intent);
      await reservation?.release();
      throw error;
    }
  }

  /** Journals a started (or adopted) video task, settling its intent, before anyone hears of it. */
  async recordVideo(task: StartedVideo, intent: JournalEntry): Promise<void> {
    const { scope } = intent;
    const body = intent.request as GenerateVideoBody;
    await this.record({
      ...intent,
      phase: "started",
      id: task.video_id,
      ...(task.status !== undefined && { status: task.status }),
    });
    if (scope === undefined) return;
    await this.parts.ownership.record({
      video_id: task.video_id,
      scope,
      started_at: intent.started_at,
      // Within the record's bound, as every store reads it back (a longer one would be skipped as foreign).
      prompt: body.prompt.slice(0, MAX_PROMPT_CHARS),
      model: resolveVideoModel(body.model) ?? body.model,
    });
  }

  /** With its URLs: the service keeps no image history to find them in. */
  async recordImage(result: ImageResult, intent: JournalEntry): Promise<void> {
    await this.record({
      ...intent,
      phase: "started",
      id: result.image_id,
      result: { image_urls: result.image_urls },
    });
  }

  /** Settles an intent (or declares a task stale) without a task of its own. */
  async recordVoid(entry: JournalEntry, id?: string): Promise<void> {
    const { kind, key, fingerprint } = entry;
    const started_at = this.parts.now();
    await this.record({ kind, phase: "void", ...(key && { key }), id, fingerprint, started_at, request: {} });
  }

  async refresh(): Promise<void> {
    await this.parts.journal.refresh().catch((error: unknown) => {
      this.parts.logger("warning", "Could not re-read the task journal.", { error: String(error) });
    });
  }

  private async record(entry: JournalEntry): Promise<void> {
    try {
      await this.parts.journal.append(entry);
      await this.parts.claims.mirror(entry, DUPLICATE_WINDOW_MS);
    } catch (error) {
      const unprotected = "Could not write the task journal; this task is not protected against a crash.";
      this.parts.logger("error", unprotected, {
        id: entry.id,
        path: this.parts.journal.path,
        error: String(error),
      });
    }
  }

  /** The one retry after a 429, when its reset fits the call. */
  private async withOneRetry<T>(options: SendOptions, attempt: () => Promise<T>): Promise<T> {
    if (options.signal?.aborted) throw new AbortedError();
    try {
      return await attempt();
    } catch (error) {
      if (
        !(error instanceof GenerationError) ||
        error.code !== "rate_limit_exceeded" ||
        error.maybeProcessed
      ) {
        throw error;
      }
      const { now, budget } = this.parts;
      const delay =
        error.retryAtMs === undefined
          ? budget.retryDelayMs()
          : Math.min(DEFAULT_MAX_WAIT_MS, Math.max(MIN_RETRY_DELAY_MS, error.retryAtMs - now()));
      const left = options.deadline === undefined ? Infinity : options.deadline - now();
      if (delay > Math.min(MAX_FOREGROUND_429_WAIT_MS, left - RECONCILE_RESERVE_MS)) {
        throw tooLongToWait(error, delay);
      }
      this.parts.logger("info", "The start was refused by the rate limit; retrying once after the reset.", {
        delay_ms: delay,
      });
      await this.parts.sleep(delay, options.signal);
      return await attempt();
    }
  }
}

/** A start that was sent (and may have been charged) counts in the metrics' credits started. */
function countStarted(kind: "video" | "image", options: SendOptions): void {
  if (options.spend === undefined) return;
  metrics().creditsStarted(kind === "video" ? "generate_video" : "generate_image", options.spend.credits);
}

/** Marked by the HTTP layer as maybe processed, or a 5xx or timeout (a connection never opened is not). */
function isAmbiguous(error: unknown): error is GenerationError {
  return (
    error instanceof GenerationError &&
    (error.maybeProcessed || ["timeout", "internal_error", "upstream_error"].includes(error.code))
  );
}
