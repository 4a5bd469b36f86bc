/**
 * One runtime per service key over HTTP, so a caller never sees, reuses or is slowed by another key's tasks
 * or budget: made when a call first needs one, closed once idle. A key the service refused is remembered a
 * while, so a flood of made-up bearers costs one service request each at most and leaves nothing behind.
 */
import { UnauthorizedError } from "./api/errors.js";
import type { KeyState } from "./api/client.js";
import { digestOf } from "./auth/caller.js";

/** What the pool needs of a runtime (runtime.ts). */
export interface PooledRuntime {
  /** Whether calls or background task waits are running: a busy runtime is never closed as idle. */
  busy(): boolean;
  callsSettled(): Promise<void>;
  /** Not accepted yet: nothing worth keeping (the runtime goes with its last call); refused: remembered. */
  keyState(): KeyState;
  /** Every call still running answers at once with what it has, waited for at most `graceMs`. */
  close(graceMs?: number): Promise<void>;
}

export interface PoolOptions<R> {
  create(serviceKey: string): Promise<R>;
  /** A runtime with no call for this long is closed. Default 10 minutes. */
  idleMs?: number;
  /** Runtimes kept at most; past it, the longest idle one is closed first. Default 1000. */
  maxRuntimes?: number;
  /** How long a key the service refused is answered from memory. Default 60 s. */
  refusedMs?: number;
  now?: () => number;
}

interface Entry<R> {
  runtime: Promise<R>;
  made?: R;
  calls: number;
  lastUsed: number;
  rechecking?: boolean;
}

const MAX_REFUSED = 10_000;

export class RuntimePool<R extends PooledRuntime> {
  private readonly entries = new Map<string, Entry<R>>();
  /** Until when a refused key (by digest) is answered from memory. */
  private readonly refused = new Map<string, number>();
  private readonly idleMs: number;
  private readonly now: () => number;
  private readonly sweeper: ReturnType<typeof setInterval>;
  private closed = false;

  constructor(private readonly options: PoolOptions<R>) {
    this.idleMs = options.idleMs ?? 10 * 60 * 1000;
    this.now = options.now ?? Date.now;
    this.sweeper = setInterval(() => void this.sweep(), Math.min(60_000, this.idleMs));
    this.sweeper.unref();
  }

  /** The runtime of `serviceKey`, kept open until `release()` ends the call (then it may close once idle). */
  async acquire(serviceKey: string) {
    if (this.closed) throw new Error("the runtime pool is closed");
    const digest = digestOf(serviceKey);
    if ((this.refused.get(digest) ?? 0) > this.now()) {
      throw new UnauthorizedError("The service refused this API key (HTTP 401) a moment ago.");
    }
    let entry = this.entries.get(digest);
    if (entry === undefined) {
      // No await between the lookup and the insert, or two calls of a new key would each make a runtime.
      this.makeRoom();
      const fresh: Entry<R> = { runtime: this.options.create(serviceKey), calls: 0, lastUsed: this.now() };
      this.entries.set(digest, fresh);
      fresh.runtime.then(
        (runtime) => {
          fresh.made = runtime;
          // Its calls may all have ended while it was being made.
          this.dropIfWorthless(digest, fresh);
        },
        // A runtime that could not be made is not kept: the next call tries again.
        () => this.entries.get(digest) === fresh && this.entries.delete(digest),
      );
      entry = fresh;
    }
    const held = entry;
    held.calls += 1;
    held.lastUsed = this.now();
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

  get size(): number {
    return this.entries.size;
  }

  async close(graceMs?: number): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    const all = [...this.entries.values()];
    this.entries.clear();
    await Promise.allSettled(all.map(async (entry) => (await entry.runtime).close(graceMs)));
  }

  private dropIfWorthless(digest: string, entry: Entry<R>): void {
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
    if (state !== "refused") return;
    this.refused.delete(digest);
    this.refused.set(digest, this.now() + (this.options.refusedMs ?? 60_000));
    if (this.refused.size > MAX_REFUSED) this.refused.delete(this.refused.keys().next().value ?? "");
  }

  private idle(entry: Entry<R>): boolean {
    return entry.calls === 0 && !(entry.made?.busy() ?? false);
  }

  private async sweep(): Promise<void> {
    const now = this.now();
    for (const [digest, until] of this.refused) if (until <= now) this.refused.delete(digest);
    for (const [digest, entry] of [...this.entries]) {
      if (this.idle(entry) && now - entry.lastUsed >= this.idleMs) await this.closeEntry(digest, entry);
    }
  }

  /** Takes the longest idle runtimes out, so that one more fits; they close in the background. */
  private makeRoom(): void {
    const excess = this.entries.size + 1 - Math.max(1, this.options.maxRuntimes ?? 1000);
    if (excess <= 0) return;
    // With none idle, the pool grows past its size until calls end.
    const idle = [...this.entries]
      .filter(([, entry]) => this.idle(entry))
      .sort(([, a], [, b]) => a.lastUsed - b.lastUsed)
      .slice(0, excess);
    for (const [digest, entry] of idle) void this.closeEntry(digest, entry);
  }

  private async closeEntry(digest: string, entry: Entry<R>): Promise<void> {
    if (this.entries.get(digest) === entry) this.entries.delete(digest);
    await entry.runtime.then((runtime) => runtime.close()).catch(() => undefined);
  }
}
