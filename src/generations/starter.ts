/**
 * Starts paid tasks without ever paying twice by accident, even across a crash: each start's intent is
 * journaled BEFORE the POST leaves (sender.ts), and an ambiguous failure is settled from the history
 * (settlement.ts). In the duplicate window an identical request never sends again a start whose outcome is
 * unknown; `allow_duplicate: true` starts another. Across replicas the one that claims the fingerprint starts
 * it; the others wait for the task it mirrors, copied into their journal so the usual guard reuses it.
 */
import { GenerationError } from "../api/errors.js";
import { sleep as wait } from "../api/sleep.js";
import type { GenerateImageBody, GenerateVideoBody, GenerationApi, ImageResult } from "../api/types.js";
import { silentLogger, type JournalEntry } from "../state/records.js";
import {
  DUPLICATE_WINDOW_MS,
  RECONCILE_RESERVE_MS,
  StartSender,
  type SenderParts,
  type SendOptions,
} from "./sender.js";
import { Settlement } from "./settlement.js";

/** The least time a start request is given, however little of the call's deadline is left. */
const MIN_START_MS = 10_000;
/** Longer than a start and its settling; short enough that a dead replica's claim lapses within a call. */
const CLAIM_TTL_MS = 60_000;
/** How often a replica waiting on another's claim looks for the started task. */
const CLAIM_RETRY_MS = 200;

export const VIDEO_CHARGE_POSSIBLE =
  "The request may have reached the service and a charge is possible. Do not retry blindly: call list_videos in a minute to check for a task with this prompt (or get_credits). An identical generate_video call is safe: it sends nothing while this start may still appear, and returns the task once this server finds it in the history.";
export const IMAGE_CHARGE_POSSIBLE =
  "The request may have reached the service and a charge is possible. Do not retry blindly: call get_credits to see whether credits were spent before starting again.";

export interface StartOptions extends SendOptions {
  allowDuplicate: boolean;
}

export interface StartOutcome {
  video_id: string;
  status: string | undefined;
  /** An earlier identical task was returned; nothing new was charged. */
  reused: boolean;
  /** The start's answer was lost (a failure, a crash) and this task was found in the history. */
  reconciled: boolean;
}

/** Reused, its `raw` is what the journal kept: the URLs only. */
export type ImageStartOutcome = ImageResult & { reused: boolean };

export interface TaskStarterOptions
  extends
    Omit<SenderParts, "now" | "sleep" | "logger">,
    Partial<Pick<SenderParts, "now" | "sleep" | "logger">> {
  api: Pick<GenerationApi, "generateVideo" | "generateImage" | "listVideos" | "getVideo">;
  /** Resolves when writing for this key is allowed (a caller's own key: once the service accepted it). */
  beforeWrite?: (() => Promise<void>) | undefined;
  /** Ends the background work (the search for lost starts) when the runtime closes. */
  stopping?: AbortSignal | undefined;
}

type Outcome = StartOutcome | ImageStartOutcome;

export class TaskStarter {
  private readonly parts: TaskStarterOptions & SenderParts;
  private readonly sender: StartSender;
  private readonly settlement: Settlement;
  private readonly pending = new Map<string, Promise<Outcome>>();

  constructor(options: TaskStarterOptions) {
    const { now = Date.now, sleep = wait, logger = silentLogger } = options;
    this.parts = { ...options, now, sleep, logger };
    this.sender = new StartSender(this.parts);
    this.settlement = new Settlement(this.parts, this.sender);
  }

  /**
   * Starts a video task, or returns the identical one of the duplicate window unless `allowDuplicate`.
   * Throws the service's error when nothing was charged, a `maybeProcessed` one when a charge is possible.
   */
  startVideo(body: GenerateVideoBody, options: StartOptions): Promise<StartOutcome> {
    return this.start("video", options, {
      earlier: () => this.liveDuplicate(options),
      lost: (lost) => this.settleLost(lost, options),
      send: () => this.sendVideo(body, options),
    });
  }

  /** Starts an image task; the duplicate guard and the errors work as for `startVideo`, without a history. */
  startImage(body: GenerateImageBody, options: StartOptions): Promise<ImageStartOutcome> {
    return this.start("image", options, {
      earlier: () => this.imageDuplicate(options.fingerprint),
      // The service keeps no image history to settle this with: only the user can say.
      lost: async (lost) => {
        throw unsettledStart(lost, this.parts.now());
      },
      send: () => this.sendImage(body, options),
    });
  }

