/**
 * Settling a video start whose answer was lost (an ambiguous failure, a crash, a timeout that said "a charge
 * is possible"): the newest page of the service's history is searched for it (history-match.ts), never
 * handing over a task this server already knows. A found task is journaled as started; the intents an
 * earlier run left behind are looked up once, and an old one the history does not have is settled as never
 * processed. Images have no history: their lost starts are left to the user (starter.ts).
 */
import { GenerationError } from "../api/errors.js";
import { findVideoId } from "../api/find.js";
import type { GenerateVideoBody, GenerationApi, JsonObject } from "../api/types.js";
import type { Sleep } from "../sleep.js";
import { pickMatch } from "./history-match.js";
import type { Journal } from "./journal.js";
import type { TaskLogger } from "./logger.js";
import type { Ownership } from "./ownership.js";
import { voidOf, type StartJournal, type StartedTask } from "./start-journal.js";

/** Clock difference tolerated between us and the service when matching a history item to our request. */
export const RECONCILE_SKEW_MS = 2 * 60 * 1000;
const RECONCILE_PAGE_LIMIT = 50;
const RECONCILE_ATTEMPTS = 2;
const RECONCILE_PAUSE_MS = 2000;
/** An unsettled intent older than this cannot be a duplicate any more, and the history page would not show it. */
const SETTLE_MAX_AGE_MS = 60 * 60 * 1000;

export interface SettlementOptions {
  api: Pick<GenerationApi, "listVideos">;
  journal: Journal;
  startJournal: StartJournal;
  /** Who started which task; settlement never adopts a task another caller owns. */
  ownership: Ownership | undefined;
  now: () => number;
  sleep: Sleep;
  logger: TaskLogger;
}

export class Settlement {
  private readonly api: SettlementOptions["api"];
  private readonly journal: Journal;
  private readonly startJournal: StartJournal;
  private readonly ownership: Ownership | undefined;
  private readonly now: () => number;
  private readonly sleep: Sleep;
  private readonly logger: TaskLogger;
  /** Whether the intents an earlier run left behind have been looked up. */
  private leftoversSettled = false;

  constructor(options: SettlementOptions) {
    this.api = options.api;
    this.journal = options.journal;
    this.startJournal = options.startJournal;
    this.ownership = options.ownership;
    this.now = options.now;
    this.sleep = options.sleep;
    this.logger = options.logger;
  }

  /**
   * Intents an earlier run left without an outcome (it crashed or was killed around a start) are looked up
   * once, before this process starts anything: a found task is journaled (so its id is never lost and the
   * duplicate guard sees it), an old one that the history does not have is settled as never processed.
   */
  async settleLeftovers(deadline: number | undefined): Promise<void> {
    if (this.leftoversSettled) return;
    const now = this.now();
    const leftovers = this.journal
      .pendingIntents()
      .filter((entry) => entry.key !== undefined && !this.startJournal.isOwnIntent(entry.key));
    const fresh = leftovers.filter((entry) => now - entry.started_at <= SETTLE_MAX_AGE_MS);
    for (const stale of leftovers.filter((entry) => !fresh.includes(entry))) {
      await this.startJournal.record({ ...voidOf(stale), started_at: now });
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
        await this.startJournal.recordVideo(found, { entry: intent, body: request });
      } else if (now - intent.started_at > RECONCILE_SKEW_MS) {
        await this.startJournal.record({ ...voidOf(intent), started_at: now });
      }
      // A younger one stays open: an identical request settles it again (the history may lag behind).
    }
  }

  /**
   * Looks for our task in the newest page of the history: same prompt, same model when the item names one,
   * created no earlier than the send (less clock skew) when it carries a time, and not a task we already
   * know. A failing history call counts as "not found". Bounded by the deadline.
   */
  async reconcile(
    body: GenerateVideoBody,
    sentAt: number,
    deadline: number | undefined,
  ): Promise<StartedTask | undefined> {
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
}
