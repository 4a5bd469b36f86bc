/**
 * Starts paid tasks without ever paying twice by accident, even across a crash. Each start writes its intent
 * (fingerprint, Idempotency-Key, time) to the journal and syncs it BEFORE the POST leaves; the outcome follows
 * it. A start is sent once, retried only after a 429 (which the service answers before doing anything), and
 * an ambiguous failure is settled by looking at the history before anyone is told to try again. An intent
 * left without an outcome (a crash, a timeout that said "a charge is possible") is settled the same way
 * before an identical request may pay again, and if it must be re-sent it keeps its Idempotency-Key.
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
import { safeId } from "../api/fields.js";
import { findVideoId } from "../api/find.js";
import { resolveVideoModel } from "../models.js";
import type { DailySpend, Reservation } from "../spend/daily.js";
import { pickMatch } from "./history-match.js";
import type { Journal, JournalEntry } from "./journal.js";
import type { StartClaims } from "../state/shared-state.js";
import type { Ownership } from "./ownership.js";
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
/** Time kept for the history lookup when a start's own deadline is near. */
const RECONCILE_RESERVE_MS = 5000;
/** The least time a start request is given, however little of the call's deadline is left. */
const MIN_START_MS = 10_000;
/** An unsettled intent older than this cannot be a duplicate any more, and the history page would not show it. */
const SETTLE_MAX_AGE_MS = 60 * 60 * 1000;
/**
 * How long a replica's claim on starting a fingerprint lasts at most: longer than a start and its settling
 * take, short enough that the claim of a replica that died mid-start lapses within a tool call or two.
 */
const CLAIM_TTL_MS = 60_000;
/** How often a replica waiting on another's claim looks for the started task. */
const CLAIM_RETRY_MS = 200;

export const VIDEO_CHARGE_POSSIBLE =
  "The request may have reached the service and a charge is possible. Do not retry blindly: call list_videos to check for a task with this prompt (or get_credits) before starting again. An identical generate_video call is safe: it looks in the history first and does not pay twice.";
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
  /** Epoch ms by which the start (and any settling) must be over. */
  deadline?: number | undefined;
  /** The caller, when one key serves several (Caller.scope): its tasks are recorded as its own. */
  scope?: string | undefined;
  /**
   * What a new start counts against the caller's daily limit (Caller.id, the estimate, and the request in
   * words for a refusal); nothing is counted for a reused task.
   */
  spend?: { callerId: string; credits: number; what: string } | undefined;
}

export interface StartOutcome {
  video_id: string;
  status: string | undefined;
  /** An earlier identical task was returned; nothing new was charged. */
  reused: boolean;
  /** The start's answer was lost (a failure, a crash) and this task was found in the history. */
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
  api: Pick<GenerationApi, "generateVideo" | "generateImage" | "listVideos" | "getVideo">;
  journal: Journal;
  budget: RateBudget;
  now?: () => number;
  sleep?: Sleep;
  logger?: TaskLogger;
  duplicateWindowMs?: number;
  /** The duplicate guard shared with other replicas (Redis); undefined: this process alone. */
  claims?: StartClaims | undefined;
  /** Who started which task; settlement never adopts a task another caller owns. */
  ownership?: Ownership | undefined;
  /**
   * Resolves when writing for this key is allowed (a caller's own key: once the service accepted it);
   * rejects with the service's refusal. Runs before the journal or a claim is written.
   */
  beforeWrite?: (() => Promise<void>) | undefined;
  /** The daily limit (GENERATION_DAILY_CREDITS); undefined: none. */
  daily?: DailySpend | undefined;
}

type Attempt<T> = (idempotencyKey: string) => Promise<T>;
type Found = Pick<StartOutcome, "video_id" | "status" | "raw">;

