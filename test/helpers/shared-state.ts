/**
 * What the tests of `--http` replicas sharing one Redis start before any replica: a sandbox, a real
 * redis-server and a temporary folder (each replica's HOME and state folder go under it), started together
 * and stopped together.
 */
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle, SandboxOptions } from "../../src/sandbox/types.js";
import { tempRoot } from "./http-calls.js";
import { startRedis, type RedisProcess } from "./redis.js";

export interface SharedState {
  sandbox: SandboxHandle;
  redis: RedisProcess;
  root: Awaited<ReturnType<typeof tempRoot>>;
  /** Closes the sandbox, stops Redis, then removes the folder. */
  close(): Promise<void>;
}

/**
 * Starts the sandbox with `sandboxOptions`, a redis-server, and a temporary folder whose name starts with
 * `prefix`.
 */
export async function startSharedState(prefix: string, sandboxOptions: SandboxOptions): Promise<SharedState> {
  const [sandbox, redis, root] = await Promise.all([
    startSandbox(sandboxOptions),
    startRedis(),
    tempRoot(prefix),
  ]);
  return {
    sandbox,
    redis,
    root,
    close: async () => {
      await Promise.all([sandbox.close(), redis.stop()]);
      await root.remove();
    },
  };
}
