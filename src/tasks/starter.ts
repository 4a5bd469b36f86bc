/**
 * Starts paid tasks without ever paying twice by accident. A start is sent once (one Idempotency-Key per
 * logical start), retried only after a 429 — which the service answers before doing anything — and an
 * ambiguous failure is settled by looking at the history before anyone is told to try again. Every
 * started task is in the journal before the caller hears of it.
 */
import { randomUUID } from "node:crypto";
import { AbortedError, GenerationError } from "../api/errors.js";
import type { RateBudget } from "../api/rate-budget.js";
import {
  DEFAULT_MAX_WAIT_MS,
  MAX_FOREGROUND_429_WAIT_MS,
  MIN_RETRY_DELAY_MS,
  tooLongToWait,
} from "../api/rate-budget.js";
import type {
  GenerateImageBody,
  GenerateVideoBody,
  GenerationApi,
  ImageResult,
  JsonObject,
} from "../api/types.js";
import { resolveVideoModel } from "../models.js";
import { normalizePrompt } from "./fingerprint.js";
import type { Journal, JournalEntry } from "./journal.js";
import type { TaskLogger } from "./logger.js";
import { silentLogger } from "./logger.js";
import type { Sleep } from "../sleep.js";
import { sleep as defaultSleep } from "../sleep.js";

export const DEFAULT_DUPLICATE_WINDOW_MS = 10 * 60 * 1000;
/** Clock difference tolerated between us and the service when matching a history item to our request. */
export const RECONCILE_SKEW_MS = 2 * 60 * 1000;
const RECONCILE_PAGE_LIMIT = 50;
const RECONCILE_ATTEMPTS = 2;
const RECONCILE_PAUSE_MS = 2000;

export const VIDEO_CHARGE_POSSIBLE =
  "The request may have reached the service and a charge is possible. Do not retry blindly: call list_videos to check for a task with this prompt (or get_credits) before starting again.";
export const IMAGE_CHARGE_POSSIBLE =
  "The request may have reached the service and a charge is possible. Do not retry blindly: call get_credits to see whether credits were spent before starting again.";

export interface StartOptions {
  /** From `fingerprintRequest`; identical requests share it. */
  fingerprint: string;
  /** True starts a new task even when an identical one was started within the window. */
  allowDuplicate: boolean;
  /**
   * Cancels the wait before a 429 retry. Once a start may have been sent it is not aborted: the request
   * and its bookkeeping (journal, reconciliation) finish, so a paid task is never lost to a cancellation.
   */
  signal?: AbortSignal | undefined;
}

export interface StartOutcome {
  video_id: string;
  status: string | undefined;
  /** An earlier identical task was returned; nothing was sent. */
  reused: boolean;
  /** The start failed ambiguously and this task was found in the history. */
  reconciled: boolean;
  raw: JsonObject;
}

export interface ImageStartOutcome {
  /** Undefined when reused: the journal keeps only the URLs. */
  result: ImageResult | undefined;
  image_urls: string[];
  reused: boolean;
  raw: JsonObject;
}

export interface TaskStarterOptions {
  api: Pick<GenerationApi, "generateVideo" | "generateImage" | "listVideos">;
  journal: Journal;
  budget: RateBudget;
  now?: () => number;
  sleep?: Sleep;
  logger?: TaskLogger;
  duplicateWindowMs?: number;
}

type Attempt<T> = (idempotencyKey: string) => Promise<T>;

export class TaskStarter {
  private readonly api: TaskStarterOptions["api"];
  private readonly journal: Journal;
  private readonly budget: RateBudget;
  private readonly now: () => number;
  private readonly sleep: Sleep;
  private readonly logger: TaskLogger;
  private readonly duplicateWindowMs: number;
  /** Starts under way, by kind and fingerprint: an identical call arriving meanwhile joins instead of paying. */
  private readonly pending = new Map<string, Promise<StartOutcome | ImageStartOutcome>>();

  constructor(options: TaskStarterOptions) {
    this.api = options.api;
    this.journal = options.journal;
    this.budget = options.budget;
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? defaultSleep;
    this.logger = options.logger ?? silentLogger;
    this.duplicateWindowMs = options.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS;
  }

