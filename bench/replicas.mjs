/**
 * Replicas sharing state on Redis: K waits spread round-robin over R in-process replicas, each with its own
 * GenerationClient, rate budget and PollEngine wired to its own Redis connections (src/state/redis/ from
 * dist/), against one sandbox allowing 60 requests per window. Baseline: the single-process engine (local
 * state, no Redis). Same time scaling and scoring as bench/waiting.mjs: 429s, status requests per completed
 * task, median and p95 delay between a task's completion and its waiter learning of it.
 *
 * Needs `redis-server` on the PATH (started here on a free loopback port, nothing persisted); without it the
 * section is skipped. Alone: `node bench/replicas.mjs` (after `npm run build`) prints the table.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import { pathToFileURL } from "node:url";
import { GenerationClient } from "../dist/api/client.js";
import { Logger } from "../dist/logger.js";
import { localState } from "../dist/state/local/index.js";
import { connectRedis } from "../dist/state/redis/index.js";
import { LOCAL_STATE } from "../dist/state/records.js";
import { PollEngine } from "../dist/generations/poll-engine.js";
import { sleep } from "./lib.mjs";
import { replicasTable } from "./report.mjs";
import { prepare, score } from "./waiting.mjs";

export { replicasTable };

const ACCOUNT_KEY = "bench-wait-key";

/** Starts redis-server on a free port; undefined when it is not installed. */
export async function startRedisServer() {
  const port = await new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
  const child = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    {
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const ready = await new Promise((resolve) => {
    let output = "";
    child.once("error", () => resolve(false));
    child.once("exit", () => resolve(false));
    child.stdout.on("data", (chunk) => {
      output += chunk;
      if (/ready to accept connections/i.test(output)) resolve(true);
    });
  });
  if (!ready) return undefined;
  return {
    url: `redis://127.0.0.1:${port}`,
    stop: () =>
      new Promise((resolve) => {
        child.once("exit", resolve);
        child.kill("SIGTERM");
      }),
  };
}

/** One scenario: `k` waits over `replicas` replicas; `redisUrl` undefined = the single-process baseline. */
export async function replicasScenario({ k, replicas, windowMs, intervalMs, redisUrl, everywhere = false }) {
  const setup = await prepare({ k, windowMs, intervalMs });
  const nodes = [];
  try {
    await sleep(Math.max(0, setup.windowOpenedAt + windowMs + 50 - Date.now()));
    setup.sandbox.clearRequests();
    const prefix = `bench-${randomBytes(4).toString("hex")}:`;
    const quiet = new Logger("error", () => {});
    for (let i = 0; i < replicas; i++) {
      const hub = redisUrl === undefined ? LOCAL_STATE : await connectRedis({ url: redisUrl, prefix }, quiet);
      const target = { baseUrl: setup.sandbox.baseUrl, apiKey: ACCOUNT_KEY };
      const shared = hub.forKey(target, await localState(undefined, quiet));
      const client = new GenerationClient({ ...target, budget: shared.budget, userAgent: "bench" });
      const poller = new PollEngine({ api: client, intervalMs, coordinator: shared.polls });
      nodes.push({ hub, client, poller });
    }
    const timeoutMs = 10 * windowMs + 20 * intervalMs;
    const detected = new Map();
    // Round-robin: one waiter per task. Everywhere: every replica waits on every task (a caller per replica).
    const waits = setup.videoIds.flatMap((id, i) =>
      (everywhere ? nodes : [nodes[i % replicas]]).map((node) => ({ id, node })),
    );
    await Promise.all(
      waits.map(async ({ id, node }) => {
        const result = await node.poller.wait(id, { timeoutMs });
        if (result.outcome === "final" && !detected.has(id)) detected.set(id, Date.now());
      }),
    );
    return score(setup, detected, k);
  } finally {
    for (const node of nodes) {
      node.poller.close();
      await node.client.close();
      await node.hub.close();
    }
    await setup.sandbox.close();
  }
}

/** Every K with the baseline and each replica count; rows ready for a table. */
export async function replicasBench({ ks, replicaCounts, windowMs, intervalMs, log = () => {} }) {
  const redis = await startRedisServer();
  if (redis === undefined) return { skipped: "redis-server is not installed", rows: [] };
  const rows = [];
  try {
    for (const k of ks) {
      const baseline = await replicasScenario({ k, replicas: 1, windowMs, intervalMs, redisUrl: undefined });
      rows.push({ k, setup: "1 process, local state (baseline)", ...baseline });
      for (const replicas of replicaCounts) {
        const shared = await replicasScenario({ k, replicas, windowMs, intervalMs, redisUrl: redis.url });
        rows.push({ k, setup: `${replicas} replica${replicas > 1 ? "s" : ""}, Redis`, ...shared });
      }
      // What Redis buys: the most replicas, each with only its own state.
      const most = Math.max(...replicaCounts);
      const alone = await replicasScenario({ k, replicas: most, windowMs, intervalMs, redisUrl: undefined });
      rows.push({ k, setup: `${most} replicas, local state each (no Redis)`, ...alone });
      // Poll sharing: every replica waits on every task.
      for (const redisUrl of [redis.url, undefined]) {
        const everywhere = await replicasScenario({
          k,
          replicas: most,
          windowMs,
          intervalMs,
          redisUrl,
          everywhere: true,
        });
        const state = redisUrl === undefined ? "local state each (no Redis)" : "Redis";
        rows.push({
          k,
          setup: `${most} replicas, ${state}, every task waited on by all ${most}`,
          ...everywhere,
        });
      }
      log(`  replicas: K=${k} done`);
    }
  } finally {
    await redis.stop();
  }
  return { rows };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const result = await replicasBench({
    ks: [10, 50, 100],
    replicaCounts: [1, 2, 4],
    windowMs: 3000,
    intervalMs: 250,
    log: (line) => process.stderr.write(`${line}\n`),
  });
  process.stdout.write(result.skipped ? `skipped: ${result.skipped}\n` : `${replicasTable(result.rows)}\n`);
}
