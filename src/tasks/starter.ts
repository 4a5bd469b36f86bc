/**
 * Starts paid tasks without ever paying twice by accident, even across a crash. Each start writes its intent
 * (fingerprint, Idempotency-Key, time) to the journal and syncs it BEFORE the POST leaves; the outcome follows
 * it. A start is sent once, retried only after a 429 (which the service answers before doing anything), and
 * an ambiguous failure is settled by looking at the history before anyone is told to try again. An intent
 * left without an outcome (a crash, a timeout that said "a charge is possible") may still turn into a task (a
 * proxy or a queue can hold a start for a long while): within the duplicate window an identical request never
 * sends it again by itself. It answers with what is known while the history is searched in the background;
 * `allow_duplicate: true` starts another.
 *
 * Here: the duplicate guard (a call under way, a task in the window, a lost answer) and the two sends. Its
 * parts: the journal lines (start-journal.ts), the request and its 429 retry (start-request.ts), the history
 * lookup of lost answers (start-settlement.ts) and the guard across replicas (start-claims.ts).
 */
import { GenerationError } from "../api/errors.js";
import type { RateBudget } from "../api/rate-budget.js";
import type {
  GenerateImageBody,
  GenerateVideoBody,
  GenerationApi,
  ImageResult,
  JsonObject,
} from "../api/types.js";
import { metrics } from "../metrics.js";
import type { Sleep } from "../sleep.js";
import { sleep as defaultSleep } from "../sleep.js";
import type { DailySpend, Reservation } from "../spend/daily.js";
import type { StartClaims } from "../state/shared-state.js";
import type { Journal, JournalEntry } from "./journal.js";
import type { TaskLogger } from "./logger.js";
import { silentLogger } from "./logger.js";
import type { Ownership } from "./ownership.js";
import { ReplicaGuard } from "./start-claims.js";
import { StartJournal, voidOf, type StartedTask } from "./start-journal.js";
import {
  MIN_START_MS,
  RECONCILE_RESERVE_MS,
  StartSender,
  chargePossible,
  isAmbiguous,
} from "./start-request.js";
import { Settlement } from "./start-settlement.js";

export const DEFAULT_DUPLICATE_WINDOW_MS = 10 * 60 * 1000;

export const VIDEO_CHARGE_POSSIBLE =
  "The request may have reached the service and a charge is possible. Do not retry blindly: call list_videos in a minute to check for a task with this prompt (or get_credits). An identical generate_video call is safe: it sends nothing while this start may still appear, and returns the task once this server finds it in the history.";
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
  /** Ends the background work (the search for lost starts) when the runtime closes. */
  stopping?: AbortSignal | undefined;
}

export class TaskStarter {
  private readonly api: TaskStarterOptions["api"];
  private readonly journal: Journal;
  private readonly now: () => number;
  private readonly logger: TaskLogger;
  private readonly duplicateWindowMs: number;
  private readonly beforeWrite: () => Promise<void>;
  private readonly daily: DailySpend | undefined;
  private readonly startJournal: StartJournal;
  private readonly sender: StartSender;
  private readonly settlement: Settlement;
  /** The duplicate guard shared with other replicas; undefined: this process alone. */
  private readonly replicas: ReplicaGuard | undefined;
  /** Starts under way, by kind and fingerprint: an identical call arriving meanwhile joins instead of paying. */
  private readonly pending = new Map<string, Promise<StartOutcome | ImageStartOutcome>>();

