/** What the Redis parts of one service key share (index.ts makes it). */
import type { EventEmitter } from "node:events";
import type { Redis } from "ioredis";
import type { Sealer } from "./seal.js";

/** The command connection with the Lua scripts of scripts.ts. */
export type ScriptedRedis = Redis & {
  budgetTake(...args: Array<string | number>): Promise<number>;
  budgetObserve(...args: Array<string | number>): Promise<number>;
  takeLease(...args: Array<string | number>): Promise<number>;
  takeLeaseInEpoch(...args: Array<string | number>): Promise<number>;
  setOnceInEpoch(...args: Array<string | number>): Promise<number>;
  releaseIfOwner(...args: Array<string | number>): Promise<number>;
  taskFinalize(...args: Array<string | number>): Promise<string | null>;
  spendReserve(...args: Array<string | number>): Promise<[number, number]>;
  spendRelease(...args: Array<string | number>): Promise<number>;
};

export interface KeyContext {
  commands: ScriptedRedis;
  /** Runs a Redis operation; when Redis fails, reports it and answers `fallback`. */
  soft<T>(fallback: T, run: () => Promise<T>): Promise<T>;
  /**
   * Runs what the replicas must agree on, once every replica's rebuild is known, as a script checked in that
   * epoch (scripts.ts inEpoch): `run` answers STALE when the store was emptied since, and runs again after
   * this replica's rebuild. When Redis fails, throws (or, running alone, answers `alone`).
   */
  agreed<T>(alone: T, run: (epoch: string) => Promise<T | typeof STALE>): Promise<T>;
  /** The epoch hash the scripts of `agreed` check. */
  epochKey: string;
  /** This replica, in leases and claims. */
  owner: string;
  /** Takes (or renews) a lease or claim for `holder`; true when held. */
  lease(name: string, holder: string, ttlMs: number): Promise<boolean>;
  /** The status channel, and its messages (`<digest>:<video id>`) as events. */
  channel: string;
  wakes: EventEmitter;
  onError: (error: unknown) => void;
  /** `<prefix><digest>:<parts joined by ":">`. */
  key: (...parts: string[]) => string;
  digest: string;
  sealer: Sealer;
  /** A stored value, unsealed and read; one without this key's seal, or that does not read, is skipped. */
  open<T>(
    text: string | null | undefined,
    read: (value: unknown) => T | undefined,
    kind: string,
  ): T | undefined;
  /** Logs what this replica wrote under `key`, to `write` again (given the time left) if Redis loses it. */
  keep(key: string, ttlMs: number, write: (ttlMs: number) => Promise<unknown>): void;
  forget(key: string): void;
}

export const px = (ms: number) => Math.max(1, Math.round(ms));

/** What a script of `agreed` answers when the store is not the epoch it was sent for. */
export const STALE = Symbol("stale");
