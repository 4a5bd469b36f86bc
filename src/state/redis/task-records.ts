/**
 * MCP task records on Redis, over this replica's own file. The index of task ids is bounded by age and by
 * count, so a flood of calls cannot fill Redis.
 */
import { MAX_TASK_TTL_MS } from "../../config/index.js";
import { expiresAt, parseRecord, type TaskRecordStore } from "../records.js";
import { px, type KeyContext } from "./context.js";

/** Task ids the index keeps per service key: what tasks/list can page through. */
const TASK_INDEX_MAX = 2000;

export function taskRecords(context: KeyContext, local: TaskRecordStore): TaskRecordStore {
  const { commands, owner, key, sealer } = context;
  const index = key("mcptasks");
  const opened = (text: string | null | undefined) => context.open(text, parseRecord, "task record");
  return {
    load: () => local.load(),
    save: (records) => local.save(records),
    written: () => local.written(),
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
