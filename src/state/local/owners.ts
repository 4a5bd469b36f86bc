/**
 * Which caller started which video, when one service key serves several (`owners.json`, bounded). Callers
 * that own the whole account (stdio, passthrough keys) are not recorded: they see everything.
 */
import {
  parseOwnedTask,
  readList,
  type OwnedTask,
  type OwnershipStore,
  type TaskLogger,
} from "../records.js";
import { JsonFile } from "./store.js";

/** Tasks kept at most; past it the oldest half goes. */
const MAX_ENTRIES = 20_000;

export class LocalOwners implements OwnershipStore {
  private readonly owners = new Map<string, OwnedTask>();

  private constructor(
    private readonly file: JsonFile<OwnedTask[]>,
    private readonly logger: TaskLogger,
  ) {}

  /** `dir` undefined: in memory only. */
  static async open(dir: string | undefined, logger: TaskLogger): Promise<LocalOwners> {
    const file = new JsonFile(dir, "owners.json", {
      label: "The record of who started which task",
      parse: readList(parseOwnedTask),
      logger,
    });
    const owners = new LocalOwners(file, logger);
    for (const task of await file.load().catch(() => [])) owners.remember(task);
    return owners;
  }

  async record(entry: OwnedTask): Promise<void> {
    if (this.owners.get(entry.video_id)?.scope === entry.scope) return;
    this.remember(entry);
    await this.file
      .update((tasks) => {
        const next = [...tasks.filter((known) => known.video_id !== entry.video_id), entry];
        return { next: next.length > MAX_ENTRIES ? next.slice(-MAX_ENTRIES / 2) : next, result: undefined };
      })
      .catch((error: unknown) => {
        this.logger("warning", "Could not write the record of who started which task.", {
          error: String(error),
        });
      });
  }

  async owner(videoId: string): Promise<OwnedTask | undefined> {
    return this.owners.get(videoId);
  }

  async list(scope: string, offset: number, limit: number): Promise<{ items: OwnedTask[]; total: number }> {
    const mine = [...this.owners.values()]
      .filter((task) => task.scope === scope)
      .sort((a, b) => b.started_at - a.started_at);
    return { items: mine.slice(offset, offset + limit), total: mine.length };
  }

  holds(): boolean {
    return this.owners.size > 0;
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
