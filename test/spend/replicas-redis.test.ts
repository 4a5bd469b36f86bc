/**
 * The daily limit across three `--http` replicas on one real redis-server, against the sandbox: one caller's
 * calls, racing on every replica at once, never start a single task more than GENERATION_DAILY_CREDITS
 * allows (the sandbox's request log counts them); another caller keeps its own allowance; a replica killed
 * with -9 and started again finds every spend record; with Redis gone, a start that needs a reservation is
 * refused and nothing reaches the service. Needs `npm run build`.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { connectHttp, startHttpBin, type HttpServerProcess } from "../helpers/http.js";
import { tenant } from "../helpers/red-team.js";
import type { RedisProcess } from "../helpers/redis.js";
import { startSharedState, type SharedState } from "../helpers/shared-state.js";
import { nextMidnightUtc, startRequestsBy, startsBy, textOf } from "./spend-helpers.js";

const DAILY = 200;
/** 5 s on the lite model: 25 credits, so the day holds exactly eight starts. */
const COST = 25;
const RACERS = 36;
const ALICE = "sk-spend-alice";
const BOB = "sk-spend-bob";

let shared: SharedState;
let redis: RedisProcess;
let sandbox: SandboxHandle;
let root: SharedState["root"];
const servers: HttpServerProcess[] = [];
const clients: Client[] = [];

function startReplica(index: number): Promise<HttpServerProcess> {
  return startHttpBin([], {
    HOME: root.dir,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_STATE_DIR: path.join(root.dir, `replica-${index}`),
    GENERATION_REDIS_URL: redis.url,
    GENERATION_DAILY_CREDITS: String(DAILY),
    GENERATION_HTTP_MAX_CONCURRENT: "200",
  });
}

beforeAll(async () => {
  shared = await startSharedState("generation-mcp-spend-replicas-", {
    timings: { queuedMs: 60_000, processingMs: 60_000 },
    rateLimit: { limit: 10_000, windowMs: 60_000 },
    accounts: [ALICE, BOB].map((key) => tenant(key, key)),
  });
  ({ redis, root, sandbox } = shared);
  // A little latency on every start keeps many of them in flight together: the race is real.
  sandbox.faults.latency("generate", 30);
  servers.push(...(await Promise.all([0, 1, 2].map(startReplica))));
});

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
  await Promise.all(servers.map((server) => server.stop()));
  await shared?.close();
});

async function client(server: HttpServerProcess, key: string): Promise<Client> {
  const made = await connectHttp(server.url, key);
  clients.push(made);
  return made;
}

function video(prompt: string): { name: string; arguments: Record<string, unknown> } {
  return { name: "generate_video", arguments: { prompt, duration: 5, wait: false } };
}

async function allowance(on: Client): Promise<Record<string, unknown>> {
  const result = await on.callTool({ name: "get_credits", arguments: {} });
  expect(result.isError, textOf(result)).toBeFalsy();
  return (result.structuredContent as { allowance: Record<string, unknown> }).allowance;
}

describe("GENERATION_DAILY_CREDITS on three replicas sharing Redis", () => {
  it("never lets racing calls of one caller overspend, and loses nothing when a replica is killed", async () => {
    const alice = await Promise.all(servers.map((server) => client(server, ALICE)));
    const results = (await Promise.all(
      Array.from({ length: RACERS }, (_, index) =>
        alice[index % alice.length]?.callTool(video(`racing call ${index}: a kite over the sea`)),
      ),
    )) as CallToolResult[];
    const started = results.filter((result) => result.isError !== true);
    const refused = results.filter((result) => result.isError === true);
    expect(started).toHaveLength(DAILY / COST);
    expect(startsBy(sandbox, ALICE)).toBe(DAILY / COST);
    expect(startRequestsBy(sandbox, ALICE)).toBe(DAILY / COST);
    for (const result of refused) {
      expect(textOf(result)).toMatch(/^budget_exceeded: /);
      expect(textOf(result)).toContain(nextMidnightUtc());
    }
    for (const on of alice) {
      expect(await allowance(on)).toEqual({
        daily_limit: DAILY,
        used_today: DAILY,
        remaining_today: 0,
        resets_at: nextMidnightUtc(),
      });
    }

    // Another caller has its own allowance.
    const bob = await client(servers[1] as HttpServerProcess, BOB);
    const bobs = await bob.callTool(video("bob's first video"));
    expect(bobs.isError, textOf(bobs)).toBeFalsy();
    expect(await allowance(bob)).toMatchObject({ used_today: COST, remaining_today: DAILY - COST });

    // kill -9 a replica and start it again: the day's records are all in Redis.
    const victim = servers[0] as HttpServerProcess;
    victim.child.kill("SIGKILL");
    await victim.exited;
    const restarted = await startReplica(0);
    servers[0] = restarted;
    const again = await client(restarted, ALICE);
    expect(await allowance(again)).toMatchObject({ used_today: DAILY, remaining_today: 0 });
    const more = await again.callTool(video("one more after the restart"));
    expect(more.isError).toBe(true);
    expect(textOf(more)).toMatch(/^budget_exceeded: /);
    expect(startRequestsBy(sandbox, ALICE)).toBe(DAILY / COST);
  }, 90_000);

  it("refuses a start it cannot reserve while Redis is down, and sends nothing", async () => {
    const bob = await client(servers[2] as HttpServerProcess, BOB);
    const before = startRequestsBy(sandbox, BOB);
    await redis.stop();
    try {
      const result = await bob.callTool(video("while redis is down"));
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/^internal_error: .*shared state \(Redis\)/);
      expect(startRequestsBy(sandbox, BOB)).toBe(before);
    } finally {
      await redis.restart();
    }
  }, 60_000);
});