export class TaskStarter {
  private readonly api: TaskStarterOptions["api"];
  private readonly journal: Journal;
  private readonly budget: RateBudget;
  private readonly now: () => number;
  private readonly sleep: Sleep;
  private readonly logger: TaskLogger;
  private readonly duplicateWindowMs: number;
  private readonly claims: StartClaims | undefined;
  private readonly ownership: Ownership | undefined;
  private readonly beforeWrite: () => Promise<void>;
  private readonly daily: DailySpend | undefined;
  /** Starts under way, by kind and fingerprint: an identical call arriving meanwhile joins instead of paying. */
  private readonly pending = new Map<string, Promise<StartOutcome | ImageStartOutcome>>();
  /** Intents this process wrote: they are not an earlier run's lost answers. */
  private readonly ownKeys = new Set<string>();
  /** Whether the intents an earlier run left behind have been looked up. */
  private leftoversSettled = false;

  constructor(options: TaskStarterOptions) {
    this.api = options.api;
    this.journal = options.journal;
    this.budget = options.budget;
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? defaultSleep;
    this.logger = options.logger ?? silentLogger;
    this.duplicateWindowMs = options.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS;
    this.claims = options.claims;
    this.ownership = options.ownership;
    this.beforeWrite = options.beforeWrite ?? (async () => {});
    this.daily = options.daily;
  }

  /**
   * Starts a video task, or returns the identical one started within the duplicate window (or still being
   * started by another call, or whose answer an earlier attempt lost) unless `allowDuplicate`. Throws the
   * service's error when nothing was charged, and a `maybeProcessed` error that says a charge is possible
   * when the outcome stays unknown.
   */
  startVideo(body: GenerateVideoBody, options: StartOptions): Promise<StartOutcome> {
    const key = `video:${options.fingerprint}`;
    const joined = options.allowDuplicate
      ? undefined
      : (this.pending.get(key) as Promise<StartOutcome> | undefined);
    if (joined) return joined.then((outcome) => ({ ...outcome, reused: true, reconciled: false }));
    return this.track(key, async () => {
      await this.beforeWrite();
      await this.refreshJournal();
      await this.settleLeftovers(options.deadline);
      if (options.allowDuplicate) return this.sendVideo(body, options);
      if (this.claims === undefined) return this.startOnceVideo(body, options);
      return this.startClaimed("video", options, this.claims, {
        earlier: () => this.liveDuplicate(options),
        start: () => this.startOnceVideo(body, options),
      });
    });
  }

  /** The duplicate guard of one process: an identical earlier task, a lost answer to settle, or a new start. */
  private async startOnceVideo(body: GenerateVideoBody, options: StartOptions): Promise<StartOutcome> {
    const earlier = await this.liveDuplicate(options);
    if (earlier) return earlier;
    const lost = this.journal.pendingIntent(options.fingerprint);
    if (lost?.kind === "video" && lost.key !== undefined) return this.settleAndResend(lost, body, options);
    return this.sendVideo(body, options);
  }

  /**
   * The duplicate guard across replicas: the replica that claims the fingerprint starts (or settles) the task;
   * one that finds it claimed waits for the started task the claimant mirrors, and answers with it as reused.
   * A claimant that died lets its claim expire; the next one settles the intent it left, as its own.
   */
  private async startClaimed<T>(
    kind: "video" | "image",
    options: StartOptions,
    claims: StartClaims,
    steps: { earlier: () => Promise<T | undefined>; start: () => Promise<T> },
  ): Promise<T> {
    const fingerprint = options.fingerprint;
    const giveUpAt = options.deadline ?? this.now() + CLAIM_TTL_MS;
    for (;;) {
      await this.adoptShared(claims, fingerprint, "started");
      const earlier = await steps.earlier();
      if (earlier !== undefined) return earlier;
      if (await claims.claim(fingerprint, CLAIM_TTL_MS)) {
        try {
          // Between our look and our claim, the last claimant may have finished: look again, now alone.
          await this.adoptShared(claims, fingerprint, "both");
          return await steps.start();
        } finally {
          await claims.unclaim(fingerprint);
        }
      }
      if (this.now() + CLAIM_RETRY_MS > giveUpAt) throw claimedElsewhere(kind);
      await this.sleep(CLAIM_RETRY_MS, options.signal);
    }
  }

