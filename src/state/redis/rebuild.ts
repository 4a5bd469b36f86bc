/**
 * What a replica does about a Redis that lost its data (restarted empty): it keeps what it wrote there (its
 * rebuild log) and writes it again once it finds the store's epoch gone or changed; and no replica starts
 * anything until every replica that was live when the store was lost has done the same.
 *
 * The epoch is one hash, `<prefix>epoch`: its `id`, written by the first replica to find none; `replica:<r>`,
 * each replica's registration (the epoch it rebuilt for, and when it last wrote, at every heartbeat); and
 * `pending:<r>`, the replicas whose rebuild is awaited, with a deadline. After a loss Redis knows nothing, so
 * each replica remembers which peers were live from the registrations it read before; the first to notice
 * the loss names them (and itself) pending, and each one clears its name by registering under the new epoch
 * once its entries are written again (at once when it holds none: whether a peer held any a moment before the
 * loss cannot be known from here). A replica that stalled through the loss (a long GC pause, a frozen VM) is
 * waited for: it notices the new epoch before it starts anything, rebuilds, registers. One still silent at
 * the deadline (STALL_BOUND_MS) counts as dead, and what it held is gone with it.
 */
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { ChainableCommander } from "ioredis";
import { SharedStateRebuildingError } from "../records.js";
import type { ScriptedRedis } from "./context.js";

/**
 * A peer registered this recently (at our last look) counts as live at the loss, and a live peer is waited
 * for this long after the loss was noticed: the stall a replica may go through and still write back what it
 * holds before anyone starts anything.
 */
export const STALL_BOUND_MS = 15_000;
/** How long a start waits in its call for the others' rebuild before it is refused (with when to retry). */
const REBUILD_WAIT_MS = 3000;
const RECHECK_MS = 100;
/** The epoch outlives any pause of the whole deployment by far; every heartbeat renews it. */
const EPOCH_TTL_MS = 7 * 24 * 60 * 60 * 1000;
/** A replica not registered for this long is dropped from the epoch. */
const REGISTRATION_TTL_MS = 60_000;
/** Entries of the rebuild log kept at most; past it the oldest go (the newest matter most). */
const REBUILD_MAX = 50_000;

/**
 * The replies of a pipeline (not a transaction: under `maxmemory` a transaction fails as EXECABORT, which
 * hides the OOM an operator needs to read); throws the first command's error.
 */
async function replies(pipeline: ChainableCommander): Promise<unknown[]> {
  const answers = (await pipeline.exec()) ?? [];
  return answers.map(([error, value]) => {
    if (error) throw error;
    return value;
  });
}

export class Rebuild {
  private readonly log = new Map<string, { until: number; write: (ttlMs: number) => Promise<unknown> }>();
  /** The epoch hash. */
  readonly key: string;
  private epoch: string | undefined;
  private checking: Promise<string> | undefined;
  /** Each peer's last registration (epoch ms, by its clock) at our last look, and when that was. */
  private peers = new Map<string, number>();
  private lookedAt = 0;

  constructor(
    private readonly commands: ScriptedRedis,
    prefix: string,
    private readonly owner: string,
    /** Told how many entries were written again after a loss. */
    private readonly onLoss: (written: number) => void,
  ) {
    this.key = `${prefix}epoch`;
  }

  /** Records what this replica wrote under `key`, to write again should Redis lose it before `ttlMs`. */
  keep(key: string, ttlMs: number, write: (ttlMs: number) => Promise<unknown>): void {
    this.log.delete(key);
    this.log.set(key, { until: Date.now() + ttlMs, write });
    if (this.log.size > REBUILD_MAX) this.log.delete(this.log.keys().next().value ?? "");
  }

  forget(key: string): void {
    this.log.delete(key);
  }

