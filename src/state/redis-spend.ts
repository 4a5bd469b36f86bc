/**
 * Each caller's spend of the day, shared by every replica: one counter per caller and UTC day, reserved and
 * released by two Lua scripts (redis-scripts.ts), so racing replicas never pass the daily limit together.
 * Key names hold the service key's digest, the caller's spend digest and the day, never a credential; every
 * counter expires a little over a day after its last write. A reservation that cannot be agreed is refused
 * (SharedStateUnavailableError), unless the operator chose to run alone: this replica then counts in memory.
 */
import { LocalSpendStore } from "../spend/local-store.js";
import type { KeyContext } from "./redis.js";
import type { SpendStore } from "./shared-state.js";

/** A day's counter outlives its day by an hour: a replica's clock a little behind still finds it. */
export const SPEND_TTL_MS = 25 * 60 * 60 * 1000;

export function spendStore(context: KeyContext): SpendStore {
  const { commands, base } = context;
  const key = (caller: string, day: string) => `${base}spend:${caller}:${day}`;
  // Used only with GENERATION_REDIS_WHEN_DOWN=alone while Redis is away: what this replica alone started.
  const alone = new LocalSpendStore(undefined);
  return {
    async reserve(caller, day, amount, limit) {
      const answer = await context.agreed(undefined, async () =>
        commands.spendReserve(key(caller, day), amount, limit, SPEND_TTL_MS),
      );
      if (answer === undefined) return alone.reserve(caller, day, amount, limit);
      const [reserved, used] = answer;
      return { reserved: Number(reserved) === 1, used: Number(used) };
    },
    async release(caller, day, amount) {
      await context.soft(undefined, async () => {
        await commands.spendRelease(key(caller, day), amount);
      });
    },
    async used(caller, day) {
      return context.soft(0, async () => Number((await commands.get(key(caller, day))) ?? 0) || 0);
    },
  };
}
