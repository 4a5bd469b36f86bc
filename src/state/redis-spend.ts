/**
 * Each caller's spend of the day, shared by every replica: one hash per caller and UTC day with each replica's
 * share, reserved and released by two Lua scripts (redis-scripts.ts), so racing replicas never pass the daily
 * limit together, and a replica can write its own share again after Redis lost its data (redis.ts). Key names
 * hold the service key's digest, the caller's spend digest and the day, never a credential; every counter
 * expires a little over a day after its last write. A reservation that cannot be agreed is refused
 * (SharedStateUnavailableError), unless the operator chose to run alone: this replica then counts in memory.
 */
import { LocalSpendStore } from "../spend/local-store.js";
import type { KeyContext } from "./redis.js";
import type { SpendStore } from "./shared-state.js";

/** A day's counter outlives its day by an hour: a replica's clock a little behind still finds it. */
export const SPEND_TTL_MS = 25 * 60 * 60 * 1000;

export function spendStore(context: KeyContext): SpendStore {
  const { commands, base, owner } = context;
  const key = (caller: string, day: string) => `${base}spend:${caller}:${day}`;
  // Used only with GENERATION_REDIS_WHEN_DOWN=alone while Redis is away: what this replica alone started.
  const alone = new LocalSpendStore(undefined);
  /** This replica's share of each caller's day, as Redis holds it: what it writes again after a loss. */
  const mine = new Map<string, number>();
  const share = (name: string, change: number) => {
    const total = Math.max(0, (mine.get(name) ?? 0) + change);
    mine.set(name, total);
    context.keep(name, SPEND_TTL_MS, (ttl) =>
      commands.multi().hset(name, owner, total).pexpire(name, Math.round(ttl)).exec(),
    );
  };
  return {
    async reserve(caller, day, amount, limit) {
      const name = key(caller, day);
      const answer = await context.agreed(undefined, async () =>
        commands.spendReserve(name, amount, limit, SPEND_TTL_MS, owner),
      );
      if (answer === undefined) return alone.reserve(caller, day, amount, limit);
      const [reserved, used] = answer;
      if (Number(reserved) === 1) share(name, amount);
      return { reserved: Number(reserved) === 1, used: Number(used) };
    },
    async release(caller, day, amount) {
      const name = key(caller, day);
      share(name, -amount);
      await context.soft(undefined, async () => {
        await commands.spendRelease(name, amount, owner);
      });
    },
    async used(caller, day) {
      return context.soft(0, async () =>
        (await commands.hvals(key(caller, day))).reduce((sum, value) => sum + (Number(value) || 0), 0),
      );
    },
  };
}
