/**
 * Who starts what, across replicas: the claim on each start's fingerprint (one replica sends it, the others
 * wait for its task), the journal lines another replica needs to settle a start whose replica died, and the
 * ownership of each task when one key serves several callers. Values are sealed (seal.ts) and checked again
 * as journal lines when read back. What a replica writes here is kept in its rebuild log (redis.ts), so it is
 * written again should Redis lose its data.
 */
import { randomBytes } from "node:crypto";
import { parseJournalLine, type JournalEntry } from "../tasks/journal.js";
import { parseOwnedTask } from "../tasks/ownership.js";
import type { KeyContext } from "./redis.js";
import type { OwnershipStore, StartClaims } from "./shared-state.js";

/** Tasks each scope keeps listed at most (newest first), and how long an ownership is remembered. */
const OWNED_MAX = 1000;
const OWNED_TTL_MS = 30 * 24 * 60 * 60 * 1000;

export function startClaims(context: KeyContext): StartClaims {
  const { commands, owner, base, sealer } = context;
  const claim = (fingerprint: string) => `${base}claim:${fingerprint}`;
  const started = (fingerprint: string) => `${base}started:${fingerprint}`;
  const intent = (fingerprint: string) => `${base}intent:${fingerprint}`;
  /** Claims this replica holds, and claims whose command failed (written or not: unknown), by fingerprint. */
  const held = new Map<string, string>();
  const uncertain = new Map<string, string>();
  const entryOf = (text: string | null): JournalEntry | undefined => {
    if (text === null) return undefined;
    const value = sealer.open(text);
    const entry = value === undefined ? undefined : parseJournalLine(JSON.stringify(value));
    if (entry === undefined) context.foreign("journal line");
    return entry;
  };
  return {
    async claim(fingerprint, ttlMs) {
      // Exclusive, also within this replica; but a claim whose command failed (timed out while Redis was
      // paused) may have been written after all: the next try takes it with the same token, as its own.
      if (held.has(fingerprint)) return false;
      const key = claim(fingerprint);
      const token = uncertain.get(fingerprint) ?? `${owner}:${randomBytes(6).toString("hex")}`;
      const take = async (ttl: number) =>
        Number(await commands.startClaim(key, token, Math.round(ttl))) === 1;
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
      context.forget(claim(fingerprint));
      if (token !== undefined)
        await commands.releaseIfOwner(claim(fingerprint), token).catch(() => undefined);
    },
    async mirror(entry, ttlMs) {
      const sealed = sealer.seal(entry);
      const write = (key: string) => async (ttl: number) => commands.set(key, sealed, "PX", Math.round(ttl));
      const intentKey = intent(entry.fingerprint);
      const startedKey = started(entry.fingerprint);
      if (entry.phase === "intent") context.keep(intentKey, ttlMs, write(intentKey));
      else context.forget(intentKey);
      if (entry.phase === "started") context.keep(startedKey, ttlMs, write(startedKey));
      await context.soft(undefined, async () => {
        if (entry.phase === "intent") {
          await write(intentKey)(ttlMs);
        } else if (entry.phase === "void") {
          const open = entryOf(await commands.get(intentKey));
          if (open?.key === entry.key) await commands.del(intentKey);
        } else {
          await commands.multi().set(startedKey, sealed, "PX", Math.round(ttlMs)).del(intentKey).exec();
        }
      });
    },
    async read(fingerprint) {
      return context.soft({}, async () => {
        const [startedText, intentText] = await commands.mget(started(fingerprint), intent(fingerprint));
        const result: { started?: JournalEntry; intent?: JournalEntry } = {};
        const startedEntry = entryOf(startedText ?? null);
        const intentEntry = entryOf(intentText ?? null);
        if (startedEntry?.fingerprint === fingerprint) result.started = startedEntry;
        if (intentEntry?.fingerprint === fingerprint && intentEntry.phase === "intent")
          result.intent = intentEntry;
        return result;
      });
    },
  };
}

export function ownershipStore(context: KeyContext): OwnershipStore {
  const { commands, base, sealer } = context;
  const ownerKey = (videoId: string) => `${base}owner:${videoId}`;
  // The scope is already a digest (Caller.scope), never a credential.
  const listKey = (scope: string) => `${base}owned:${scope}`;
  const taskOf = (text: string | null | undefined) => {
    if (text === null || text === undefined) return undefined;
    const task = parseOwnedTask(sealer.open(text));
    if (task === undefined) context.foreign("task ownership");
    return task;
  };
  return {
    async record(task, ttlMs) {
      const sealed = sealer.seal(task);
      const write = (ttl: number) =>
        commands
          .multi()
          .set(ownerKey(task.video_id), sealed, "PX", Math.round(ttl))
          .zadd(listKey(task.scope), task.started_at, task.video_id)
          .zremrangebyrank(listKey(task.scope), 0, -OWNED_MAX - 1)
          .pexpire(listKey(task.scope), OWNED_TTL_MS)
          .exec();
      const ttl = Math.min(ttlMs, OWNED_TTL_MS);
      context.keep(ownerKey(task.video_id), ttl, write);
      await context.soft(undefined, () => write(ttl));
    },
    async owner(videoId) {
      return context.soft(undefined, async () => taskOf(await commands.get(ownerKey(videoId))));
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
