/**
 * The journal of started tasks: one JSON line per paid start, flushed to disk before the tool answers, so a
 * task survives a client timeout or a restart. It backs id recovery, the `allow_duplicate` guard and the
 * reconciliation of ambiguous starts. Bounded: past its limits it keeps the newest half.
 */
import { randomBytes } from "node:crypto";
import type { FileHandle } from "node:fs/promises";
import { mkdir, open, readFile, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { isObject } from "../api/normalize.js";
import type { JsonObject } from "../api/types.js";
import type { TaskLogger } from "./logger.js";
import { silentLogger } from "./logger.js";

export interface JournalEntry {
  kind: "video" | "image";
  /** The video_id, or the image task's id when the service gave one. */
  id: string | undefined;
  fingerprint: string;
  /** Epoch milliseconds at which the start request was sent. */
  started_at: number;
  /** The normalized body that was sent (never a secret). */
  request: JsonObject;
  /** For images: `{ image_urls }`. */
  result?: JsonObject;
  status?: string;
}

export interface JournalOptions {
  now?: () => number;
  /** Lines kept before compaction. Default 1000. */
  maxEntries?: number;
  /** File size kept before compaction. Default 1 MiB. */
  maxBytes?: number;
  logger?: TaskLogger;
}

export const JOURNAL_FILE = "tasks.jsonl";
const DEFAULT_MAX_ENTRIES = 1000;
const DEFAULT_MAX_BYTES = 1024 * 1024;

export class Journal {
  readonly path: string;
  private readonly now: () => number;
  private readonly maxEntries: number;
  private readonly maxBytes: number;
  private readonly logger: TaskLogger;
  /** Oldest first, as on disk. */
  private entries: JournalEntry[] = [];
  private bytes = 0;
  private handle: FileHandle | undefined;
  /** The file ends in a torn line: the next append starts a new line first. */
  private needsNewline = false;
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    readonly dir: string,
    options: JournalOptions,
  ) {
    this.path = join(dir, JOURNAL_FILE);
    this.now = options.now ?? Date.now;
    this.maxEntries = Math.max(2, options.maxEntries ?? DEFAULT_MAX_ENTRIES);
    this.maxBytes = Math.max(1024, options.maxBytes ?? DEFAULT_MAX_BYTES);
    this.logger = options.logger ?? silentLogger;
  }

  /** Creates the folder (0700) when missing and loads what an earlier run wrote, skipping unreadable lines. */
  static async open(dir: string, options: JournalOptions = {}): Promise<Journal> {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const journal = new Journal(dir, options);
    await journal.load();
    return journal;
  }

  /** Appends one line and resolves once it is fsync'ed. Appends are serialized. */
  append(entry: JournalEntry): Promise<void> {
    const run = this.queue.then(() => this.write(entry));
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** The newest entry with this fingerprint started within `withinMs` of now (inclusive). */
  findDuplicate(fingerprint: string, withinMs: number): JournalEntry | undefined {
    const now = this.now();
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const entry = this.entries[i];
      if (entry === undefined || entry.fingerprint !== fingerprint) continue;
      const age = now - entry.started_at;
      if (age >= 0 && age <= withinMs) return entry;
    }
    return undefined;
  }

  /** Newest first. */
  recent(limit: number = this.entries.length): JournalEntry[] {
    return this.entries.slice(Math.max(0, this.entries.length - limit)).reverse();
  }

  has(id: string): boolean {
    return this.entries.some((entry) => entry.id === id);
  }

  /**
   * Picks up lines another server process appended since we last read (two clients may share the state
   * folder). Cheap when nothing changed: one stat.
   */
  async refresh(): Promise<void> {
    const run = this.queue.then(async () => {
      const info = await stat(this.path).catch(() => undefined);
      if (info !== undefined && info.size !== this.bytes) await this.load();
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    await this.queue;
    await this.handle?.close();
    this.handle = undefined;
  }

  private async load(): Promise<void> {
    let text = "";
    try {
      text = await readFile(this.path, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
    this.bytes = Buffer.byteLength(text);
    this.needsNewline = text.length > 0 && !text.endsWith("\n");
    this.entries = [];
    for (const line of text.split("\n")) {
      const entry = parseEntry(line);
      if (entry) this.entries.push(entry);
    }
  }

  private async write(entry: JournalEntry): Promise<void> {
    const line = `${this.needsNewline ? "\n" : ""}${JSON.stringify(entry)}\n`;
    await this.dropHandleIfReplaced();
    this.handle ??= await open(this.path, "a", 0o600);
    await this.handle.write(line);
    await this.handle.sync();
    this.needsNewline = false;
    this.bytes += Buffer.byteLength(line);
    this.entries.push(entry);
    if (this.entries.length <= this.maxEntries && this.bytes <= this.maxBytes) return;
    try {
      await this.compact();
    } catch (error) {
      // The entry itself is safe on disk; a failed compaction only leaves the file longer until next time.
      this.logger("warning", "Could not compact the task journal.", {
        path: this.path,
        error: String(error),
      });
    }
  }

  /** Another process may have compacted (renamed a new file over ours): append to the file now at the path. */
  private async dropHandleIfReplaced(): Promise<void> {
    if (!this.handle) return;
    const [held, current] = await Promise.all([this.handle.stat(), stat(this.path).catch(() => undefined)]);
    if (current !== undefined && held.ino === current.ino && held.dev === current.dev) return;
    await this.handle.close();
    this.handle = undefined;
  }

  /** Rewrites the file with the newest half through a synced temporary file and an atomic rename. */
  private async compact(): Promise<void> {
    let kept = this.entries.slice(-Math.floor(this.maxEntries / 2));
    const lines = kept.map((entry) => `${JSON.stringify(entry)}\n`);
    let size = lines.reduce((sum, line) => sum + Buffer.byteLength(line), 0);
    while (size > this.maxBytes / 2 && lines.length > 1) {
      size -= Buffer.byteLength(lines.shift() ?? "");
      kept = kept.slice(1);
    }
    const temp = `${this.path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
    const out = await open(temp, "w", 0o600);
    try {
      await out.write(lines.join(""));
      await out.sync();
    } finally {
      await out.close();
    }
    try {
      await this.handle?.close();
      this.handle = undefined;
      await rename(temp, this.path);
    } catch (error) {
      await rm(temp, { force: true });
      throw error;
    }
    await syncDir(this.dir);
    this.entries = kept;
    this.bytes = size;
  }
}

/** Makes the rename durable where the platform allows it (not on Windows, where opening a folder fails). */
async function syncDir(dir: string): Promise<void> {
  try {
    const handle = await open(dir, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Best effort: the data itself is already synced.
  }
}

function parseEntry(line: string): JournalEntry | undefined {
  if (line.trim() === "") return undefined;
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  const record = value as JsonObject;
  const { kind, id, fingerprint, started_at: startedAt, request, result, status } = record;
  if (kind !== "video" && kind !== "image") return undefined;
  if (typeof fingerprint !== "string" || typeof startedAt !== "number" || !Number.isFinite(startedAt))
    return undefined;
  if (id !== undefined && id !== null && typeof id !== "string") return undefined;
  const entry: JournalEntry = {
    kind,
    id: typeof id === "string" ? id : undefined,
    fingerprint,
    started_at: startedAt,
    request: isObject(request) ? request : {},
  };
  if (isObject(result)) entry.result = result;
  if (typeof status === "string") entry.status = status;
  return entry;
}

/**
 * The platform's per-user state folder for the journal: `$XDG_STATE_HOME/generation-mcp` or
 * `~/.local/state/generation-mcp` on Linux and other Unixes, `~/Library/Application Support/generation-mcp`
 * on macOS, `%LOCALAPPDATA%\generation-mcp` on Windows.
 */
export function defaultStateDir(env: NodeJS.ProcessEnv, platform: NodeJS.Platform, home: string): string {
  const name = "generation-mcp";
  if (platform === "win32") {
    const base = env["LOCALAPPDATA"] || `${home}\\AppData\\Local`;
    return `${base.replace(/[\\/]+$/, "")}\\${name}`;
  }
  if (platform === "darwin") return join(home, "Library", "Application Support", name);
  const xdg = env["XDG_STATE_HOME"];
  // The XDG spec says relative values are invalid and must be ignored.
  if (xdg && xdg.startsWith("/")) return join(xdg, name);
  return join(home, ".local", "state", name);
}
