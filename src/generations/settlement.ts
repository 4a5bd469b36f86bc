/**
 * Settling a video start whose answer was lost: the newest page of the history is searched for it (never a
 * task already known). One not found may still appear (a queue can hold a start a while): it is looked for
 * in the background until the duplicate window ends. Images have no history: the user settles theirs.
 */
import { GenerationError } from "../api/errors.js";
import { findVideoId, toHistoryItem } from "../api/shapes.js";
import type { GenerateVideoBody, GenerationApi, JsonObject, RequestPriority } from "../api/types.js";
import { resolveVideoModel } from "../models.js";
import type { JournalEntry } from "../state/records.js";
import { normalizePrompt } from "./fingerprint.js";
import { DUPLICATE_WINDOW_MS, type SenderParts, type StartSender } from "./sender.js";

/** Clock difference tolerated between us and the service when matching a history item. */
export const RECONCILE_SKEW_MS = 2 * 60 * 1000;
const RECONCILE_PAGE_LIMIT = 50;
const RECONCILE_PAUSE_MS = 2000;
/** An intent older than this is not looked up: the history page would not show it. */
const SETTLE_MAX_AGE_MS = 60 * 60 * 1000;
/** The background search's pause, doubled each time up to the max. */
const BACKGROUND_FIRST_PAUSE_MS = 5_000;
const BACKGROUND_MAX_PAUSE_MS = 60_000;

export class Settlement {
  private leftoversSettled = false;
  /** By Idempotency-Key. */
  private readonly searching = new Set<string>();

  constructor(
    private readonly parts: SenderParts & {
      api: Pick<GenerationApi, "listVideos">;
      stopping?: AbortSignal | undefined;
    },
    private readonly sender: StartSender,
  ) {}

  /** Looks up, once and before this process starts anything, the intents an earlier run left open. */
  async settleLeftovers(deadline: number | undefined): Promise<void> {
    if (this.leftoversSettled) return;
    const { sender } = this;
    const at = this.parts.now();
    const leftovers = this.parts.journal
      .pendingIntents()
      .filter((entry) => !sender.isOwnIntent(entry.key ?? ""));
    const fresh = leftovers.filter((entry) => at - entry.started_at <= SETTLE_MAX_AGE_MS);
    for (const stale of leftovers.filter((entry) => !fresh.includes(entry))) await sender.recordVoid(stale);
    // Images have no history to look in: an identical request is refused while one is open (starter.ts).
    const videos = fresh.filter((entry) => entry.kind === "video");
    if (videos.length > 0) {
      const items = await this.history("foreground", deadline);
      if (items === undefined) return;
      const known = await this.knownAmong(items);
      for (const intent of videos) {
        const found = pickMatch(items, intent, known);
        if (found) {
          this.parts.logger("info", "Settled an earlier start whose answer was lost: it was started.", {
            video_id: found.video_id,
          });
          await sender.recordVideo(found, intent);
        } else if (at - intent.started_at > DUPLICATE_WINDOW_MS) {
          await sender.recordVoid(intent);
        } else {
          this.settleLater(intent);
        }
      }
    }
    this.leftoversSettled = true;
  }

  /** At background priority; once found and journaled, an identical request gets the task as reused. */
  private settleLater(intent: JournalEntry): void {
    const { key } = intent;
    if (key === undefined || intent.kind !== "video" || this.searching.has(key)) return;
    this.searching.add(key);
    const { sender } = this;
    const { now, logger } = this.parts;
    const open = () => this.parts.journal.pendingIntents().some((entry) => entry.key === key);
    const search = async () => {
      for (let pause = BACKGROUND_FIRST_PAUSE_MS; ; pause = Math.min(pause * 2, BACKGROUND_MAX_PAUSE_MS)) {
        const left = intent.started_at + DUPLICATE_WINDOW_MS - now();
        await this.parts.sleep(Math.max(1, Math.min(pause, left)), this.parts.stopping);
        if (!open()) return;
        if (now() - intent.started_at >= DUPLICATE_WINDOW_MS) {
          logger("info", "A lost start did not appear in the history within the duplicate window.", {});
          return sender.recordVoid(intent);
        }
        const found = await this.findOnce(intent, "background");
        if (found === undefined || !open()) continue;
        logger("info", "A start whose answer was lost appeared in the history.", {
          video_id: found.video_id,
        });
        return sender.recordVideo(found, intent);
      }
    };
    void search()
      .catch(() => undefined)
      .finally(() => this.searching.delete(key));
  }

