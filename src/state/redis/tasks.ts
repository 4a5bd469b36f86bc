/**
 * MCP task records and each caller's day of spend, on Redis. The index of task ids is bounded by age and by
 * count, so a flood of calls cannot fill Redis. A day's spend is one hash per caller with a field per replica,
 * so that each replica can write its own share again after Redis lost its data.
 */
import { MAX_TASK_TTL_MS } from "../../config/index.js";
import { LocalSpendStore } from "../local/spend.js";
import { expiresAt, parseRecord, type SpendStore, type TaskRecordStore } from "../records.js";
import { px, type KeyContext } from "./context.js";

/** Task ids the index keeps per service key, newest first: what tasks/list can page through. */
const TASK_INDEX_MAX = 2000;
/** A day's counter outlives its day by an hour: a replica's clock a little behind still finds it. */
const SPEND_TTL_MS = 25 * 60 * 60 * 1000;

export function taskRecords(context: KeyContext): TaskRecordStore {
  const { commands, owner, key, sealer } = context;
  const index = key("mcptasks");
  const opened = (text: string | null | undefined) => context.open(text, parseRecord, "task record");
  return {
    async share(record) {
      const taskId = record.task.taskId;
      const left = expiresAt(record.task) - Date.now();
      if (left <= 0) return;
      const sealed = sealer.seal(record);
      const write = (ms: number) =>
        commands
          .multi()
          .set(key("mcptask", taskId), sealed, "PX", px(ms))
          .zadd(index, Date.parse(record.task.createdAt), taskId)
          .zremrangebyscore(index, "-inf", Date.now() - MAX_TASK_TTL_MS)
          .zremrangebyrank(index, 0, -TASK_INDEX_MAX - 1)
          .pexpire(index, MAX_TASK_TTL_MS)
          .exec();
      context.keep(key("mcptask", taskId), left, write);
      await context.soft(undefined, () => write(left));
    },
    async read(taskId) {
      return context.soft(undefined, async () => {
        const [final, working] = await commands.mget(key("mcptask-final", taskId), key("mcptask", taskId));
        return opened(final) ?? opened(working);
      });
    },
    async finalize(record, ttlMs) {
      const final = key("mcptask-final", record.task.taskId);
      const decided = await context.soft(undefined, async () =>
        opened(await commands.taskFinalize(final, sealer.seal(record), px(ttlMs))),
      );
      // The outcome that holds is written again after a loss, whichever replica decided it.
      if (decided !== undefined) {
        const kept = sealer.seal(decided);
        context.keep(final, ttlMs, (left) => commands.set(final, kept, "PX", px(left), "NX"));
      }
      return decided;
    },
    async list(limit) {
      return context.soft([], async () => await commands.zrevrange(index, 0, Math.max(0, limit - 1)));
    },
    async follow(taskId, ttlMs) {
      return context.soft(true, () => context.lease(key("mcptask-lease", taskId), owner, ttlMs));
    },
    async requestCancel(record) {
      const left = px(expiresAt(record.task) - Date.now());
      await context.soft(undefined, async () => {
        await commands.set(key("mcptask-cancel", record.task.taskId), "1", "PX", left);
      });
    },
    async cancelRequested(taskId) {
      return context.soft(false, async () => (await commands.exists(key("mcptask-cancel", taskId))) === 1);
    },
  };
}

export function spendStore(context: KeyContext): SpendStore {
  const { commands, key, owner } = context;
  // Only with GENERATION_REDIS_WHEN_DOWN=alone while Redis is away: what this replica alone started.
  const alone = new LocalSpendStore(undefined);
  /** This replica's share of each caller's day, as Redis holds it: what it writes again after a loss. */
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
      const answer = await context.agreed(undefined, () =>
        commands.spendReserve(name, amount, limit, SPEND_TTL_MS, owner),
      );
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