  /** Copies what another replica recorded for this fingerprint into our journal, so the usual guard sees it. */
  private async adoptShared(
    claims: StartClaims,
    fingerprint: string,
    what: "started" | "both",
  ): Promise<void> {
    const shared = await claims.read(fingerprint);
    const adopt = what === "both" ? [shared.started, shared.intent] : [shared.started];
    for (const entry of adopt) {
      if (entry === undefined || this.journal.knows(entry)) continue;
      try {
        await this.journal.append(entry);
      } catch (error) {
        this.logger("warning", "Could not copy another replica's start into the journal.", {
          error: String(error),
        });
      }
    }
  }

  /**
   * Whether an identical request (same kind and fingerprint) was started within the duplicate window or is
   * being started now: lets a caller skip work that a reuse makes moot, such as uploading a local image.
   */
  async hasDuplicate(kind: "video" | "image", fingerprint: string): Promise<boolean> {
    if (this.pending.has(`${kind}:${fingerprint}`)) return true;
    if (this.claims !== undefined && (await this.claims.read(fingerprint)).started?.kind === kind)
      return true;
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
      await this.beforeWrite();
      await this.refreshJournal();
      if (options.allowDuplicate) return this.sendImage(body, options);
      if (this.claims === undefined) return this.startOnceImage(body, options);
      return this.startClaimed("image", options, this.claims, {
        earlier: async () => this.imageDuplicate(options.fingerprint),
        start: () => this.startOnceImage(body, options),
      });
    });
  }

  /** The identical image request of the duplicate window, as its answer (the journal keeps the URLs). */
  private imageDuplicate(fingerprint: string): ImageStartOutcome | undefined {
    const earlier = this.journal.findDuplicate(fingerprint, this.duplicateWindowMs);
    if (earlier?.kind !== "image") return undefined;
    this.logger("info", "Returning the identical image request made earlier.", { id: earlier.id });
    const raw = earlier.result ?? {};
    return { result: undefined, image_urls: stringArray(raw["image_urls"]), reused: true, raw };
  }

  private async startOnceImage(body: GenerateImageBody, options: StartOptions): Promise<ImageStartOutcome> {
    const earlier = this.imageDuplicate(options.fingerprint);
    if (earlier) return earlier;
    const lost = this.journal.pendingIntent(options.fingerprint);
    if (lost?.kind === "image" && this.now() - lost.started_at <= this.duplicateWindowMs) {
      // The service keeps no image history to settle this with: only the user can say.
      throw unsettledImage(lost, this.now());
    }
    return this.sendImage(body, options);
  }

  /** The identical task of the duplicate window, checked to still exist on this service. */
  private async liveDuplicate(options: StartOptions): Promise<StartOutcome | undefined> {
    const earlier = this.journal.findDuplicate(options.fingerprint, this.duplicateWindowMs);
    if (earlier?.kind !== "video" || earlier.id === undefined) return undefined;
    let status = earlier.status;
    let raw = earlier.result ?? {};
    try {
      const seen = await this.api.getVideo(earlier.id, {
        priority: "foreground",
        deadline: options.deadline,
      });
      status = seen.status;
      raw = seen.raw;
    } catch (error) {
      if (error instanceof GenerationError && isUnknownTask(error)) {
        // Another service instance's task (a restarted sandbox on the same port, say): never hand it back.
        this.logger(
          "warning",
          "The journal's identical task is unknown to the service; starting a new one.",
          {
            video_id: earlier.id,
          },
        );
        await this.record({ ...voidOf(earlier), id: earlier.id, started_at: this.now() });
        return undefined;
      }
      // The service could not say; the task was paid for and is most likely fine.
    }
    this.logger("info", "Returning the identical video task started earlier.", { video_id: earlier.id });
    return { video_id: earlier.id, status, reused: true, reconciled: false, raw };
  }

  /**
   * An identical start whose answer was lost: find it in the history first; only when the history does not
   * have it is it sent again, with the same Idempotency-Key.
   */
  private async settleAndResend(
    lost: JournalEntry,
    body: GenerateVideoBody,
    options: StartOptions,
  ): Promise<StartOutcome> {
    const request = lost.request as GenerateVideoBody;
    this.logger("info", "An identical start lost its answer earlier; looking for it in the history.", {});
    const found = await this.reconcile(request, lost.started_at, options.deadline);
    if (found) {
      await this.recordVideo(found, { entry: lost, body: request, reconciled: true });
      this.logger("info", "Found the earlier start in the history.", { video_id: found.video_id });
      return { ...found, reused: true, reconciled: true };
    }
    this.logger("info", "The history does not have the earlier start; sending it again with its key.", {});
    return this.sendVideo(body, options, lost.key);
  }

  /**
   * Intents an earlier run left without an outcome (it crashed or was killed around a start) are looked up
   * once, before this process starts anything: a found task is journaled (so its id is never lost and the
   * duplicate guard sees it), an old one that the history does not have is settled as never processed.
   */
  private async settleLeftovers(deadline: number | undefined): Promise<void> {
    if (this.leftoversSettled) return;
    const now = this.now();
    const leftovers = this.journal
      .pendingIntents()
      .filter((entry) => entry.key !== undefined && !this.ownKeys.has(entry.key));
    const fresh = leftovers.filter((entry) => now - entry.started_at <= SETTLE_MAX_AGE_MS);
    for (const stale of leftovers.filter((entry) => !fresh.includes(entry))) {
      await this.record({ ...voidOf(stale), started_at: now });
    }
    // Images have no history to look in: an identical request is refused while one is open (startImage).
    const videos = fresh.filter((entry) => entry.kind === "video");
    if (videos.length === 0) {
      this.leftoversSettled = true;
      return;
    }
    let items: JsonObject[];
    try {
      items = (
        await this.api.listVideos(
          { page: 1, limit: RECONCILE_PAGE_LIMIT },
          { priority: "foreground", deadline: deadline },
        )
      ).items;
    } catch (error) {
      this.logger("warning", "Could not read the history to settle earlier starts; will try again.", {
        code: error instanceof GenerationError ? error.code : undefined,
      });
      return;
    }
    this.leftoversSettled = true;
    const known = await this.knownAmong(items);
    for (const intent of videos) {
      const request = intent.request as GenerateVideoBody;
      const found = pickMatch(items, request, intent.started_at - RECONCILE_SKEW_MS, known);
      if (found) {
        this.logger("info", "Settled an earlier start whose answer was lost: it was started.", {
          video_id: found.video_id,
        });
        await this.recordVideo(found, { entry: intent, body: request, reconciled: true });
      } else if (now - intent.started_at > RECONCILE_SKEW_MS) {
        await this.record({ ...voidOf(intent), started_at: now });
      }
      // A younger one stays open: an identical request settles it again (the history may lag behind).
    }
  }

  private async sendVideo(
    body: GenerateVideoBody,
    options: StartOptions,
    reuseKey?: string,
  ): Promise<StartOutcome> {
    // A start re-sent with its lost intent's key was counted when it was first sent.
    const reservation = reuseKey === undefined ? await this.reserveSpend(options) : undefined;
    const intent = await this.writeIntent("video", body, options, reuseKey);
    try {
      const started = await this.sendOnce(options, intent.key ?? "", (idempotencyKey) =>
        this.api.generateVideo(body, {
          priority: "foreground",
          idempotencyKey,
          ...(options.deadline !== undefined && {
            // Room is kept for the history lookup an ambiguous failure needs, but a start always gets a fair try.
            deadline: Math.max(this.now() + MIN_START_MS, options.deadline - RECONCILE_RESERVE_MS),
          }),
        }),
      );
      return await this.recordVideo(started, { entry: intent, body, reconciled: false });
    } catch (error) {
      if (!isAmbiguous(error)) {
        // The service said it did nothing (or nothing could reach it): the intent is settled.
        await this.record({ ...voidOf(intent), started_at: this.now() });
        await reservation?.release();
        throw error;
      }
      this.logger("warning", "A video start failed ambiguously; looking for it in the history.", {
        code: error.code,
      });
      const found = await this.reconcile(body, intent.started_at, options.deadline);
      // Not found: the intent stays open, so an identical request settles it before paying again.
      if (!found) throw chargePossible(error, VIDEO_CHARGE_POSSIBLE);
      this.logger("info", "Found the started video task in the history.", { video_id: found.video_id });
      return await this.recordVideo(found, { entry: intent, body, reconciled: true });
    }
  }

  /** Journals a started (or adopted) video task, settling its intent, before anyone hears of it. */
  private async recordVideo(
    task: Found,
    context: { entry: JournalEntry; body: GenerateVideoBody; reconciled: boolean },
  ): Promise<StartOutcome> {
    const scope = context.entry.scope;
    await this.record({
      kind: "video",
      phase: "started",
      ...(context.entry.key !== undefined && { key: context.entry.key }),
      id: task.video_id,
      fingerprint: context.entry.fingerprint,
      started_at: context.entry.started_at,
      request: { ...context.body },
      ...(task.status === undefined ? {} : { status: task.status }),
      ...(scope !== undefined && { scope }),
    });
    if (scope !== undefined) {
      await this.ownership?.record({
        video_id: task.video_id,
        scope,
        started_at: context.entry.started_at,
        prompt: context.body.prompt,
        model: resolveVideoModel(context.body.model) ?? context.body.model,
      });
    }
    const { video_id, status, raw } = task;
    return { video_id, status, raw, reused: false, reconciled: context.reconciled };
  }

  private async sendImage(body: GenerateImageBody, options: StartOptions): Promise<ImageStartOutcome> {
    const reservation = await this.reserveSpend(options);
    const intent = await this.writeIntent("image", body, options);
    let result: ImageResult;
    try {
      result = await this.sendOnce(options, intent.key ?? "", (idempotencyKey) =>
        this.api.generateImage(body, {
          priority: "foreground",
          idempotencyKey,
          ...(options.deadline !== undefined && {
            deadline: Math.max(this.now() + MIN_START_MS, options.deadline),
          }),
        }),
      );
    } catch (error) {
      // The service keeps no image history to look in: say plainly what may have happened.
      if (isAmbiguous(error)) throw chargePossible(error, IMAGE_CHARGE_POSSIBLE);
      await this.record({ ...voidOf(intent), started_at: this.now() });
      await reservation?.release();
      throw error;
    }
    await this.record({
      kind: "image",
      phase: "started",
      ...(intent.key !== undefined && { key: intent.key }),
      id: safeId(firstString(result.raw, ["image_id", "id", "task_id"])),
      fingerprint: options.fingerprint,
      started_at: intent.started_at,
      request: { ...body },
      result: { image_urls: result.image_urls },
    });
    return { result, image_urls: result.image_urls, reused: false, raw: result.raw };
  }

  /**
   * Counts a new start against the caller's daily limit before it may leave (throws budget_exceeded, or
   * SharedStateUnavailableError when the replicas cannot agree). Kept unless the service says it did nothing.
   */
  private async reserveSpend(options: StartOptions): Promise<Reservation | undefined> {
    if (this.daily === undefined || options.spend === undefined) return undefined;
    const { callerId, credits, what } = options.spend;
    return this.daily.reserve(callerId, credits, what);
  }

  /** Syncs the intent to disk before the start may leave; the journal line is the proof it was ours. */
  private async writeIntent(
    kind: "video" | "image",
    body: GenerateVideoBody | GenerateImageBody,
    options: StartOptions,
    reuseKey?: string,
  ): Promise<JournalEntry> {
    const intent: JournalEntry = {
      kind,
      phase: "intent",
      key: reuseKey ?? randomUUID(),
      id: undefined,
      fingerprint: options.fingerprint,
      started_at: this.now(),
      request: { ...body },
      ...(options.scope !== undefined && { scope: options.scope }),
    };
    this.ownKeys.add(intent.key ?? "");
    await this.record(intent);
    return intent;
  }

  /** One logical start: one key, sent again only after a 429 (which the service refused before acting). */
  private async sendOnce<T>(options: StartOptions, key: string, attempt: Attempt<T>): Promise<T> {
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

  /**
   * Looks for our task in the newest page of the history: same prompt, same model when the item names one,
   * created no earlier than the send (less clock skew) when it carries a time, and not a task we already
   * know. A failing history call counts as "not found". Bounded by the deadline.
   */
  private async reconcile(
    body: GenerateVideoBody,
    sentAt: number,
    deadline: number | undefined,
  ): Promise<Found | undefined> {
    for (let attempt = 1; attempt <= RECONCILE_ATTEMPTS; attempt++) {
      try {
        const page = await this.api.listVideos(
          { page: 1, limit: RECONCILE_PAGE_LIMIT },
          { priority: "foreground", ...(deadline !== undefined && { deadline }) },
        );
        const match = pickMatch(
          page.items,
          body,
          sentAt - RECONCILE_SKEW_MS,
          await this.knownAmong(page.items),
        );
        if (match) return match;
      } catch (error) {
        this.logger("warning", "The history call failed while reconciling a start.", {
          code: error instanceof GenerationError ? error.code : undefined,
        });
      }
      // The service may list a new task a moment after creating it.
      if (attempt >= RECONCILE_ATTEMPTS) break;
      if (deadline !== undefined && this.now() + RECONCILE_PAUSE_MS + 1000 > deadline) break;
      await this.sleep(RECONCILE_PAUSE_MS);
    }
    return undefined;
  }

  /**
   * Which of these history items are tasks this server already knows: in the journal, or started by some
   * caller of this key (on any replica). Settlement must never hand one of them over as a lost start.
   */
  private async knownAmong(items: JsonObject[]): Promise<(id: string) => boolean> {
    const owned = new Set<string>();
    if (this.ownership !== undefined) {
      const ids = items.map((item) => findVideoId(item)).filter((id): id is string => id !== undefined);
      await Promise.all(
        ids.map(async (id) => {
          if (await this.ownership?.isOwned(id)) owned.add(id);
        }),
      );
    }
    return (id) => owned.has(id) || this.journal.has(id);
  }

  private async record(entry: JournalEntry): Promise<void> {
    try {
      await this.journal.append(entry);
      // Other replicas see the open intent and the started task; the local journal stays the record of ours.
      await this.claims?.mirror(entry, this.duplicateWindowMs);
    } catch (error) {
      // A start is not refused for it: the task id still reaches the caller in the answer.
      this.logger("error", "Could not write the task journal; this start is not protected against a crash.", {
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

/** The line that settles an intent (or declares a task stale) without a task of its own. */
function voidOf(entry: JournalEntry): JournalEntry {
  return {
    kind: entry.kind,
    phase: "void",
    ...(entry.key !== undefined && { key: entry.key }),
    id: undefined,
    fingerprint: entry.fingerprint,
    started_at: entry.started_at,
    request: {},
  };
}

/** The service does not know the id: 404, or the 400 some services give for an unknown id. */
function isUnknownTask(error: GenerationError): boolean {
  return error.code === "not_found" || (error.code === "validation_error" && error.status === 400);
}

/** An identical start held by another replica did not finish within this call's time. */
function claimedElsewhere(kind: "video" | "image"): GenerationError {
  const tool = kind === "video" ? "generate_video" : "generate_image";
  return new GenerationError(
    "timeout",
    `An identical ${tool} request is being started by another replica of this server and did not finish in time.`,
    {
      maybeProcessed: true,
      nextStep: `Call ${tool} again with the same arguments in a moment: it returns that result instead of paying again.`,
    },
  );
}

function unsettledImage(intent: JournalEntry, now: number): GenerationError {
  const seconds = Math.max(1, Math.round((now - intent.started_at) / 1000));
  return new GenerationError(
    "timeout",
    `An identical generate_image request was sent ${seconds} s ago and its answer never arrived (the call timed out or the server stopped), so it may have been charged.`,
    {
      maybeProcessed: true,
      nextStep:
        "Call get_credits to see whether credits were spent. To generate the image anyway, call generate_image again with allow_duplicate: true.",
    },
  );
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