  /** Looks twice, a moment apart (a new task may be listed late), then in the background. */
  async settle(intent: JournalEntry, deadline: number | undefined) {
    let found = await this.findOnce(intent, "foreground", deadline);
    if (!found && (deadline === undefined || this.parts.now() + RECONCILE_PAUSE_MS + 1000 <= deadline)) {
      await this.parts.sleep(RECONCILE_PAUSE_MS);
      found = await this.findOnce(intent, "foreground", deadline);
    }
    if (found) await this.sender.recordVideo(found, intent);
    else this.settleLater(intent);
    return found;
  }

  /** One look at the newest page of the history; a failing history call counts as "not found". */
  private async findOnce(intent: JournalEntry, priority: RequestPriority, deadline?: number) {
    const items = await this.history(priority, deadline);
    return items && pickMatch(items, intent, await this.knownAmong(items));
  }

  private async history(priority: RequestPriority, deadline: number | undefined) {
    try {
      const page = await this.parts.api.listVideos(
        { page: 1, limit: RECONCILE_PAGE_LIMIT },
        { priority, ...(deadline !== undefined && { deadline }), signal: this.parts.stopping },
      );
      return page.items;
    } catch (error) {
      this.parts.logger("warning", "Could not read the history to settle a start whose answer was lost.", {
        code: error instanceof GenerationError ? error.code : undefined,
      });
      return undefined;
    }
  }

  /** Items this server already knows: journaled, or started by a caller of this key on any replica. */
  private async knownAmong(items: JsonObject[]): Promise<(id: string) => boolean> {
    const owned = new Set<string>();
    const ids = items.map((item) => findVideoId(item)).filter((id): id is string => id !== undefined);
    await Promise.all(
      ids.map(async (id) => (await this.parts.ownership.owner(id)) !== undefined && owned.add(id)),
    );
    return (id) => owned.has(id) || this.parts.journal.has(id);
  }
}

/**
 * The history item a lost start created: same prompt, same model when it names one, same duration and aspect
 * ratio when both say, created no earlier than the send (less clock skew), not a known task; the newest wins.
 */
function pickMatch(items: JsonObject[], intent: JournalEntry, known: (id: string) => boolean) {
  const body = intent.request as GenerateVideoBody;
  const notBefore = intent.started_at - RECONCILE_SKEW_MS;
  const prompt = normalizePrompt(body.prompt);
  const model = resolveVideoModel(body.model) ?? body.model;
  let best: { id: string; status: string | undefined; createdAt: number | undefined } | undefined;
  for (const read of items.map(toHistoryItem)) {
    const id = read.video_id;
    if (id === undefined || known(id)) continue;
    if (read.prompt === undefined || normalizePrompt(read.prompt) !== prompt) continue;
    if (read.model !== undefined && (resolveVideoModel(read.model) ?? read.model) !== model) continue;
    if (!sameWhenBothPresent(read.duration, body.duration)) continue;
    if (!sameWhenBothPresent(read.aspect_ratio, body.aspect_ratio)) continue;
    const createdAt = read.created_at;
    if (createdAt !== undefined && createdAt < notBefore) continue;
    // Without times, the service's order (newest first, usually) decides.
    if (!best || (createdAt !== undefined && (best.createdAt === undefined || createdAt > best.createdAt))) {
      best = { id, status: read.status, createdAt };
    }
  }
  return best && { video_id: best.id, status: best.status };
}

function sameWhenBothPresent(itemValue: unknown, sent: string | number | undefined): boolean {
  if (sent === undefined || itemValue === undefined) return true;
  return typeof sent === "number" ? Number(itemValue) === sent : String(itemValue) === sent;
}
