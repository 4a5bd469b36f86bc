/**
 * The cost confirmations already answered, on Redis: one key per answered state, named by a digest of it
 * (never the state), written only if absent (`SET NX`) for the state's whole life, so the first replica to
 * take an answer is the only one. What this replica wrote is written again should Redis lose it.
 */
import type { UsedConfirmations } from "../records.js";
import { px, type KeyContext } from "./context.js";

/** `local` (this replica's record) serves only with GENERATION_REDIS_WHEN_DOWN=alone while Redis is away. */
export function usedConfirmations(context: KeyContext, local: UsedConfirmations): UsedConfirmations {
  const { commands, key } = context;
  return {
    async use(digest, ttlMs) {
      const name = key("confirmed", digest);
      const write = async (ttl: number) => (await commands.set(name, "1", "PX", px(ttl), "NX")) === "OK";
      const first = await context.agreed(undefined, () => write(ttlMs));
      if (first === undefined) return local.use(digest, ttlMs);
      if (first) context.keep(name, ttlMs, write);
      return first;
    },
  };
}
