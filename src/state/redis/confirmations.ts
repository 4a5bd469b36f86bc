/** The cost confirmations answered, on Redis: `SET NX` of a state's digest, so one replica takes it. */
import type { UsedConfirmations } from "../records.js";
import { STALE, px, type KeyContext } from "./context.js";

/** `local` serves only when running alone while Redis is away. */
export function usedConfirmations(context: KeyContext, local: UsedConfirmations): UsedConfirmations {
  const { commands, key } = context;
  return {
    async use(digest, ttlMs) {
      const name = key("confirmed", digest);
      const write = async (ttl: number) => (await commands.set(name, "1", "PX", px(ttl), "NX")) === "OK";
      const first = await context.agreed(undefined, async (epoch) => {
        const answer = Number(await commands.setOnceInEpoch(name, context.epochKey, px(ttlMs), epoch));
        return answer === -1 ? STALE : answer === 1;
      });
      if (first === undefined) return local.use(digest, ttlMs);
      if (first) context.keep(name, ttlMs, write);
      return first;
    },
  };
}
