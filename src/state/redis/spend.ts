/** Each caller's day of spend: a field per replica, so each can write its share again after a loss. */
import { LocalSpendStore } from "../local/spend.js";
import type { SpendStore } from "../records.js";
import { STALE, px, type KeyContext } from "./context.js";

/** A day's counter outlives its day by an hour: a replica's clock a little behind still finds it. */
const SPEND_TTL_MS = 25 * 60 * 60 * 1000;

export function spendStore(context: KeyContext): SpendStore {
  const { commands, key, owner } = context;
  // Running alone while Redis is away: what this replica alone started.
  const alone = new LocalSpendStore(undefined);
  /** This replica's share of each caller's day: what it writes again after a loss. */
  const mine = new Map<string, number>();
  const share = (name: string, change: number) => {
    const total = Math.max(0, (mine.get(name) ?? 0) + change);
    mine.set(name, total);
    context.keep(name, SPEND_TTL_MS, (ms) =>
      commands.multi().hset(name, owner, total).pexpire(name, px(ms)).exec(),
    );
  };
  return {
    async reserve(caller, day, amount, limit) {
      const name = key("spend", caller, day);
      const answer = await context.agreed(undefined, async (epoch) => {
        const args = [amount, limit, SPEND_TTL_MS, owner, epoch];
        const [reserved, used] = await commands.spendReserve(name, context.epochKey, ...args);
        return Number(reserved) === -1 ? STALE : [reserved, used];
      });
      if (answer === undefined) return alone.reserve(caller, day, amount, limit);
      const reserved = Number(answer[0]) === 1;
      if (reserved) share(name, amount);
      return { reserved, used: Number(answer[1]) };
    },
    async release(caller, day, amount) {
      const name = key("spend", caller, day);
      share(name, -amount);
      await context.soft(undefined, () => commands.spendRelease(name, amount, owner));
    },
    async used(caller, day) {
      return context.soft(0, async () =>
        (await commands.hvals(key("spend", caller, day))).reduce(
          (sum, value) => sum + (Number(value) || 0),
          0,
        ),
      );
    },
  };
}