  /**
   * Starts a video task, or returns the identical one started within the duplicate window (or still being
   * started by another call) unless `allowDuplicate`. Throws the service's error when nothing was charged,
   * and a `maybeProcessed` error that says a charge is possible when the outcome stays unknown.
   */
  startVideo(body: GenerateVideoBody, options: StartOptions): Promise<StartOutcome> {
    const key = `video:${options.fingerprint}`;
    const joined = options.allowDuplicate
      ? undefined
      : (this.pending.get(key) as Promise<StartOutcome> | undefined);
    if (joined) return joined.then((outcome) => ({ ...outcome, reused: true, reconciled: false }));
    return this.track(key, async () => {
      if (!options.allowDuplicate) {
        await this.refreshJournal();
        const earlier = this.journal.findDuplicate(options.fingerprint, this.duplicateWindowMs);
        if (earlier?.kind === "video" && earlier.id !== undefined) {
          this.logger("info", "Returning the identical video task started earlier.", {
            video_id: earlier.id,
          });
          const raw = earlier.result ?? {};
          return { video_id: earlier.id, status: earlier.status, reused: true, reconciled: false, raw };
        }
      }
      return this.sendVideo(body, options);
    });
  }

  /**
   * Whether an identical request (same kind and fingerprint) was started within the duplicate window or is
   * being started now: lets a caller skip work that a reuse makes moot, such as uploading a local image.
   */
  async hasDuplicate(kind: "video" | "image", fingerprint: string): Promise<boolean> {
    if (this.pending.has(`${kind}:${fingerprint}`)) return true;
    await this.refreshJournal();
    return this.journal.findDuplicate(fingerprint, this.duplicateWindowMs)?.kind === kind;
  }

  /** Starts an image task; the duplicate guard and the errors work as for `startVideo`, without a history. */
  startImage(body: GenerateImageBody, options: StartOptions): Promise<ImageStartOutcome> {
    const key = `image:${options.fingerprint}`;
    const joined = options.allowDuplicate
      ? undefined
      : (this.pending.get(key) as Promise<ImageStartOutcome> | undefined);
    if (joined) return joined.then((outcome) => ({ ...outcome, reused: true }));
    return this.track(key, async () => {
      if (!options.allowDuplicate) {
        await this.refreshJournal();
        const earlier = this.journal.findDuplicate(options.fingerprint, this.duplicateWindowMs);
        if (earlier?.kind === "image") {
          this.logger("info", "Returning the identical image request made earlier.", { id: earlier.id });
          const raw = earlier.result ?? {};
          return { result: undefined, image_urls: stringArray(raw["image_urls"]), reused: true, raw };
        }
      }
      return this.sendImage(body, options);
    });
  }

  private async sendVideo(body: GenerateVideoBody, options: StartOptions): Promise<StartOutcome> {
    const sentAt = this.now();
    try {
      const started = await this.sendOnce(options.signal, (idempotencyKey) =>
        this.api.generateVideo(body, { priority: "foreground", idempotencyKey }),
      );
      return await this.recordVideo(started, { body, options, sentAt, reconciled: false });
    } catch (error) {
      if (!isAmbiguous(error)) throw error;
      this.logger("warning", "A video start failed ambiguously; looking for it in the history.", {
        code: error.code,
      });
      const found = await this.reconcile(body, sentAt);
      if (!found) throw chargePossible(error, VIDEO_CHARGE_POSSIBLE);
      this.logger("info", "Found the started video task in the history.", { video_id: found.video_id });
      return await this.recordVideo(found, { body, options, sentAt, reconciled: true });
    }
  }

  /** Journals a started (or adopted) video task before anyone hears of it. */
  private async recordVideo(
    task: { video_id: string; status: string | undefined; raw: JsonObject },
    context: { body: GenerateVideoBody; options: StartOptions; sentAt: number; reconciled: boolean },
  ): Promise<StartOutcome> {
    await this.record({
      kind: "video",
      id: task.video_id,
      fingerprint: context.options.fingerprint,
      started_at: context.sentAt,
      request: { ...context.body },
      ...(task.status === undefined ? {} : { status: task.status }),
    });
    const { video_id, status, raw } = task;
    return { video_id, status, raw, reused: false, reconciled: context.reconciled };
  }