  /** At every heartbeat: the epoch looked at (the store rebuilt if it was lost), this replica registered. */
  async beat(): Promise<void> {
    const epoch = await this.check();
    const [, , fields] = await replies(this.register(epoch).hgetall(this.key));
    const now = Date.now();
    const seen = this.peers;
    this.peers = new Map();
    const entries = Object.entries(fields as Record<string, string>);
    for (const [field, value] of entries) {
      // `replica:<r>` holds `<epoch>:<epoch ms>`
      if (field.startsWith("replica:")) this.peers.set(field.slice(8), Number(value.split(":")[1]) || 0);
    }
    this.lookedAt = now;
    const gone = [...this.peers].filter(([, at]) => now - at > REGISTRATION_TTL_MS);
    // A peer live at the last loss that has not written back yet is live still: lost again meanwhile, the
    // store must wait for it again (it was last seen when we saw it, or when the loss was noticed).
    for (const [field, deadline] of entries) {
      const peer = field.slice(8);
      if (field.startsWith("pending:") && Number(deadline) > now && !this.peers.has(peer))
        this.peers.set(peer, seen.get(peer) ?? Number(deadline) - STALL_BOUND_MS);
    }
    if (gone.length > 0) await this.commands.hdel(this.key, ...gone.map(([peer]) => `replica:${peer}`));
  }

  /** A replica that stops says so: nobody waits for it should the store be lost right after. */
  async leave(): Promise<void> {
    await this.commands.hdel(this.key, `replica:${this.owner}`, `pending:${this.owner}`);
  }

  /** The store's epoch, after this replica wrote its entries again if the store lost them. */
  check(): Promise<string> {
    return (this.checking ??= this.readEpoch().finally(() => (this.checking = undefined)));
  }

  /**
   * The epoch, once no replica that was live when the store was lost is still to write its entries again;
   * SharedStateRebuildingError (with when to retry) when some still are after REBUILD_WAIT_MS.
   */
  async rebuilt(): Promise<string> {
    const giveUpAt = Date.now() + REBUILD_WAIT_MS;
    for (;;) {
      const epoch = await this.check();
      const fields = await this.commands.hgetall(this.key);
      const now = Date.now();
      const waiting = Object.entries(fields)
        .filter(([field, deadline]) => field.startsWith("pending:") && Number(deadline) > now)
        .filter(([field]) => !fields[`replica:${field.slice(8)}`]?.startsWith(`${epoch}:`))
        .map(([, deadline]) => Number(deadline));
      if (waiting.length === 0) return epoch;
      if (now + RECHECK_MS > giveUpAt) throw new SharedStateRebuildingError(Math.max(...waiting) - now);
      await sleep(RECHECK_MS);
    }
  }

  private async readEpoch(): Promise<string> {
    const [, , id] = await replies(
      this.commands
        .pipeline()
        .hsetnx(this.key, "id", randomBytes(8).toString("hex"))
        .pexpire(this.key, EPOCH_TTL_MS)
        .hget(this.key, "id"),
    );
    const current = String(id ?? "");
    if (current === this.epoch) return current;
    const lost = this.epoch !== undefined;
    if (lost) await this.namePending();
    let written = 0;
    for (const [key, entry] of [...this.log]) {
      const left = entry.until - Date.now();
      if (left <= 0) this.log.delete(key);
      else await entry.write(left).then(() => (written += 1));
    }
    if (lost) this.onLoss(written);
    this.epoch = current;
    // Registered under the new epoch: this replica's rebuild is known to all.
    await replies(this.register(current));
    return current;
  }

  /** The store was lost: the replicas live then (this one too) must rebuild before anyone starts anything. */
  private async namePending(): Promise<void> {
    const live = [...this.peers]
      .filter(([, at]) => this.lookedAt - at < STALL_BOUND_MS)
      .map(([peer]) => peer);
    const deadline = String(Date.now() + STALL_BOUND_MS);
    const names = this.commands.pipeline();
    for (const peer of new Set([...live, this.owner])) names.hsetnx(this.key, `pending:${peer}`, deadline);
    await replies(names);
  }

  private register(epoch: string) {
    return this.commands
      .pipeline()
      .hset(this.key, `replica:${this.owner}`, `${epoch}:${Date.now()}`)
      .pexpire(this.key, EPOCH_TTL_MS);
  }
}
