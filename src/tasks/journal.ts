/**
 * The journal of paid starts: one JSON line per event, flushed to disk before anything depends on it, so a
 * task survives a client timeout, a restart or a `kill -9`. Each start is written twice: its intent (with
 * the Idempotency-Key) before the POST leaves, and its outcome after: the task that was started, or "void"
 * when the service said it did nothing. An intent without an outcome is a start whose answer was lost; the
 * task starter settles it (history lookup) before it lets an identical request pay again. The journal backs
 * id recovery, the `allow_duplicate` guard and that settlement. Bounded: past its limits it keeps the newest
 * half, and every intent still waiting for its outcome.
 */
import { randomBytes } from "node:crypto";
import type { FileHandle } from "node:fs/promises";
import { mkdir, open, readFile, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { isObject } from "../api/shapes.js";
import type { JsonObject } from "../api/types.js";
import type { TaskLogger } from "./logger.js";
import { silentLogger } from "./logger.js";

export type JournalPhase = "intent" | "started" | "void";

export interface JournalEntry {
  kind: "video" | "image";
  /** "intent" before the POST, "started" for a task (lines of older versions have none), "void" settles. */
  phase?: JournalPhase;
  /** The start's Idempotency-Key: links an intent to its outcome, and is reused when the start is re-sent. */
  key?: string;
  /** The video_id, or the image task's id when the service gave one (a void may name a stale task). */
  id: string | undefined;
  fingerprint: string;
  /** Epoch milliseconds at which the start request was sent (for a void: when it was settled). */
  started_at: number;
  /** The normalized body that was sent (never a secret). */
  request: JsonObject;
  /** For images: `{ image_urls }`. */
  result?: JsonObject;
  status?: string;
  /** The caller that started it, when one key serves several (Caller.scope). */
  scope?: string;
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
  /** Undefined for a journal kept only in memory. */
  readonly path: string | undefined;
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
    readonly dir: string | undefined,
    options: JournalOptions,
  ) {
    this.path = dir === undefined ? undefined : join(dir, JOURNAL_FILE);
    this.now = options.now ?? Date.now;
    this.maxEntries = Math.max(2, options.maxEntries ?? DEFAULT_MAX_ENTRIES);
    this.maxBytes = Math.max(1024, options.maxBytes ?? DEFAULT_MAX_BYTES);
    this.logger = options.logger ?? silentLogger;
  }

  /**
   * A journal that lives and dies with the process: for a service that does the same (the embedded sandbox),
   * so no other process can ever see its tasks or hand them back.
   */
  static inMemory(options: JournalOptions = {}): Journal {
    return new Journal(undefined, options);
  }

  /**
   * Loads what an earlier run wrote, skipping unreadable lines. The folder (0700) is made at the first
   * append, not before: a caller that never starts anything leaves nothing on disk.
   */
  static async open(dir: string, options: JournalOptions = {}): Promise<Journal> {
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

  /**
   * The newest task started with this fingerprint within `withinMs` of now (inclusive), unless a later line
   * declared it void (its service no longer knows it).
   */
  findDuplicate(fingerprint: string, withinMs: number): JournalEntry | undefined {
    const now = this.now();
    const voided = this.voided();
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const entry = this.entries[i];
      if (entry === undefined || entry.fingerprint !== fingerprint || !isTask(entry)) continue;
      if (isVoided(entry, voided)) continue;
      const age = now - entry.started_at;
      if (age >= 0 && age <= withinMs) return entry;
    }
    return undefined;
  }

  /** Intents whose outcome was never written (the answer was lost or is still awaited), oldest first. */
  pendingIntents(): JournalEntry[] {
    const settled = new Set<string>();
    for (const entry of this.entries) {
      if (entry.phase !== "intent" && entry.key !== undefined) settled.add(entry.key);
    }
    return this.entries.filter(
      (entry) => entry.phase === "intent" && entry.key !== undefined && !settled.has(entry.key),
    );
  }

  /** The newest unsettled intent with this fingerprint. */
  pendingIntent(fingerprint: string): JournalEntry | undefined {
    return this.pendingIntents()
      .filter((entry) => entry.fingerprint === fingerprint)
      .at(-1);
  }

  private voided(): Voided {
    const voided: Voided = { ids: new Set(), keys: new Set() };
    for (const entry of this.entries) {
      if (entry.phase !== "void") continue;
      if (entry.id !== undefined) voided.ids.add(entry.id);
      if (entry.key !== undefined) voided.keys.add(entry.key);
    }
    return voided;
  }

  /** Whether it holds anything: an empty journal's folder can go when its runtime closes. */
  get empty(): boolean {
    return this.entries.length === 0;
  }

  /** Started tasks, newest first. */
  recent(limit?: number): JournalEntry[] {
    const tasks = this.entries.filter(isTask);
    return tasks.slice(Math.max(0, tasks.length - (limit ?? tasks.length))).reverse();
  }

  /** Whether this very line (same phase, key and id) is already here: for copies from another replica. */
  knows(entry: JournalEntry): boolean {
    return this.entries.some(
      (known) =>
        known.phase === entry.phase &&
        known.key === entry.key &&
        known.id === entry.id &&
        known.fingerprint === entry.fingerprint,
    );
  }

  has(id: string): boolean {
    return this.entries.some((entry) => entry.id === id && isTask(entry));
  }

  /**
   * Picks up lines another server process appended since we last read (two clients may share the state
   * folder). Cheap when nothing changed: one stat.
   */
  async refresh(): Promise<void> {
    const path = this.path;
    if (path === undefined) return;
    const run = this.queue.then(async () => {
      const info = await stat(path).catch(() => undefined);
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
    if (this.path === undefined) return;
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
      const entry = parseJournalLine(line);
      if (entry) this.entries.push(entry);
    }
  }

  private async write(entry: JournalEntry): Promise<void> {
    if (this.path === undefined) {
      this.entries.push(entry);
      if (this.entries.length > this.maxEntries) this.entries = this.keepNewest(this.entries);
      return;
    }
    const line = `${this.needsNewline ? "\n" : ""}${JSON.stringify(entry)}\n`;
    await this.dropHandleIfReplaced();
    if (this.handle === undefined && this.dir !== undefined)
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
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
    if (!this.handle || this.path === undefined) return;
    const [held, current] = await Promise.all([this.handle.stat(), stat(this.path).catch(() => undefined)]);
    if (current !== undefined && held.ino === current.ino && held.dev === current.dev) return;
    await this.handle.close();
    this.handle = undefined;
  }

  /**
   * The newest half of the lines, plus every intent still waiting for its outcome and anything that voids a
   * kept task: dropping those would let a lost answer be paid for again.
   */
  private keepNewest(entries: JournalEntry[]): JournalEntry[] {
    const newest = new Set(entries.slice(-Math.floor(this.maxEntries / 2)));
    const pending = new Set(this.pendingIntents());
    return entries.filter((entry) => newest.has(entry) || pending.has(entry));
  }

  /** Rewrites the file with the newest half through a synced temporary file and an atomic rename. */
  private async compact(): Promise<void> {
    if (this.path === undefined || this.dir === undefined) return;
    const pending = new Set(this.pendingIntents());
    let kept = this.keepNewest(this.entries);
    let lines = kept.map((entry) => `${JSON.stringify(entry)}\n`);
    let size = lines.reduce((sum, line) => sum + Buffer.byteLength(line), 0);
    while (size > this.maxBytes / 2 && kept.length > 1) {
      // Oldest first, but an unsettled intent stays whatever its age.
      const index = kept.findIndex((entry) => !pending.has(entry));
      if (index < 0) break;
      size -= Buffer.byteLength(lines[index] ?? "");
      kept = kept.filter((_, i) => i !== index);
      lines = lines.filter((_, i) => i !== index);
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

/** A started task: a "started" line, or a line of an older version (which journaled only tasks). */
function isTask(entry: JournalEntry): boolean {
  return entry.phase === undefined || entry.phase === "started";
}

/** Ids and keys that a "void" line declared stale or not processed. */
interface Voided {
  ids: Set<string>;
  keys: Set<string>;
}

function isVoided(entry: JournalEntry, voided: Voided): boolean {
  return (
    (entry.id !== undefined && voided.ids.has(entry.id)) ||
    (entry.key !== undefined && voided.keys.has(entry.key))
  );
}

/** One journal line (or a mirrored copy of it), checked; undefined when it is not a valid entry. */
export function parseJournalLine(line: string): JournalEntry | undefined {
  if (line.trim() === "") return undefined;
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  const record = value as JsonObject;
  const { kind, id, fingerprint, started_at: startedAt, request, result, status, phase, key, scope } = record;
  if (kind !== "video" && kind !== "image") return undefined;
  if (phase !== undefined && phase !== "intent" && phase !== "started" && phase !== "void") return undefined;
  if (key !== undefined && typeof key !== "string") return undefined;
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
  if (phase !== undefined) entry.phase = phase;
  if (typeof key === "string") entry.key = key;
  if (isObject(result)) entry.result = result;
  if (typeof status === "string") entry.status = status;
  if (typeof scope === "string") entry.scope = scope;
  return entry;
}