  private async sendImage(body: GenerateImageBody, options: StartOptions): Promise<ImageStartOutcome> {
    const sentAt = this.now();
    let result: ImageResult;
    try {
      result = await this.sendOnce(options.signal, (idempotencyKey) =>
        this.api.generateImage(body, { priority: "foreground", idempotencyKey }),
      );
    } catch (error) {
      // The service keeps no image history to look in: say plainly what may have happened.
      if (isAmbiguous(error)) throw chargePossible(error, IMAGE_CHARGE_POSSIBLE);
      throw error;
    }
    await this.record({
      kind: "image",
      id: firstString(result.raw, ["image_id", "id", "task_id"]),
      fingerprint: options.fingerprint,
      started_at: sentAt,
      request: { ...body },
      result: { image_urls: result.image_urls },
    });
    return { result, image_urls: result.image_urls, reused: false, raw: result.raw };
  }

  /** One logical start: one key, sent again only after a 429 (which the service refused before acting). */
  private async sendOnce<T>(signal: AbortSignal | undefined, attempt: Attempt<T>): Promise<T> {
    if (signal?.aborted) throw new AbortedError();
    const idempotencyKey = randomUUID();
    try {
      return await attempt(idempotencyKey);
    } catch (error) {
      if (
        !(error instanceof GenerationError) ||
        error.code !== "rate_limit_exceeded" ||
        error.maybeProcessed
      ) {
        throw error;
      }
      const delay = this.retryDelay(error);
      if (delay > MAX_FOREGROUND_429_WAIT_MS) throw tooLongToWait(error, delay);
      this.logger("info", "The start was refused by the rate limit; retrying once after the reset.", {
        delay_ms: delay,
      });
      await this.sleep(delay, signal);
      return await attempt(idempotencyKey);
    }
  }

  private retryDelay(error: GenerationError): number {
    if (error.retryAtMs === undefined) return this.budget.retryDelayMs();
    return Math.min(DEFAULT_MAX_WAIT_MS, Math.max(MIN_RETRY_DELAY_MS, error.retryAtMs - this.now()));
  }

  /**
   * Looks for our task in the newest page of the history: same prompt, same model when the item names one,
   * created no earlier than the send (less clock skew) when it carries a time, and not a task we already
   * know. A failing history call counts as "not found".
   */
  private async reconcile(
    body: GenerateVideoBody,
    sentAt: number,
  ): Promise<Pick<StartOutcome, "video_id" | "status" | "raw"> | undefined> {
    for (let attempt = 1; attempt <= RECONCILE_ATTEMPTS; attempt++) {
      try {
        const page = await this.api.listVideos(
          { page: 1, limit: RECONCILE_PAGE_LIMIT },
          { priority: "foreground" },
        );
        const match = pickMatch(page.items, body, sentAt - RECONCILE_SKEW_MS, (id) => this.journal.has(id));
        if (match) return match;
      } catch (error) {
        this.logger("warning", "The history call failed while reconciling a start.", {
          code: error instanceof GenerationError ? error.code : undefined,
        });
      }
      // The service may list a new task a moment after creating it.
      if (attempt < RECONCILE_ATTEMPTS) await this.sleep(RECONCILE_PAUSE_MS);
    }
    return undefined;
  }

  private async record(entry: JournalEntry): Promise<void> {
    try {
      await this.journal.append(entry);
    } catch (error) {
      // The task exists and is paid for: answering with its id beats failing the call.
      this.logger("error", "Could not write the task journal; the task id is only in this answer.", {
        id: entry.id,
        path: this.journal.path,
        error: String(error),
      });
    }
  }

  private async refreshJournal(): Promise<void> {
    try {
      await this.journal.refresh();
    } catch (error) {
      this.logger("warning", "Could not re-read the task journal.", { error: String(error) });
    }
  }

