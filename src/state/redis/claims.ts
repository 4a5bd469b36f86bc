/**
 * Who starts what, across replicas: the claim on each start's fingerprint (one replica sends it, the others
 * wait for its task), the journal entries another replica needs to settle a start whose replica died, and the
 * owner of each task when one key serves several callers. Values are sealed and checked again as records
 * when read back; what a replica writes is kept in its rebuild log, to write again should Redis lose it.
 */
import { randomBytes } from "node:crypto";
import { parseJournalEntry, parseOwnedTask, type OwnershipStore, type StartClaims } from "../records.js";
import { px, type KeyContext } from "./context.js";

/** Tasks each scope keeps listed at most (newest first), and how long an ownership is remembered. */
const OWNED_MAX = 1000;
const OWNED_TTL_MS = 30 * 24 * 60 * 60 * 1000;

export function startClaims(context: KeyContext): StartClaims {
  const { commands, owner, base, sealer } = context;
  const claimKey = (fingerprint: string) => `${base}claim:${fingerprint}`;
  const startedKey = (fingerprint: string) => `${base}started:${fingerprint}`;
  const intentKey = (fingerprint: string) => `${base}intent:${fingerprint}`;
  /** Claims this replica holds, and claims whose command failed (written or not: unknown), by fingerprint. */
  const held = new Map<string, string>();
  const uncertain = new Map<string, string>();
  const entryOf = (text: string | null | undefined) => context.open(text, parseJournalEntry, "journal line");
  return {
    async claim(fingerprint, ttlMs) {
      // Exclusive, also within this replica; but a claim whose command failed (timed out while Redis was
      // paused) may have been written after all: the next try takes it with the same token, as its own.
      if (held.has(fingerprint)) return false;
      const key = claimKey(fingerprint);
      const token = uncertain.get(fingerprint) ?? `${owner}:${randomBytes(6).toString("hex")}`;
      const take = async (ttl: number) => Number(await commands.takeLease(key, token, px(ttl))) === 1;
      uncertain.set(fingerprint, token);
      const taken = await context.agreed(true, () => take(ttlMs));
      uncertain.delete(fingerprint);
      if (taken) {
        held.set(fingerprint, token);
        context.keep(key, ttlMs, take);
      }
      return taken;
    },
    async unclaim(fingerprint) {
      const token = held.get(fingerprint);
      held.delete(fingerprint);
      context.forget(claimKey(fingerprint));
      if (token !== undefined)
        await commands.releaseIfOwner(claimKey(fingerprint), token).catch(() => undefined);
    },
    async mirror(entry, ttlMs) {
      const sealed = sealer.seal(entry);
      const write = (key: string) => async (ttl: number) => commands.set(key, sealed, "PX", px(ttl));
      const intent = intentKey(entry.fingerprint);
      const started = startedKey(entry.fingerprint);
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
          startedKey(fingerprint),
          intentKey(fingerprint),
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

export function ownershipStore(context: KeyContext): OwnershipStore {
  const { commands, base, sealer } = context;
  const ownerKey = (videoId: string) => `${base}owner:${videoId}`;
  // The scope is already a digest (Caller.scope), never a credential.
  const listKey = (scope: string) => `${base}owned:${scope}`;
  return {
    async record(task) {
      const sealed = sealer.seal(task);
      const write = (ttl: number) =>
        commands
          .multi()
          .set(ownerKey(task.video_id), sealed, "PX", px(ttl))
          .zadd(listKey(task.scope), task.started_at, task.video_id)
          .zremrangebyrank(listKey(task.scope), 0, -OWNED_MAX - 1)
          .pexpire(listKey(task.scope), OWNED_TTL_MS)
          .exec();
      context.keep(ownerKey(task.video_id), OWNED_TTL_MS, write);
      await context.soft(undefined, () => write(OWNED_TTL_MS));
    },
    async owner(videoId) {
      return context.soft(undefined, async () =>
        context.open(await commands.get(ownerKey(videoId)), parseOwnedTask, "task ownership"),
      );
    },
    async list(scope, offset, limit) {
      return context.soft({ ids: [], total: 0 }, async () => {
        const [ids, total] = await Promise.all([
          commands.zrevrange(listKey(scope), offset, offset + limit - 1),
          commands.zcard(listKey(scope)),
        ]);
        return { ids, total };
      });
    },
  };
}
