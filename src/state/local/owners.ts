/**
 * Which caller started which video, when one service key serves several callers (gateway tokens, OAuth
 * subjects): a caller's get_status of a video another caller started is `not_found`, its list_videos lists its
 * own videos, and the settlement of a lost start never adopts a task another caller owns. Kept in the key's
 * state folder (`owners.json`, bounded) and, with several replicas, in the shared store. Callers that own the
 * whole account (stdio, passthrough keys) are not recorded: they see everything.
 */
import { NotFoundError } from "../../api/errors.js";
import { safeId } from "../../api/shapes.js";
import {
  MAX_PROMPT_CHARS,
  parseOwnedTask,
  readList,
  type OwnedTask,
  type OwnershipStore,
  type TaskLogger,
} from "../records.js";
import { JsonFile } from "./store.js";

/** Tasks kept at most; past it the oldest half goes. */
const MAX_ENTRIES = 20_000;

export class Ownership {
  private readonly owners = new Map<string, OwnedTask>();

  private constructor(
    private readonly file: JsonFile<OwnedTask[]>,
    private readonly shared: OwnershipStore | undefined,
    private readonly logger: TaskLogger,
  ) {}

  /** Loads `dir`'s record (none yet is fine); `dir` undefined keeps it in memory only. */
  static async open(
    dir: string | undefined,
    shared: OwnershipStore | undefined,
    logger: TaskLogger,
  ): Promise<Ownership> {
    const file = new JsonFile(dir, "owners.json", {
      label: "The record of who started which task",
      parse: readList(parseOwnedTask),
      logger,
    });
    const ownership = new Ownership(file, shared, logger);
    for (const task of await file.load().catch(() => [])) ownership.remember(task);
    return ownership;
  }

  /** Notes that `task.scope` started `task.video_id` (prompt shortened; no secret is ever part of it). */
  async record(task: OwnedTask): Promise<void> {
    const entry: OwnedTask = { ...task, prompt: task.prompt.slice(0, MAX_PROMPT_CHARS) };
    if (this.owners.get(entry.video_id)?.scope === entry.scope) return;
    this.remember(entry);
    const kept = this.file
      .update((tasks) => {
        const next = [...tasks.filter((known) => known.video_id !== entry.video_id), entry];
        return { next: next.length > MAX_ENTRIES ? next.slice(-MAX_ENTRIES / 2) : next, result: undefined };
      })
      .catch((error: unknown) => {
        this.logger("warning", "Could not write the record of who started which task.", {
          error: String(error),
        });
      });
    await Promise.all([kept, this.shared?.record(entry)]);
  }

  async owner(videoId: string): Promise<OwnedTask | undefined> {
    const local = this.owners.get(videoId);
    if (local !== undefined || this.shared === undefined) return local;
    const shared = await this.shared.owner(videoId);
    if (shared !== undefined) this.remember(shared);
    return shared;
  }

  /** Refuses, as the service would for a foreign id, a video that `scope` did not start. */
  async mustOwn(videoId: string, scope: string): Promise<void> {
    if ((await this.owner(videoId))?.scope === scope) return;
    throw new NotFoundError(
      `No video task with video_id ${JSON.stringify(safeId(videoId) ?? "?")} was started by you.`,
      { nextStep: "Call list_videos to see the videos you started, and use one of their video_ids." },
    );
  }

  async isOwned(videoId: string): Promise<boolean> {
    return (await this.owner(videoId)) !== undefined;
  }

  /** The scope's videos, newest first. */
  async list(scope: string, offset: number, limit: number): Promise<{ items: OwnedTask[]; total: number }> {
    if (this.shared !== undefined) {
      const { ids, total } = await this.shared.list(scope, offset, limit);
      if (total > 0) {
        const found = await Promise.all(ids.map((id) => this.owner(id)));
        return { items: found.filter((task) => task?.scope === scope) as OwnedTask[], total };
      }
    }
    const mine = [...this.owners.values()]
      .filter((task) => task.scope === scope)
      .sort((a, b) => b.started_at - a.started_at);
    return { items: mine.slice(offset, offset + limit), total: mine.length };
  }

  get empty(): boolean {
    return this.owners.size === 0;
  }

  async close(): Promise<void> {
    await this.file.settled();
  }

  private remember(task: OwnedTask): void {
    this.owners.delete(task.video_id);
    this.owners.set(task.video_id, task);
    if (this.owners.size > MAX_ENTRIES) this.owners.delete(this.owners.keys().next().value ?? "");
  }
}
