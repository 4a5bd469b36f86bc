/**
 * Who starts what, across replicas: the claim on each start's fingerprint (one replica sends it, the others
 * wait for its task), the journal lines another replica needs to settle a start whose replica died, and the
 * ownership of each task when one key serves several callers. Values are sealed (seal.ts) and checked again
 * as journal lines when read back.
 */
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
  const entryOf = (text: string | null): JournalEntry | undefined => {
    if (text === null) return undefined;
    const value = sealer.open(text);
    const entry = value === undefined ? undefined : parseJournalLine(JSON.stringify(value));
    if (entry === undefined) context.foreign("journal line");
    return entry;
  };
  return {
    async claim(fingerprint, ttlMs) {
      // A claim that cannot be written is no agreement: the start is refused (or, by the operator's choice,
      // this replica decides alone).
      return context.agreed(
        true,
        async () => (await commands.set(claim(fingerprint), owner, "PX", Math.round(ttlMs), "NX")) === "OK",
      );
    },
    async unclaim(fingerprint) {
      await commands.releaseIfOwner(claim(fingerprint), owner).catch(() => undefined);
    },
    async mirror(entry, ttlMs) {
      const ttl = Math.round(ttlMs);
      await context.soft(undefined, async () => {
        if (entry.phase === "intent") {
          await commands.set(intent(entry.fingerprint), sealer.seal(entry), "PX", ttl);
        } else if (entry.phase === "void") {
          const open = entryOf(await commands.get(intent(entry.fingerprint)));
          if (open?.key === entry.key) await commands.del(intent(entry.fingerprint));
        } else {
          await commands
            .multi()
            .set(started(entry.fingerprint), sealer.seal(entry), "PX", ttl)
            .del(intent(entry.fingerprint))
            .exec();
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
      const ttl = Math.round(Math.min(ttlMs, OWNED_TTL_MS));
      await context.soft(undefined, async () => {
        await commands
          .multi()
          .set(ownerKey(task.video_id), sealer.seal(task), "PX", ttl)
          .zadd(listKey(task.scope), task.started_at, task.video_id)
          .zremrangebyrank(listKey(task.scope), 0, -OWNED_MAX - 1)
          .pexpire(listKey(task.scope), OWNED_TTL_MS)
          .exec();
      });
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
