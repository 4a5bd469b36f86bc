/**
 * Which caller started which video, when one service key serves several callers (gateway tokens, OAuth
 * subjects): a caller's get_status of a video another caller started is `not_found`, its list_videos lists
 * its own videos, and the settlement of a lost start never adopts a task another caller owns. Kept beside the
 * journal (`owners.jsonl`, one line per task, bounded) and, with several replicas, in the shared store.
 * Callers that own the whole account (stdio, passthrough keys) are not recorded: they see everything.
 */
import { appendFile, mkdir, readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { NotFoundError } from "../api/errors.js";
import { safeId } from "../api/shapes.js";
import type { OwnedTask, OwnershipStore } from "../state/shared-state.js";
import type { TaskLogger } from "./logger.js";
import { silentLogger } from "./logger.js";

const FILE_NAME = "owners.jsonl";
/** Lines kept on disk and in memory at most; past it the oldest half goes. */
const MAX_ENTRIES = 20_000;
/** How long a replica's record of an owner lasts in the shared store. */
const SHARED_TTL_MS = 30 * 24 * 60 * 60 * 1000;
const MAX_PROMPT_CHARS = 500;

/** An ownership line as read back (from disk or from the shared store), checked; undefined when invalid. */
export function parseOwnedTask(value: unknown): OwnedTask | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const { video_id: videoId, scope, started_at: startedAt, prompt, model } = value as Record<string, unknown>;
  const id = typeof videoId === "string" ? safeId(videoId) : undefined;
  if (id === undefined || id !== videoId) return undefined;
  if (typeof scope !== "string" || !/^[A-Za-z0-9:_-]{1,80}$/.test(scope)) return undefined;
  if (typeof startedAt !== "number" || !Number.isFinite(startedAt)) return undefined;
  if (typeof prompt !== "string" || prompt.length > MAX_PROMPT_CHARS) return undefined;
  if (model !== undefined && (typeof model !== "string" || !/^[A-Za-z0-9._-]{1,64}$/.test(model))) {
    return undefined;
  }
  return { video_id: id, scope, started_at: startedAt, prompt, ...(model !== undefined && { model }) };
}

export class Ownership {
  private readonly owners = new Map<string, OwnedTask>();
  private writing: Promise<void> = Promise.resolve();

  private constructor(
    private readonly file: string | undefined,
    private readonly shared: OwnershipStore | undefined,
    private readonly logger: TaskLogger,
  ) {}

  /** Loads `dir`'s record (none yet is fine); `dir` undefined keeps it in memory only. */
  static async open(
    dir: string | undefined,
    shared?: OwnershipStore,
    logger: TaskLogger = silentLogger,
  ): Promise<Ownership> {
    const ownership = new Ownership(
      dir === undefined ? undefined : path.join(dir, FILE_NAME),
      shared,
      logger,
    );
    await ownership.load();
    return ownership;
  }

  /** Notes that `task.scope` started `task.video_id` (prompt shortened; no secret is ever part of it). */
  async record(task: OwnedTask): Promise<void> {
    const entry: OwnedTask = { ...task, prompt: task.prompt.slice(0, MAX_PROMPT_CHARS) };
    if (this.owners.get(entry.video_id)?.scope === entry.scope) return;
    this.remember(entry);
    await Promise.all([this.append(entry), this.shared?.record(entry, SHARED_TTL_MS)]);
  }

  /** Who started this video, as far as this server knows. */
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
      {
        nextStep: "Call list_videos to see the videos you started, and use one of their video_ids.",
      },
    );
  }

  /** Whether any caller of this key started this video through this server. */
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
    await this.writing;
  }

  private remember(task: OwnedTask): void {
    this.owners.delete(task.video_id);
    this.owners.set(task.video_id, task);
  }

  private async load(): Promise<void> {
    if (this.file === undefined) return;
    let text: string;
    try {
      text = await readFile(this.file, "utf8");
    } catch {
      return; // Nothing recorded yet.
    }
    for (const line of text.split("\n")) {
      if (line.trim() === "") continue;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        continue;
      }
      const task = parseOwnedTask(value);
      if (task !== undefined) this.remember(task);
    }
  }

  private append(task: OwnedTask): Promise<void> {
    const file = this.file;
    if (file === undefined) return Promise.resolve();
    this.writing = this.writing.then(async () => {
      try {
        await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
        if (this.owners.size > MAX_ENTRIES) {
          const kept = [...this.owners.values()].slice(-MAX_ENTRIES / 2);
          this.owners.clear();
          for (const entry of kept) this.owners.set(entry.video_id, entry);
          const temporary = `${file}.${process.pid}.tmp`;
          await writeFile(temporary, kept.map((entry) => `${JSON.stringify(entry)}\n`).join(""), {
            mode: 0o600,
          });
          await rename(temporary, file);
          return;
        }
        await appendFile(file, `${JSON.stringify(task)}\n`, { mode: 0o600 });
      } catch (error) {
        this.logger("warning", "Could not write the record of who started which task.", {
          error: String(error),
        });
      }
    });
    return this.writing;
  }
}
