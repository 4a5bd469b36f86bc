/**
 * Settling a video start whose answer was lost (an ambiguous failure, a crash, a timeout that said "a charge
 * is possible"): the newest page of the service's history is searched for it (history-match.ts), never
 * handing over a task this server already knows. A found task is journaled as started. One not found yet may
 * still appear (a proxy or the service's own queue can hold a start for a while), so it is looked for again in
 * the background until the duplicate window ends; only then is it settled as never processed. The intents an
 * earlier run left behind are looked up once, then the same way. Images have no history: their lost starts
 * are left to the user (starter.ts).
 */
import { GenerationError } from "../api/errors.js";
import { findVideoId } from "../api/shapes.js";
import type { GenerateVideoBody, GenerationApi, JsonObject } from "../api/types.js";
import type { Sleep } from "../sleep.js";
import { pickMatch } from "./history-match.js";
import type { Journal, JournalEntry } from "./journal.js";
import type { TaskLogger } from "./logger.js";
import type { Ownership } from "./ownership.js";
import { voidOf, type StartJournal, type StartedTask } from "./start-journal.js";

/** Clock difference tolerated between us and the service when matching a history item to our request. */
export const RECONCILE_SKEW_MS = 2 * 60 * 1000;
const RECONCILE_PAGE_LIMIT = 50;
const RECONCILE_ATTEMPTS = 2;
const RECONCILE_PAUSE_MS = 2000;
/** An unsettled intent older than this is not looked up at all: the history page would not show it. */
const SETTLE_MAX_AGE_MS = 60 * 60 * 1000;
/** The background search of a lost start: its first pause, doubled each time up to the last. */
const BACKGROUND_FIRST_PAUSE_MS = 5_000;
const BACKGROUND_MAX_PAUSE_MS = 60_000;

export interface SettlementOptions {
  api: Pick<GenerationApi, "listVideos">;
  journal: Journal;
  startJournal: StartJournal;
  /** Who started which task; settlement never adopts a task another caller owns. */
  ownership: Ownership | undefined;
  /** How long a lost start stays open (the duplicate window): it is looked for in the background until then. */
  windowMs: number;
  /** Ends the background searches (the runtime is closing). */
  stopping: AbortSignal | undefined;
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
  private readonly windowMs: number;
  private readonly stopping: AbortSignal | undefined;
  /** Whether the intents an earlier run left behind have been looked up. */
  private leftoversSettled = false;
  /** Lost starts being looked for in the background, by Idempotency-Key. */
  private readonly searching = new Set<string>();

  constructor(options: SettlementOptions) {
    this.api = options.api;
    this.journal = options.journal;
    this.startJournal = options.startJournal;
    this.ownership = options.ownership;
    this.now = options.now;
    this.sleep = options.sleep;
    this.logger = options.logger;
    this.windowMs = options.windowMs;
    this.stopping = options.stopping;
  }

  /**
   * Intents an earlier run left without an outcome (it crashed or was killed around a start) are looked up
   * once, before this process starts anything: a found task is journaled (so its id is never lost and the
   * duplicate guard sees it); one not found is looked for in the background while it is inside the duplicate
   * window, and settled as never processed once it is outside.
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
      } else if (now - intent.started_at > this.windowMs) {
        await this.startJournal.record({ ...voidOf(intent), started_at: now });
      } else {
        this.settleLater(intent);
      }
    }
  }

  /**
   * Keeps looking for a lost video start in the history, in the background and at background priority, until
   * it appears (it is then journaled, so an identical request gets it as reused) or the duplicate window ends
   * (it is then settled as never processed, and an identical request may start again).
   */
  settleLater(intent: JournalEntry): void {
    const key = intent.key;
    if (key === undefined || intent.kind !== "video" || this.searching.has(key)) return;
    this.searching.add(key);
    const request = intent.request as GenerateVideoBody;
    const open = () => this.journal.pendingIntents().some((entry) => entry.key === key);
    const search = async () => {
      for (let pause = BACKGROUND_FIRST_PAUSE_MS; ; pause = Math.min(pause * 2, BACKGROUND_MAX_PAUSE_MS)) {
        const left = intent.started_at + this.windowMs - this.now();
        await this.sleep(Math.max(1, Math.min(pause, left)), this.stopping);
        if (!open()) return;
        if (this.now() - intent.started_at >= this.windowMs) {
          this.logger("info", "A lost start did not appear in the history within the duplicate window.", {});
          await this.startJournal.record({ ...voidOf(intent), started_at: this.now() });
          return;
        }
        const found = await this.findOnce(request, intent.started_at, "background");
        if (found === undefined || !open()) continue;
        this.logger("info", "A start whose answer was lost appeared in the history.", {
          video_id: found.video_id,
        });
        await this.startJournal.recordVideo(found, { entry: intent, body: request });
        return;
      }
    };
    void search()
      .catch(() => undefined)
      .finally(() => this.searching.delete(key));
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
      const match = await this.findOnce(body, sentAt, "foreground", deadline);
      if (match) return match;
      // The service may list a new task a moment after creating it.
      if (attempt >= RECONCILE_ATTEMPTS) break;
      if (deadline !== undefined && this.now() + RECONCILE_PAUSE_MS + 1000 > deadline) break;
      await this.sleep(RECONCILE_PAUSE_MS);
    }
    return undefined;
  }

  /** One look at the newest page of the history; a failing history call counts as "not found". */
  private async findOnce(
    body: GenerateVideoBody,
    sentAt: number,
    priority: "foreground" | "background",
    deadline?: number,
  ): Promise<StartedTask | undefined> {
    try {
      const page = await this.api.listVideos(
        { page: 1, limit: RECONCILE_PAGE_LIMIT },
        { priority, ...(deadline !== undefined && { deadline }), signal: this.stopping },
      );
      return pickMatch(page.items, body, sentAt - RECONCILE_SKEW_MS, await this.knownAmong(page.items));
    } catch (error) {
      this.logger("warning", "The history call failed while reconciling a start.", {
        code: error instanceof GenerationError ? error.code : undefined,
      });
      return undefined;
    }
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