  private track<T extends StartOutcome | ImageStartOutcome>(key: string, run: () => Promise<T>): Promise<T> {
    const promise = run();
    this.pending.set(key, promise);
    const clear = () => {
      if (this.pending.get(key) === promise) this.pending.delete(key);
    };
    promise.then(clear, clear);
    return promise;
  }
}

const AMBIGUOUS_CODES = new Set(["timeout", "internal_error", "upstream_error"]);

/**
 * The HTTP layer marks a start that may have been processed (timeout after sending, broken connection,
 * 5xx); a 5xx or timeout is treated the same even when unmarked. A connection that never opened is not.
 */
function isAmbiguous(error: unknown): error is GenerationError {
  return error instanceof GenerationError && (error.maybeProcessed || AMBIGUOUS_CODES.has(error.code));
}

function chargePossible(error: GenerationError, nextStep: string): GenerationError {
  return new GenerationError(error.code, `${error.message} The start request may have been processed.`, {
    status: error.status,
    nextStep,
    maybeProcessed: true,
    requestId: error.requestId,
    cause: error,
  });
}

function pickMatch(
  items: JsonObject[],
  body: GenerateVideoBody,
  notBefore: number,
  known: (id: string) => boolean,
): Pick<StartOutcome, "video_id" | "status" | "raw"> | undefined {
  const prompt = normalizePrompt(body.prompt);
  const model = resolveVideoModel(body.model) ?? body.model;
  let best: { item: JsonObject; id: string; createdAt: number | undefined } | undefined;
  for (const item of items) {
    const id = firstString(item, ["video_id", "id", "task_id"]);
    if (id === undefined || known(id)) continue;
    const itemPrompt = readPrompt(item);
    if (itemPrompt === undefined || normalizePrompt(itemPrompt) !== prompt) continue;
    const itemModel = typeof item["model"] === "string" ? item["model"] : undefined;
    if (itemModel !== undefined && (resolveVideoModel(itemModel) ?? itemModel) !== model) continue;
    if (!sameWhenBothPresent(item["duration"], body.duration)) continue;
    if (!sameWhenBothPresent(item["aspect_ratio"], body.aspect_ratio)) continue;
    const createdAt = readTime(item["created_at"] ?? item["createdAt"] ?? item["created"]);
    if (createdAt !== undefined && createdAt < notBefore) continue;
    // The newest candidate wins; without times, the service's order (newest first, usually) decides.
    if (!best || (createdAt !== undefined && (best.createdAt === undefined || createdAt > best.createdAt))) {
      best = { item, id, createdAt };
    }
  }
  if (!best) return undefined;
  const status = typeof best.item["status"] === "string" ? best.item["status"] : undefined;
  return { video_id: best.id, status, raw: best.item };
}

function readPrompt(item: JsonObject): string | undefined {
  if (typeof item["prompt"] === "string") return item["prompt"];
  for (const key of ["input", "request", "params", "parameters"]) {
    const nested = item[key];
    if (
      nested !== null &&
      typeof nested === "object" &&
      typeof (nested as JsonObject)["prompt"] === "string"
    ) {
      return (nested as JsonObject)["prompt"] as string;
    }
  }
  return undefined;
}

function sameWhenBothPresent(itemValue: unknown, sent: string | number | undefined): boolean {
  if (sent === undefined || itemValue === undefined || itemValue === null) return true;
  if (typeof sent === "number") return Number(itemValue) === sent;
  return String(itemValue) === sent;
}

/** ISO text, epoch seconds or epoch milliseconds; undefined when unreadable. */
function readTime(value: unknown): number | undefined {
  if (typeof value === "number" && Number.isFinite(value)) return value < 1e11 ? value * 1000 : value;
  if (typeof value === "string" && value.trim() !== "") {
    if (/^\d+(\.\d+)?$/.test(value.trim())) return readTime(Number(value));
    const parsed = Date.parse(value);
    return Number.isNaN(parsed) ? undefined : parsed;
  }
  return undefined;
}

function firstString(record: JsonObject, keys: string[]): string | undefined {
  for (const key of keys) {
    const value = record[key];
    if (typeof value === "string" && value !== "") return value;
    if (typeof value === "number" && Number.isFinite(value)) return String(value);
  }
  return undefined;
}

function stringArray(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : [];
}
