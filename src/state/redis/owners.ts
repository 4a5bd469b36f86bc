/** Who started which task, on Redis over this replica's own record: any replica sees it. */
import { parseOwnedTask, type OwnedTask, type OwnershipStore } from "../records.js";
import { px, type KeyContext } from "./context.js";

/** Tasks each scope keeps listed at most (newest first), and how long an ownership is remembered. */
const OWNED_MAX = 1000;
const OWNED_TTL_MS = 30 * 24 * 60 * 60 * 1000;

export function ownershipStore(context: KeyContext, local: OwnershipStore): OwnershipStore {
  const { commands, key, sealer } = context;
  // The scope is already a digest (Caller.scope), never a credential.
  const listKey = (scope: string) => key("owned", scope);
  const owner = async (videoId: string) =>
    (await local.owner(videoId)) ??
    context.soft(undefined, async () =>
      context.open(await commands.get(key("owner", videoId)), parseOwnedTask, "task ownership"),
    );
  return {
    async record(task) {
      const sealed = sealer.seal(task);
      const write = (ttl: number) =>
        commands
          .multi()
          .set(key("owner", task.video_id), sealed, "PX", px(ttl))
          .zadd(listKey(task.scope), task.started_at, task.video_id)
          .zremrangebyrank(listKey(task.scope), 0, -OWNED_MAX - 1)
          .pexpire(listKey(task.scope), OWNED_TTL_MS)
          .exec();
      context.keep(key("owner", task.video_id), OWNED_TTL_MS, write);
      await Promise.all([local.record(task), context.soft(undefined, () => write(OWNED_TTL_MS))]);
    },
    owner,
    async list(scope, offset, limit) {
      const { ids, total } = await context.soft({ ids: [] as string[], total: 0 }, async () => {
        const [ids, total] = await Promise.all([
          commands.zrevrange(listKey(scope), offset, offset + limit - 1),
          commands.zcard(listKey(scope)),
        ]);
        return { ids, total };
      });
      // Redis knows none (it is away, or lost them): what this replica knows.
      if (total === 0) return local.list(scope, offset, limit);
      const found = await Promise.all(ids.map(owner));
      return { items: found.filter((task): task is OwnedTask => task?.scope === scope), total };
    },
  };
}
