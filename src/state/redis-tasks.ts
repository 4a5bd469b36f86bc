/**
 * MCP task records on Redis: any replica answers tasks/get, tasks/result, tasks/list and tasks/cancel for a
 * task another replica started. A task's final record is written once (TASK_FINALIZE): the first replica to
 * complete or cancel it decides, and every replica answers that. The index of task ids is bounded by age and
 * by count, so a flood of calls cannot fill Redis.
 */
import { MAX_TASK_TTL_MS } from "../config/index.js";
import type { KeyContext } from "./redis.js";
import type { TaskRecordStore } from "./shared-state.js";

/** Task ids the index keeps per service key, newest first: what tasks/list can page through. */
export const TASK_INDEX_MAX = 2000;

export function taskRecords(context: KeyContext): TaskRecordStore {
  const { commands, owner, base, sealer } = context;
  const record = (taskId: string) => `${base}mcptask:${taskId}`;
  const final = (taskId: string) => `${base}mcptask-final:${taskId}`;
  const lease = (taskId: string) => `${base}mcptask-lease:${taskId}`;
  const cancel = (taskId: string) => `${base}mcptask-cancel:${taskId}`;
  const index = `${base}mcptasks`;
  const ttl = (ms: number) => Math.max(1, Math.round(ms));
  const opened = (text: string | null | undefined): unknown => {
    if (text === null || text === undefined) return undefined;
    const value = sealer.open(text);
    if (value === undefined) context.foreign("task record");
    return value;
  };
  return {
    async put(taskId, value, ttlMs, createdAtMs) {
      const sealed = sealer.seal(value);
      const write = (left: number) =>
        commands
          .multi()
          .set(record(taskId), sealed, "PX", ttl(left))
          .zadd(index, createdAtMs, taskId)
          .zremrangebyscore(index, "-inf", Date.now() - MAX_TASK_TTL_MS)
          .zremrangebyrank(index, 0, -TASK_INDEX_MAX - 1)
          .pexpire(index, MAX_TASK_TTL_MS)
          .exec();
      context.keep(record(taskId), ttlMs, write);
      await context.soft(undefined, () => write(ttlMs));
    },
    async get(taskId) {
      return context.soft(undefined, async () => {
        const [finalText, workingText] = await commands.mget(final(taskId), record(taskId));
        return opened(finalText) ?? opened(workingText);
      });
    },
    async finalize(taskId, value, ttlMs) {
      const sealed = sealer.seal(value);
      const decided = await context.soft(undefined, async () =>
        opened(await commands.taskFinalize(final(taskId), sealed, ttl(ttlMs))),
      );
      // The outcome that holds is written again after a loss, whichever replica decided it.
      if (decided !== undefined) {
        const kept = sealer.seal(decided);
        context.keep(final(taskId), ttlMs, (left) =>
          commands.set(final(taskId), kept, "PX", ttl(left), "NX"),
        );
      }
      return decided;
    },
    async list(limit) {
      return context.soft([], async () => await commands.zrevrange(index, 0, Math.max(0, limit - 1)));
    },
    async follow(taskId, ttlMs) {
      return context.soft(
        true,
        async () => Number(await commands.pollLead(lease(taskId), owner, ttl(ttlMs))) === 1,
      );
    },
    async requestCancel(taskId, ttlMs) {
      await context.soft(undefined, async () => {
        await commands.set(cancel(taskId), "1", "PX", ttl(ttlMs));
      });
    },
    async cancelRequested(taskId) {
      return context.soft(false, async () => (await commands.exists(cancel(taskId))) === 1);
    },
  };
}
