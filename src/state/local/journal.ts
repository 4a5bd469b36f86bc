/**
 * The journal of paid starts (`tasks.json`), so a task survives a timeout, a restart or a `kill -9`: each
 * start's intent (with its Idempotency-Key) is written before the POST leaves, its outcome after (the task,
 * or "void"). An intent without an outcome is a lost answer, settled (generations/settlement.ts) before an
 * identical request may pay again. Bounded: past its limits it keeps the newest half and every open intent.
 */
import { parseJournalEntry, readList, type JournalEntry, type TaskLogger } from "../records.js";
import { JsonFile } from "./store.js";

interface JournalOptions {
  now?: () => number;
  /** Entries (default 1000) and bytes (1 MiB) kept before the oldest half goes. */
  maxEntries?: number;
  maxBytes?: number;
  logger?: TaskLogger;
}

export const JOURNAL_FILE = "tasks.json";

export class Journal {
  private readonly file: JsonFile<JournalEntry[]>;
  private readonly now: () => number;
  private readonly maxEntries: number;
  private readonly maxBytes: number;

  private constructor(dir: string | undefined, options: JournalOptions) {
    this.file = new JsonFile(dir, JOURNAL_FILE, {
      label: "The journal of paid starts",
      parse: readList(parseJournalEntry),
      logger: options.logger,
    });
    this.now = options.now ?? Date.now;
    this.maxEntries = Math.max(2, options.maxEntries ?? 1000);
    this.maxBytes = Math.max(1024, options.maxBytes ?? 1024 * 1024);
  }

  /** Loads what an earlier run wrote (nothing is made before a first append); `dir` undefined: in memory. */
  static async open(dir: string | undefined, options: JournalOptions = {}): Promise<Journal> {
    const journal = new Journal(dir, options);
    await journal.file.load();
    return journal;
  }

  get path(): string | undefined {
    return this.file.path;
  }

  private get entries(): JournalEntry[] {
    return this.file.value;
  }

  /** Resolves once the entry is synced to disk, beside what other processes wrote; StateFileError if not. */
  async append(entry: JournalEntry): Promise<void> {
    await this.file.update((entries) => ({ next: this.bounded([...entries, entry]), result: undefined }));
  }

  /** Picks up what another process of the folder wrote since (cheap when nothing changed: one stat). */
  async refresh(): Promise<void> {
    await this.file.load();
  }

  async close(): Promise<void> {
    await this.file.settled();
  }

  /** The newest task started with this fingerprint within `withinMs` of now, unless a later line voids it. */
  findDuplicate(fingerprint: string, withinMs: number): JournalEntry | undefined {
    const voids = this.entries.filter((entry) => entry.phase === "void");
    const voided = (entry: JournalEntry) =>
      voids.some(
        (line) =>
          (entry.id !== undefined && line.id === entry.id) ||
          (entry.key !== undefined && line.key === entry.key),
      );
    return this.entries.findLast((entry) => {
      const age = this.now() - entry.started_at;
      return (
        entry.fingerprint === fingerprint && isTask(entry) && age >= 0 && age <= withinMs && !voided(entry)
      );
    });
  }

  /** Intents whose outcome was never written (lost or still awaited), oldest first. */
  pendingIntents(): JournalEntry[] {
    return openIntents(this.entries);
  }

  get empty(): boolean {
    return this.entries.length === 0;
  }

  /** Started tasks, newest first. */
  recent(limit?: number): JournalEntry[] {
    const tasks = this.entries.filter(isTask);
    return tasks.slice(Math.max(0, tasks.length - (limit ?? tasks.length))).reverse();
  }

  /** Whether this very entry (phase, key, id, fingerprint) is here: for copies from another replica. */
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

  /** The oldest go first, down to half a bound; an open intent stays (else a lost start is paid again). */
  private bounded(entries: JournalEntry[]): JournalEntry[] {
    const sizes = entries.map((entry) => Buffer.byteLength(JSON.stringify(entry)) + 1);
    let size = sizes.reduce((sum, bytes) => sum + bytes, 2);
    if (entries.length <= this.maxEntries && size <= this.maxBytes) return entries;
    const open = new Set(openIntents(entries));
    const newest = entries.length - Math.floor(this.maxEntries / 2);
    const keep = entries.map((entry, index) => open.has(entry) || index >= newest);
    size = sizes.reduce((sum, bytes, index) => (keep[index] ? sum + bytes : sum), 2);
    for (let index = 0; index < entries.length - 1 && size > this.maxBytes / 2; index++) {
      if (!keep[index] || open.has(entries[index]!)) continue;
      keep[index] = false;
      size -= sizes[index]!;
    }
    return entries.filter((_, index) => keep[index]);
  }
}

function openIntents(entries: JournalEntry[]): JournalEntry[] {
  const settled = new Set(entries.filter((entry) => entry.phase !== "intent").map((entry) => entry.key));
  return entries.filter(
    (entry) => entry.phase === "intent" && entry.key !== undefined && !settled.has(entry.key),
  );
}

/** A started task: a "started" entry, or one of an older version (which journaled only tasks). */
function isTask(entry: JournalEntry): boolean {
  return entry.phase === undefined || entry.phase === "started";
}
