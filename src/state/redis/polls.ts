/**
 * One poll per task per interval, whichever replicas wait on it: the replica holding a task's lease polls it,
 * stores the service's answer and publishes a wake-up; the others read it. What is stored is the answer as
 * the service gave it (secrets masked as it is sealed, seal.ts); what is read back goes through the very
 * cleaning of a fresh answer (`toVideoStatus`), so nothing stored can reach a result unchecked.
 */
import { toVideoStatus } from "../../api/shapes.js";
import type { PollCoordinator, SharedStatus } from "../records.js";
import type { KeyContext } from "./context.js";

/** A task's latest status is kept this long after its last poll. */
const STATUS_TTL_MS = 10 * 60 * 1000;

export function pollCoordinator(context: KeyContext): PollCoordinator {
  const { commands, owner, listeners, base, digest, sealer } = context;
  const lease = (videoId: string) => `${base}lease:${videoId}`;
  const status = (videoId: string) => `${base}status:${videoId}`;
  return {
    async lead(videoId, ttlMs) {
      const ttl = Math.max(1, Math.round(ttlMs));
      return context.soft(
        true,
        async () => Number(await commands.takeLease(lease(videoId), owner, ttl)) === 1,
      );
    },
    async release(videoId) {
      await commands.releaseIfOwner(lease(videoId), owner).catch(() => undefined);
    },
    async publish(videoId, video) {
      const stored = { raw: video.raw, at: Date.now() };
      await context.soft(undefined, async () => {
        await commands
          .multi()
          .set(status(videoId), sealer.seal(stored), "PX", STATUS_TTL_MS)
          .publish(context.channel, `${digest}:${videoId}`)
          .exec();
      });
    },
    async latest(videoId) {
      return context.soft(undefined, async () =>
        context.open(
          await commands.get(status(videoId)),
          (value) => readStatus(value, videoId),
          "task status",
        ),
      );
    },
    nextChange(videoId, ms, signal) {
      const name = `${digest}:${videoId}`;
      return new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal.removeEventListener("abort", done);
          const set = listeners.get(name);
          set?.delete(done);
          if (set?.size === 0) listeners.delete(name);
          resolve();
        };
        const timer = setTimeout(done, Math.max(0, ms));
        signal.addEventListener("abort", done, { once: true });
        const set = listeners.get(name) ?? new Set();
        set.add(done);
        listeners.set(name, set);
      });
    },
  };
}

/** A stored answer, cleaned as a fresh one would be; undefined when it is not one. */
function readStatus(value: unknown, videoId: string): SharedStatus | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { raw, at } = value as { raw?: unknown; at?: unknown };
  if (typeof at !== "number" || !Number.isFinite(at)) return undefined;
  try {
    return { video: toVideoStatus(raw, videoId), at };
  } catch {
    return undefined;
  }
}
