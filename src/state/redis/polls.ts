/**
 * One poll per task per interval: the replica holding a task's lease polls it, stores the answer and
 * publishes a wake-up; the others read it. What is read back is cleaned as a fresh answer (`toVideoStatus`).
 */
import * as z from "zod";
import { toVideoStatus } from "../../api/shapes.js";
import type { PollCoordinator } from "../records.js";
import type { KeyContext } from "./context.js";

const STATUS_TTL_MS = 10 * 60 * 1000;
const STORED = z.object({ raw: z.unknown(), at: z.number() });

export function pollCoordinator(context: KeyContext): PollCoordinator {
  const { commands, owner, wakes, key, digest, sealer } = context;
  return {
    async lead(videoId, ttlMs) {
      return context.soft(true, () => context.lease(key("lease", videoId), owner, ttlMs));
    },
    async release(videoId) {
      await commands.releaseIfOwner(key("lease", videoId), owner).catch(() => undefined);
    },
    async publish(videoId, video) {
      const stored = { raw: video.raw, at: Date.now() };
      await context.soft(undefined, async () => {
        await commands
          .multi()
          .set(key("status", videoId), sealer.seal(stored), "PX", STATUS_TTL_MS)
          .publish(context.channel, `${digest}:${videoId}`)
          .exec();
      });
    },
    async latest(videoId) {
      return context.soft(undefined, async () =>
        context.open(
          await commands.get(key("status", videoId)),
          (value) => readStatus(value, videoId),
          "task status",
        ),
      );
    },
    nextChange(videoId, ms, signal) {
      const name = `${digest}:${videoId}`;
      // An abort listener added after the abort would never fire.
      if (signal.aborted) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal.removeEventListener("abort", done);
          wakes.off(name, done);
          resolve();
        };
        const timer = setTimeout(done, Math.max(0, ms));
        signal.addEventListener("abort", done, { once: true });
        wakes.on(name, done);
      });
    },
  };
}

function readStatus(value: unknown, videoId: string) {
  const stored = STORED.safeParse(value).data;
  try {
    return stored && { video: toVideoStatus(stored.raw, videoId), at: stored.at };
  } catch {
    return undefined;
  }
}