  constructor(options: TaskStarterOptions) {
    this.api = options.api;
    this.journal = options.journal;
    this.now = options.now ?? Date.now;
    const sleep = options.sleep ?? defaultSleep;
    this.logger = options.logger ?? silentLogger;
    this.duplicateWindowMs = options.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS;
    this.beforeWrite = options.beforeWrite ?? (async () => {});
    this.daily = options.daily;
    const { journal, now, logger } = this;
    this.startJournal = new StartJournal({
      journal,
      claims: options.claims,
      ownership: options.ownership,
      duplicateWindowMs: this.duplicateWindowMs,
      now,
      logger,
    });
    this.sender = new StartSender({ budget: options.budget, now, sleep, logger });
    this.settlement = new Settlement({
      api: this.api,
      journal,
      startJournal: this.startJournal,
      ownership: options.ownership,
      windowMs: this.duplicateWindowMs,
      stopping: options.stopping,
      now,
      sleep,
      logger,
    });
    this.replicas =
      options.claims === undefined
        ? undefined
        : new ReplicaGuard({ claims: options.claims, journal, now, sleep, logger });
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
      await this.startJournal.refresh();
      await this.settlement.settleLeftovers(options.deadline);
      if (options.allowDuplicate) return this.sendVideo(body, options);
      if (this.replicas === undefined) return this.startOnceVideo(body, options);
      return this.replicas.start("video", options, {
        earlier: () => this.liveDuplicate(options),
        start: () => this.startOnceVideo(body, options),
      });
    });
  }

  /** The duplicate guard of one process: an identical earlier task, a lost answer to settle, or a new start. */
  private async startOnceVideo(body: GenerateVideoBody, options: StartOptions): Promise<StartOutcome> {
    const earlier = await this.liveDuplicate(options);
    if (earlier) return earlier;
    const lost = this.lostStart(options.fingerprint);
    if (lost?.kind === "video") return this.settleLost(lost, options);
    return this.sendVideo(body, options);
  }

  /** An identical start of the duplicate window whose outcome is unknown (it may have been charged). */
  private lostStart(fingerprint: string): JournalEntry | undefined {
    const lost = this.journal.pendingIntent(fingerprint);
    if (lost?.key === undefined || this.now() - lost.started_at > this.duplicateWindowMs) return undefined;
    return lost;
  }

  /**
   * Whether an identical request (same kind and fingerprint) was started within the duplicate window or is
   * being started now: lets a caller skip work that a reuse makes moot, such as uploading a local image.
   */
  async hasDuplicate(kind: "video" | "image", fingerprint: string): Promise<boolean> {
    if (this.pending.has(`${kind}:${fingerprint}`)) return true;
    if (this.replicas !== undefined && (await this.replicas.hasStarted(kind, fingerprint))) return true;
    await this.startJournal.refresh();
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
      await this.startJournal.refresh();
      if (options.allowDuplicate) return this.sendImage(body, options);
      if (this.replicas === undefined) return this.startOnceImage(body, options);
      return this.replicas.start("image", options, {
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
    // The service keeps no image history to settle this with: only the user can say.
    const lost = this.lostStart(options.fingerprint);
    if (lost?.kind === "image") throw unsettledStart(lost, this.now());
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
        await this.startJournal.record({ ...voidOf(earlier), id: earlier.id, started_at: this.now() });
        return undefined;
      }
      // The service could not say; the task was paid for and is most likely fine.
    }
    this.logger("info", "Returning the identical video task started earlier.", { video_id: earlier.id });
    return { video_id: earlier.id, status, reused: true, reconciled: false, raw };
  }

  /**
   * An identical start whose answer was lost: found in the history, it is returned as reused; not found (yet),
   * nothing is sent: the answer says what is known, and the history is searched again in the background.
   */
  private async settleLost(lost: JournalEntry, options: StartOptions): Promise<StartOutcome> {
    const request = lost.request as GenerateVideoBody;
    this.logger("info", "An identical start lost its answer earlier; looking for it in the history.", {});
    const found = await this.settlement.reconcile(request, lost.started_at, options.deadline);
    if (found) {
      await this.startJournal.recordVideo(found, { entry: lost, body: request });
      this.logger("info", "Found the earlier start in the history.", { video_id: found.video_id });
      return { ...found, reused: true, reconciled: true };
    }
    this.settlement.settleLater(lost);
    throw unsettledStart(lost, this.now());
  }

  private async sendVideo(body: GenerateVideoBody, options: StartOptions): Promise<StartOutcome> {
    const reservation = await this.reserveSpend(options);
    const intent = await this.startJournal.writeIntent("video", body, options);
    try {
      const started = await this.sender.sendOnce(options, intent.key ?? "", (idempotencyKey) =>
        this.api.generateVideo(body, {
          priority: "foreground",
          idempotencyKey,
          ...(options.deadline !== undefined && {
            // Room is kept for the history lookup an ambiguous failure needs, but a start always gets a fair try.
            deadline: Math.max(this.now() + MIN_START_MS, options.deadline - RECONCILE_RESERVE_MS),
          }),
        }),
      );
      countStarted("video", options);
      await this.startJournal.recordVideo(started, { entry: intent, body });
      return newTask(started, false);
    } catch (error) {
      if (!isAmbiguous(error)) {
        // The service said it did nothing (or nothing could reach it): the intent is settled.
        await this.startJournal.record({ ...voidOf(intent), started_at: this.now() });
        await reservation?.release();
        throw error;
      }
      countStarted("video", options);
      this.logger("warning", "A video start failed ambiguously; looking for it in the history.", {
        code: error.code,
      });
      const found = await this.settlement.reconcile(body, intent.started_at, options.deadline);
      if (!found) {
        // The intent stays open: an identical request sends nothing while the start may still appear.
        this.settlement.settleLater(intent);
        throw chargePossible(error, VIDEO_CHARGE_POSSIBLE);
      }
      this.logger("info", "Found the started video task in the history.", { video_id: found.video_id });
      await this.startJournal.recordVideo(found, { entry: intent, body });
      return newTask(found, true);
    }
  }

  private async sendImage(body: GenerateImageBody, options: StartOptions): Promise<ImageStartOutcome> {
    const reservation = await this.reserveSpend(options);
    const intent = await this.startJournal.writeIntent("image", body, options);
    let result: ImageResult;
    try {
      result = await this.sender.sendOnce(options, intent.key ?? "", (idempotencyKey) =>
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
      if (isAmbiguous(error)) {
        countStarted("image", options);
        throw chargePossible(error, IMAGE_CHARGE_POSSIBLE);
      }
      await this.startJournal.record({ ...voidOf(intent), started_at: this.now() });
      await reservation?.release();
      throw error;
    }
    countStarted("image", options);
    await this.startJournal.recordImage(result, { entry: intent, body });
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

/** A start that was sent (and may have been charged) counts in the metrics' credits started. */
function countStarted(kind: "video" | "image", options: StartOptions): void {
  if (options.spend !== undefined) {
    metrics().creditsStarted(kind === "video" ? "generate_video" : "generate_image", options.spend.credits);
  }
}

/** A task this start created (or, reconciled, found in the history after its answer was lost). */
function newTask(task: StartedTask, reconciled: boolean): StartOutcome {
  const { video_id, status, raw } = task;
  return { video_id, status, raw, reused: false, reconciled };
}

/** The service does not know the id: 404, or the 400 some services give for an unknown id. */
function isUnknownTask(error: GenerationError): boolean {
  return error.code === "not_found" || (error.code === "validation_error" && error.status === 400);
}

/** An identical start's answer was lost within the duplicate window: this call sends nothing. */
function unsettledStart(intent: JournalEntry, now: number): GenerationError {
  const seconds = Math.max(1, Math.round((now - intent.started_at) / 1000));
  const tool = intent.kind === "video" ? "generate_video" : "generate_image";
  const check =
    intent.kind === "video"
      ? "It may still appear: this server keeps looking for it in the history, and an identical generate_video call returns it once found. Call the tool again with the same arguments in a minute, or call list_videos to check."
      : "Call get_credits to see whether credits were spent.";
  return new GenerationError(
    "timeout",
    `An identical ${tool} request was sent ${seconds} s ago and its answer never arrived (the call timed out, the connection broke or the server stopped), so it may have started and been charged. This call sent nothing and charged nothing.`,
    { nextStep: `${check} To start another anyway, call ${tool} again with allow_duplicate: true.` },
  );
}

function stringArray(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : [];
}
