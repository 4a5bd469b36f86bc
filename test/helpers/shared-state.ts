/**
 * What the tests of `--http` replicas sharing one Redis start before any replica: a sandbox, a real
 * redis-server and a temporary folder (each replica's HOME and state folder go under it), started together
 * and stopped together.
 */
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle, SandboxOptions } from "../../src/sandbox/types.js";
import { tempRoot } from "./http-calls.js";
import { startHttpBin, type HttpServerProcess } from "./http.js";
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

let replicaCount = 0;

/**
 * `count` replicas of the built bin in `--http` mode on `redis`, against `sandbox`, started together, each with
 * a state folder of its own under `root` (polling every 100 ms); `env` adds to their environment. The caller
 * stops them.
 */
export function startReplicas(
  on: { sandbox: SandboxHandle; redis: RedisProcess; root: SharedState["root"] },
  count: number,
  env: Record<string, string> = {},
): Promise<HttpServerProcess[]> {
  return Promise.all(
    Array.from({ length: count }, () =>
      startHttpBin([], {
        HOME: on.root.dir,
        GENERATION_BASE_URL: on.sandbox.baseUrl,
        GENERATION_REDIS_URL: on.redis.url,
        GENERATION_STATE_DIR: `${on.root.dir}/replica-${replicaCount++}`,
        GENERATION_POLL_INTERVAL_MS: "100",
        ...env,
      }),
    ),
  );
}