  /** Whether an identical request was started in the window or is starting: a reuse makes an upload moot. */
  async hasDuplicate(kind: "video" | "image", fingerprint: string): Promise<boolean> {
    if (this.pending.has(`${kind}:${fingerprint}`)) return true;
    if ((await this.parts.claims.read(fingerprint)).started?.kind === kind) return true;
    await this.sender.refresh();
    return this.parts.journal.findDuplicate(fingerprint, DUPLICATE_WINDOW_MS)?.kind === kind;
  }

  /**
   * One start per kind and fingerprint at a time in this process (an identical call joins it as reused): an
   * earlier identical start, else a lost one settled, else a new one sent (only that with allowDuplicate).
   */
  private start<T extends Outcome>(
    kind: "video" | "image",
    options: StartOptions,
    steps: {
      earlier: () => T | undefined | Promise<T | undefined>;
      lost: (lost: JournalEntry) => Promise<T>;
      send: () => Promise<T>;
    },
  ): Promise<T> {
    const key = `${kind}:${options.fingerprint}`;
    const joined = options.allowDuplicate ? undefined : (this.pending.get(key) as Promise<T> | undefined);
    if (joined)
      return joined.then((outcome) => ({
        ...outcome,
        reused: true,
        ...(kind === "video" && { reconciled: false }),
      }));
    const promise = (async () => {
      await this.parts.beforeWrite?.();
      await this.sender.refresh();
      if (kind === "video") await this.settlement.settleLeftovers(options.deadline);
      if (options.allowDuplicate) return steps.send();
      return this.guarded(kind, options, steps.earlier, async () => {
        const lost = this.lostStart(options.fingerprint);
        return lost?.kind === kind ? steps.lost(lost) : steps.send();
      });
    })();
    this.pending.set(key, promise);
    const clear = () => this.pending.get(key) === promise && this.pending.delete(key);
    promise.then(clear, clear);
    return promise;
  }

  /** What `earlier` finds, else `start` under the claim on the fingerprint; gives up at the deadline. */
  private async guarded<T>(
    kind: "video" | "image",
    options: StartOptions,
    earlier: () => T | undefined | Promise<T | undefined>,
    start: () => Promise<T>,
  ): Promise<T> {
    const { claims } = this.parts;
    const { fingerprint } = options;
    const giveUpAt = options.deadline ?? this.parts.now() + CLAIM_TTL_MS;
    for (;;) {
      await this.adoptShared(fingerprint, false);
      const found = await earlier();
      if (found !== undefined) return found;
      if (await claims.claim(fingerprint, CLAIM_TTL_MS)) {
        try {
          // Between our look and our claim, the last claimant may have finished: look again, now alone.
          if (await this.adoptShared(fingerprint, true)) return (await earlier()) ?? (await start());
          return await start();
        } finally {
          await claims.unclaim(fingerprint);
        }
      }
      if (this.parts.now() + CLAIM_RETRY_MS > giveUpAt) throw claimedElsewhere(kind);
      await this.parts.sleep(CLAIM_RETRY_MS, options.signal);
    }
  }

  /** Copies what another replica recorded for this fingerprint into our journal; true when any was new. */
  private async adoptShared(fingerprint: string, withIntent: boolean): Promise<boolean> {
    const shared = await this.parts.claims.read(fingerprint);
    let adopted = false;
    for (const entry of withIntent ? [shared.started, shared.intent] : [shared.started]) {
      if (entry === undefined || this.parts.journal.knows(entry)) continue;
      adopted = true;
      await this.parts.journal.append(entry).catch((error: unknown) => {
        this.parts.logger("warning", "Could not copy another replica's start into the journal.", {
          error: String(error),
        });
      });
    }
    return adopted;
  }

  /** An identical start of the duplicate window whose outcome is unknown (it may have been charged). */
  private lostStart(fingerprint: string): JournalEntry | undefined {
    const lost = this.parts.journal.pendingIntents().findLast((entry) => entry.fingerprint === fingerprint);
    return lost?.key !== undefined && this.parts.now() - lost.started_at <= DUPLICATE_WINDOW_MS
      ? lost
      : undefined;
  }

  /** The identical image request of the duplicate window, as its answer (the journal keeps the URLs). */
  private imageDuplicate(fingerprint: string): ImageStartOutcome | undefined {
    const earlier = this.parts.journal.findDuplicate(fingerprint, DUPLICATE_WINDOW_MS);
    if (earlier?.kind !== "image") return undefined;
    this.parts.logger("info", "Returning the identical image request made earlier.", { id: earlier.id });
    const raw = earlier.result ?? {};
    const urls = Array.isArray(raw["image_urls"]) ? raw["image_urls"] : [];
    const image_urls = urls.filter((url) => typeof url === "string");
    return { image_urls, ...(earlier.id !== undefined && { image_id: earlier.id }), reused: true, raw };
  }

