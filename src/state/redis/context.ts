/**
 * What the Redis parts of one service key share (index.ts makes it): the connections, the rules for
 * failures, the seal of its values, and the rebuild log of what this replica wrote.
 */
import type { EventEmitter } from "node:events";
import type { Redis } from "ioredis";
import type { Sealer } from "./seal.js";

/** The Lua scripts (scripts.ts), as index.ts defines them on the command connection. */
export type ScriptedRedis = Redis & {
  budgetTake(...args: Array<string | number>): Promise<number>;
  budgetObserve(...args: Array<string | number>): Promise<number>;
  takeLease(...args: Array<string | number>): Promise<number>;
  releaseIfOwner(...args: Array<string | number>): Promise<number>;
  taskFinalize(...args: Array<string | number>): Promise<string | null>;
  spendReserve(...args: Array<string | number>): Promise<[number, number]>;
  spendRelease(...args: Array<string | number>): Promise<number>;
};

export interface KeyContext {
  commands: ScriptedRedis;
  /** Runs a Redis operation; when Redis fails, reports it and answers `fallback` (fail soft). */
  soft<T>(fallback: T, run: () => Promise<T>): Promise<T>;
  /**
   * Runs an operation the replicas must agree on: when Redis fails it throws SharedStateUnavailableError, or,
   * with GENERATION_REDIS_WHEN_DOWN=alone, answers `alone`.
   */
  agreed<T>(alone: T, run: () => Promise<T>): Promise<T>;
  /** This replica, in leases and claims. */
  owner: string;
  /** Takes a lease or claim for `holder` (take_lease: renewed when already theirs); true when held. */
  lease(name: string, holder: string, ttlMs: number): Promise<boolean>;
  /** The status channel, and its messages (`<digest>:<video id>`) as events. */
  channel: string;
  wakes: EventEmitter;
  onError: (error: unknown) => void;
  /** A key of this service key: `<prefix><digest>:<parts joined by ":">`. */
  key: (...parts: string[]) => string;
  digest: string;
  sealer: Sealer;
  /**
   * A stored value, unsealed and read as a record; one that is there but does not carry this key's seal or
   * read (planted, torn) is reported (once per kind per minute) and skipped.
   */
  open<T>(
    text: string | null | undefined,
    read: (value: unknown) => T | undefined,
    kind: string,
  ): T | undefined;
  /**
   * Records what this replica wrote under `key`, to write again (`write`, given the time left) should Redis
   * lose its data before `ttlMs` has passed; a later entry for the key replaces it.
   */
  keep(key: string, ttlMs: number, write: (ttlMs: number) => Promise<unknown>): void;
  forget(key: string): void;
}

export const px = (ms: number) => Math.max(1, Math.round(ms));
