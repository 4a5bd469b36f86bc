/**
 * Who starts what, across replicas: the claim on each start's fingerprint, and the journal entries another
 * replica needs to settle a start whose replica died.
 */
import { randomBytes } from "node:crypto";
import { parseJournalEntry, type StartClaims } from "../records.js";
import { STALE, px, type KeyContext } from "./context.js";

export function startClaims(context: KeyContext): StartClaims {
  const { commands, owner, key, sealer } = context;
  /** Claims this replica holds, and claims whose command failed (written or not: unknown), by fingerprint. */
  const held = new Map<string, string>();
  const uncertain = new Map<string, string>();
  const entryOf = (text: string | null | undefined) => context.open(text, parseJournalEntry, "journal line");
  return {
    async claim(fingerprint, ttlMs) {
      // Exclusive within this replica too. A claim whose command timed out may have been written after all:
      // the next try reuses its token.
      if (held.has(fingerprint)) return false;
      const claimed = key("claim", fingerprint);
      const token = uncertain.get(fingerprint) ?? `${owner}:${randomBytes(6).toString("hex")}`;
      const take = (ttl: number) => context.lease(claimed, token, ttl);
      uncertain.set(fingerprint, token);
      const taken = await context.agreed(true, async (epoch) => {
        const answer = await commands.takeLeaseInEpoch(claimed, context.epochKey, token, px(ttlMs), epoch);
        return Number(answer) === -1 ? STALE : Number(answer) === 1;
      });
      uncertain.delete(fingerprint);
      if (taken) {
        held.set(fingerprint, token);
        context.keep(claimed, ttlMs, take);
      }
      return taken;
    },
    async unclaim(fingerprint) {
      const token = held.get(fingerprint);
      held.delete(fingerprint);
      context.forget(key("claim", fingerprint));
      if (token !== undefined)
        await commands.releaseIfOwner(key("claim", fingerprint), token).catch(() => undefined);
    },
    async mirror(entry, ttlMs) {
      const sealed = sealer.seal(entry);
      const write = (name: string) => async (ttl: number) => commands.set(name, sealed, "PX", px(ttl));
      const intent = key("intent", entry.fingerprint);
      const started = key("started", entry.fingerprint);
      if (entry.phase === "intent") context.keep(intent, ttlMs, write(intent));
      else context.forget(intent);
      if (entry.phase === "started") context.keep(started, ttlMs, write(started));
      await context.soft(undefined, async () => {
        if (entry.phase === "intent") {
          await write(intent)(ttlMs);
        } else if (entry.phase === "void") {
          if (entryOf(await commands.get(intent))?.key === entry.key) await commands.del(intent);
        } else {
          await commands.multi().set(started, sealed, "PX", px(ttlMs)).del(intent).exec();
        }
      });
    },
    async read(fingerprint) {
      return context.soft({}, async () => {
        const [startedText, intentText] = await commands.mget(
          key("started", fingerprint),
          key("intent", fingerprint),
        );
        const started = entryOf(startedText);
        const intent = entryOf(intentText);
        return {
          ...(started?.fingerprint === fingerprint && { started }),
          ...(intent?.fingerprint === fingerprint && intent.phase === "intent" && { intent }),
        };
      });
    },
  };
}
