/**
 * One runtime per service key, for a server that serves many callers (Streamable HTTP): each key gets its own
 * rate budget, poll engine, journal and duplicate guard, so a caller never sees, reuses or is slowed by
 * another key's tasks or budget. A runtime is made when a call first needs one (making it may ask the
 * service whether it accepts the key: see `create`), kept while calls use it, and closed once idle. A key
 * the service refused is remembered as refused for a while, so a flood of made-up bearers costs one service
 * request each at most and leaves nothing behind. The pool is keyed by a hash of the key.
 */
import { digestOf } from "./auth/caller.js";
import { UnauthorizedError, type GenerationError } from "./api/errors.js";
import type { Runtime } from "./runtime.js";

export interface PoolOptions {
  /** Makes the runtime of one service key (nothing is written for a caller's key until the service accepts it). */
  create(serviceKey: string): Promise<Runtime>;
  /** A runtime with no call for this long is closed. Default 10 minutes. */
  idleMs?: number;
  /** Runtimes kept at most; past it, the longest idle one is closed first. Default 1000. */
  maxRuntimes?: number;
  /** How long a key the service refused is answered from memory. Default 60 s. */
  refusedMs?: number;
  now?: () => number;
}

interface Entry {
  runtime: Promise<Runtime>;
  /** Set once made: whether its background work keeps it busy. */
  made?: Runtime;
  calls: number;
  lastUsed: number;
  /** Waiting for its calls to settle, to see whether it is worth keeping then. */
  rechecking?: boolean;
}

export interface Lease {
  runtime: Runtime;
  /** Ends the call: the runtime may be closed once it has been idle long enough. */
  release(): void;
}

/** What a call of a key the service refused meets, without asking the service again. */
function refusedKey(): GenerationError {
  return new UnauthorizedError("The service refused this API key (HTTP 401) a moment ago.");
}

const DEFAULT_IDLE_MS = 10 * 60 * 1000;
const DEFAULT_MAX_RUNTIMES = 1000;
const DEFAULT_REFUSED_MS = 60_000;
/** Refused keys remembered at most; the oldest is forgotten first. */
const MAX_REFUSED = 10_000;

export class RuntimePool {
  private readonly entries = new Map<string, Entry>();
  /** Keys the service refused, by digest: until when they are answered from memory (a number each, so a
   * flood of made-up keys holds little: the refusal itself is made when it is answered). */
  private readonly refused = new Map<string, number>();
  private readonly idleMs: number;
  private readonly maxRuntimes: number;
  private readonly refusedMs: number;
  private readonly now: () => number;
  private readonly sweeper: ReturnType<typeof setInterval>;
  private closed = false;

  constructor(private readonly options: PoolOptions) {
    this.idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
    this.maxRuntimes = Math.max(1, options.maxRuntimes ?? DEFAULT_MAX_RUNTIMES);
    this.refusedMs = options.refusedMs ?? DEFAULT_REFUSED_MS;
    this.now = options.now ?? Date.now;
    this.sweeper = setInterval(() => void this.sweep(), Math.min(60_000, this.idleMs));
    this.sweeper.unref();
  }

  /** The runtime of `serviceKey`, kept open until `release()`. */
  async acquire(serviceKey: string): Promise<Lease> {
    if (this.closed) throw new Error("the runtime pool is closed");
    const digest = digestOf(serviceKey);
    const refusedUntil = this.refused.get(digest);
    if (refusedUntil !== undefined && refusedUntil > this.now()) throw refusedKey();
    let entry = this.entries.get(digest);
    if (entry === undefined) {
      // Nothing may await between the lookup and the insert, or two calls of a new key would each make a
      // runtime (and split its rate budget).
      this.makeRoom();
      const created = this.options.create(serviceKey);
      const fresh: Entry = { runtime: created, calls: 0, lastUsed: this.now() };
      this.entries.set(digest, fresh);
      created.then(
        (runtime) => {
          fresh.made = runtime;
          // Its calls may all have ended while it was being made.
          this.dropIfWorthless(digest, fresh);
        },
        () => undefined,
      );
      // A runtime that could not be made is not kept: the next call tries again.
      created.catch(() => {
        if (this.entries.get(digest) === fresh) this.entries.delete(digest);
      });
      entry = fresh;
    }
    entry.calls += 1;
    entry.lastUsed = this.now();
    const held = entry;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      held.calls -= 1;
      held.lastUsed = this.now();
      this.dropIfWorthless(digest, held);
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
    const all = [...this.entries.values()];
    this.entries.clear();
    await Promise.allSettled(all.map(async (entry) => (await entry.runtime).close(graceMs)));
  }

  /**
   * A key the service has not accepted holds nothing worth keeping: its runtime goes with its last call
   * (cheap to make again), and a refusal is remembered.
   */
  private dropIfWorthless(digest: string, entry: Entry): void {
    const runtime = entry.made;
    if (runtime === undefined || entry.calls > 0 || this.entries.get(digest) !== entry) return;
    const state = runtime.keyState();
    if (state === "accepted") return;
    if (runtime.busy()) {
      // Released while its call still settles (its client went away): looked at again once it has.
      if (!entry.rechecking) {
        entry.rechecking = true;
        void runtime.callsSettled().then(() => {
          entry.rechecking = false;
          if (!runtime.busy()) this.dropIfWorthless(digest, entry);
        });
      }
      return;
    }
    void this.closeEntry(digest, entry);
    if (state === "refused") this.remember(digest);
  }

  private remember(digest: string): void {
    this.refused.delete(digest);
    this.refused.set(digest, this.now() + this.refusedMs);
    if (this.refused.size > MAX_REFUSED) this.refused.delete(this.refused.keys().next().value ?? "");
  }

  private async sweep(): Promise<void> {
    const now = this.now();
    for (const [digest, until] of this.refused) if (until <= now) this.refused.delete(digest);
    for (const [digest, entry] of [...this.entries]) {
      const idle = entry.calls === 0 && !(entry.made?.busy() ?? false);
      if (idle && now - entry.lastUsed >= this.idleMs) await this.closeEntry(digest, entry);
    }
  }

  /** Takes the longest idle runtimes out, so that one more fits; they close in the background. */
  private makeRoom(): void {
    const excess = this.entries.size + 1 - this.maxRuntimes;
    if (excess <= 0) return;
    // Only idle runtimes go; with none idle, the pool grows past its size until calls end.
    const idle = [...this.entries]
      .filter(([, entry]) => entry.calls === 0 && !(entry.made?.busy() ?? false))
      .sort(([, a], [, b]) => a.lastUsed - b.lastUsed)
      .slice(0, excess);
    for (const [digest, entry] of idle) void this.closeEntry(digest, entry);
  }

  private async closeEntry(digest: string, entry: Entry): Promise<void> {
    if (this.entries.get(digest) === entry) this.entries.delete(digest);
    try {
      await (await entry.runtime).close();
    } catch {
      // It was never made, or closing failed: either way it is out of the pool.
    }
  }
}