  /** The identical task of the duplicate window, checked to still exist on this service. */
  private async liveDuplicate(options: StartOptions): Promise<StartOutcome | undefined> {
    const earlier = this.parts.journal.findDuplicate(options.fingerprint, DUPLICATE_WINDOW_MS);
    if (earlier?.kind !== "video" || earlier.id === undefined) return undefined;
    let { status } = earlier;
    try {
      ({ status } = await this.parts.api.getVideo(earlier.id, {
        priority: "foreground",
        deadline: options.deadline,
      }));
    } catch (error) {
      // Unknown to the service (a restarted sandbox on the same port, say): another instance's task.
      if (error instanceof GenerationError && isUnknownTask(error)) {
        const unknown = "The journal's identical task is unknown to the service; starting a new one.";
        this.parts.logger("warning", unknown, { video_id: earlier.id });
        await this.sender.recordVoid(earlier, earlier.id);
        return undefined;
      }
      // The service could not say; the task was paid for and is most likely fine.
    }
    this.parts.logger("info", "Returning the identical video task started earlier.", {
      video_id: earlier.id,
    });
    return { video_id: earlier.id, status, reused: true, reconciled: false };
  }

  /** An identical start whose answer was lost: found in the history, reused; else nothing is sent. */
  private async settleLost(lost: JournalEntry, options: StartOptions): Promise<StartOutcome> {
    const { logger } = this.parts;
    logger("info", "An identical start lost its answer earlier; looking for it in the history.", {});
    const found = await this.settlement.settle(lost, options.deadline);
    if (!found) throw unsettledStart(lost, this.parts.now());
    logger("info", "Found the earlier start in the history.", { video_id: found.video_id });
    return { ...found, reused: true, reconciled: true };
  }

  private async sendVideo(body: GenerateVideoBody, options: StartOptions): Promise<StartOutcome> {
    // Room is kept for the history lookup an ambiguous failure needs, but a start always gets a fair try.
    const deadline =
      options.deadline && Math.max(this.parts.now() + MIN_START_MS, options.deadline - RECONCILE_RESERVE_MS);
    const sent = await this.sender.send("video", body, options, (idempotencyKey) =>
      this.parts.api.generateVideo(body, { priority: "foreground", idempotencyKey, deadline }),
    );
    if ("task" in sent) {
      await this.sender.recordVideo(sent.task, sent.intent);
      return { ...sent.task, reused: false, reconciled: false };
    }
    this.parts.logger("warning", "A video start failed ambiguously; looking for it in the history.", {
      code: sent.error.code,
    });
    const found = await this.settlement.settle(sent.intent, options.deadline);
    // Not found, the intent stays open: an identical request sends nothing while the start may still appear.
    if (!found) throw chargePossible(sent.error, VIDEO_CHARGE_POSSIBLE);
    this.parts.logger("info", "Found the started video task in the history.", { video_id: found.video_id });
    return { ...found, reused: false, reconciled: true };
  }

  private async sendImage(body: GenerateImageBody, options: StartOptions): Promise<ImageStartOutcome> {
    const deadline = options.deadline && Math.max(this.parts.now() + MIN_START_MS, options.deadline);
    const sent = await this.sender.send("image", body, options, (idempotencyKey) =>
      this.parts.api.generateImage(body, { priority: "foreground", idempotencyKey, deadline }),
    );
    // The service keeps no image history to look in: say plainly what may have happened.
    if (!("task" in sent)) throw chargePossible(sent.error, IMAGE_CHARGE_POSSIBLE);
    await this.sender.recordImage(sent.task, sent.intent);
    return { image_urls: sent.task.image_urls, reused: false, raw: sent.task.raw };
  }
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

/** An identical start held by another replica did not finish within this call's time. */
function claimedElsewhere(kind: "video" | "image"): GenerationError {
  const tool = kind === "video" ? "generate_video" : "generate_image";
  return new GenerationError(
    "timeout",
    `An identical ${tool} request is being started by another replica of this server and did not finish within this call's time. This call sent nothing and charged nothing.`,
    {
      transient: true,
      nextStep: `Call ${tool} again with the same arguments in a moment: it returns that result instead of paying again.`,
    },
  );
}
