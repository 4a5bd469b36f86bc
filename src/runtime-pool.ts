/**
 * One runtime per service key, for a server that serves many callers (Streamable HTTP): each key gets its own
 * rate budget, poll engine, journal and duplicate guard, so a caller never sees, reuses or is slowed by
 * another key's tasks or budget. Runtimes are made on first use, counted while calls run, and closed after
 * they have been idle for a while. The pool is keyed by a hash of the key; the key itself is held only in
 * the runtime's memory, and registered with the redaction point while its runtime lives.
 */
import { createHash } from "node:crypto";
import { registerSecret } from "./redact.js";
import type { Runtime } from "./runtime.js";

export interface PoolOptions {
  /** Makes the runtime of one service key. */
  create(apiKey: string): Promise<Runtime>;
  /** A runtime with no call for this long is closed. Default 10 minutes. */
  idleMs?: number;
  /** Calls one key may have running at once. */
  maxConcurrentPerKey: number;
  /** Runtimes kept at most; past it, the longest idle one is closed first. Default 1000. */
  maxRuntimes?: number;
  now?: () => number;
}

interface Entry {
  runtime: Promise<Runtime>;
  calls: number;
  lastUsed: number;
  forget: () => void;
}

export interface Lease {
  runtime: Runtime;
  /** Ends the call: the runtime may be closed once it has been idle long enough. */
  release(): void;
}

/** The key has as many calls running as it may. */
export class TooManyCallsError extends Error {
  override name = "TooManyCallsError";
}

const DEFAULT_IDLE_MS = 10 * 60 * 1000;
const DEFAULT_MAX_RUNTIMES = 1000;

/** Hex SHA-256 of a key: how the pool (and logs, if ever) refer to it. */
export function keyDigest(apiKey: string): string {
  return createHash("sha256").update(apiKey).digest("hex");
}

export class RuntimePool {
  private readonly entries = new Map<string, Entry>();
  private readonly idleMs: number;
  private readonly maxRuntimes: number;
  private readonly now: () => number;
  private readonly sweeper: ReturnType<typeof setInterval>;
  private closed = false;

  constructor(private readonly options: PoolOptions) {
    this.idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
    this.maxRuntimes = Math.max(1, options.maxRuntimes ?? DEFAULT_MAX_RUNTIMES);
    this.now = options.now ?? Date.now;
    this.sweeper = setInterval(() => void this.sweep(), Math.min(60_000, this.idleMs));
    this.sweeper.unref();
  }

  /** The runtime of `apiKey`, counted as in use until `release()`. */
  async acquire(apiKey: string): Promise<Lease> {
    if (this.closed) throw new Error("the runtime pool is closed");
    const digest = keyDigest(apiKey);
    let entry = this.entries.get(digest);
    if (entry === undefined) {
      // Nothing may await between the lookup and the insert, or two calls of a new key would each make a
      // runtime (and split its rate budget).
      this.makeRoom();
      const created = this.options.create(apiKey);
      const made: Entry = {
        runtime: created,
        calls: 0,
        lastUsed: this.now(),
        forget: registerSecret(apiKey),
      };
      this.entries.set(digest, made);
      // A runtime that could not be made is not kept: the next call tries again.
      created.catch(() => {
        if (this.entries.get(digest) === made) this.drop(digest, made);
      });
      entry = made;
    }
    if (entry.calls >= this.options.maxConcurrentPerKey) throw new TooManyCallsError();
    entry.calls += 1;
    entry.lastUsed = this.now();
    const held = entry;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      held.calls -= 1;
      held.lastUsed = this.now();
    };
    try {
      return { runtime: await held.runtime, release };
    } catch (error) {
      release();
      throw error;
    }
  }

  /** Runtimes alive now; for tests and health answers. */
  get size(): number {
    return this.entries.size;
  }

  /**
   * Closes every runtime: running calls answer at once with what they have (see Runtime.close), waited for
   * at most `graceMs`.
   */
  async close(graceMs?: number): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    const all = [...this.entries.entries()];
    this.entries.clear();
    await Promise.allSettled(
      all.map(async ([, entry]) => {
        entry.forget();
        await (await entry.runtime).close(graceMs);
      }),
    );
  }

  private async sweep(): Promise<void> {
    const now = this.now();
    for (const [digest, entry] of [...this.entries]) {
      if (entry.calls === 0 && now - entry.lastUsed >= this.idleMs) await this.closeEntry(digest, entry);
    }
  }

  /** Takes the longest idle runtimes out, so that one more fits; they close in the background. */
  private makeRoom(): void {
    const excess = this.entries.size + 1 - this.maxRuntimes;
    if (excess <= 0) return;
    // Only idle runtimes go; with none idle, the pool grows past its size until calls end.
    const idle = [...this.entries]
      .filter(([, entry]) => entry.calls === 0)
      .sort(([, a], [, b]) => a.lastUsed - b.lastUsed)
      .slice(0, excess);
    for (const [digest, entry] of idle) void this.closeEntry(digest, entry);
  }

  private async closeEntry(digest: string, entry: Entry): Promise<void> {
    this.drop(digest, entry);
    try {
      await (await entry.runtime).close();
    } catch {
      // It was never made, or closing failed: either way it is out of the pool.
    }
  }

  private drop(digest: string, entry: Entry): void {
    this.entries.delete(digest);
    entry.forget();
  }
}
