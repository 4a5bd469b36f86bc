/**
 * Redis without persistence, killed with -9 and started again empty, under two `--http` replicas (real
 * processes: the built bin, redis-server, the sandbox on loopback). The replicas notice that the shared state
 * is gone, not merely out of reach, and write again what each of them recorded there: an identical retry sent
 * to the other replica is not charged again, and one caller's day never passes its limit. And a Redis that
 * pauses its writes makes starts that send nothing say so. Needs `npm run build`.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { Redis } from "ioredis";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { connectHttp, startHttpBin, type HttpServerProcess } from "../helpers/http.js";
import { tenant, until } from "../helpers/red-team.js";
import type { RedisProcess } from "../helpers/redis.js";
import { startSharedState, type SharedState } from "../helpers/shared-state.js";
import { startRequestsBy, textOf } from "../spend/spend-helpers.js";

const DAILY = 50;
const ALICE = "sk-lost-alice";
const BOB = "sk-lost-bob";

let shared: SharedState;
let redis: RedisProcess;
let sandbox: SandboxHandle;
let root: SharedState["root"];
let servers: HttpServerProcess[] = [];
const clients: Client[] = [];

beforeAll(async () => {
  shared = await startSharedState("generation-mcp-redis-lost-", {
    timings: { queuedMs: 60_000, processingMs: 60_000 },
    rateLimit: { limit: 10_000, windowMs: 60_000 },
    accounts: [ALICE, BOB].map((key) => tenant(key, key)),
  });
  ({ redis, root, sandbox } = shared);
  servers = await Promise.all(
    [0, 1].map((index) =>
      startHttpBin([], {
        HOME: root.dir,
        GENERATION_BASE_URL: sandbox.baseUrl,
        GENERATION_STATE_DIR: path.join(root.dir, `replica-${index}`),
        GENERATION_REDIS_URL: redis.url,
        GENERATION_DAILY_CREDITS: String(DAILY),
      }),
    ),
  );
});

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
  await Promise.all(servers.map((server) => server.stop()));
  await shared?.close();
});

async function clientOf(server: HttpServerProcess, key: string): Promise<Client> {
  const client = await connectHttp(server.url, key);
  clients.push(client);
  return client;
}

function video(prompt: string, duration = 5): { name: string; arguments: Record<string, unknown> } {
  return { name: "generate_video", arguments: { prompt, duration, wait: false } };
}

async function call(client: Client, request: ReturnType<typeof video>): Promise<CallToolResult> {
  return (await client.callTool(request, undefined, { timeout: 60_000 })) as CallToolResult;
}

/**
 * A call right after Redis came back, repeated while the replica's connection is still being made again
 * (then it refuses the start, sending nothing: "not accepting writes right now").
 */
async function callOnceReconnected(
  client: Client,
  request: ReturnType<typeof video>,
): Promise<CallToolResult> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const result = await call(client, request);
    if (!/shared state \(Redis\) is not accepting writes/.test(textOf(result)) || Date.now() > deadline) {
      return result;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

it("an identical retry on the other replica after Redis restarted empty is the same task, not a second charge", async () => {
  const [a, b] = [await clientOf(servers[0]!, BOB), await clientOf(servers[1]!, BOB)];
  for (let round = 0; round < 3; round++) {
    const request = video(`round ${round}: a heron at dawn`, 2);
    const first = await call(a, request);
    expect(first.isError, textOf(first)).toBeFalsy();
    const before = startRequestsBy(sandbox, BOB);
    await redis.crash();
    // Sent at once: before either replica may have noticed that the store is empty.
    const retry = await callOnceReconnected(b, request);
    expect(retry.isError, textOf(retry)).toBeFalsy();
    expect(retry.structuredContent).toMatchObject({
      reused: true,
      video_id: first.structuredContent?.["video_id"],
    });
    expect(startRequestsBy(sandbox, BOB)).toBe(before);
  }
}, 90_000);

it("one caller's day holds its limit across a Redis restarted empty, on both replicas", async () => {
  const [a, b] = [await clientOf(servers[0]!, ALICE), await clientOf(servers[1]!, ALICE)];
  // 25 credits each: the day's 50 are spent, one start on each replica.
  expect((await call(a, video("the first of the day"))).isError).toBeFalsy();
  expect((await call(b, video("the second of the day"))).isError).toBeFalsy();
  expect(startRequestsBy(sandbox, ALICE)).toBe(2);
  await redis.crash();
  const after = await Promise.all(
    Array.from({ length: 6 }, (_, index) =>
      callOnceReconnected(index % 2 === 0 ? a : b, video(`after the crash ${index}`)),
    ),
  );
  for (const result of after) {
    expect(result.isError, textOf(result)).toBe(true);
    expect(textOf(result)).toMatch(/^budget_exceeded: /);
  }
  expect(startRequestsBy(sandbox, ALICE)).toBe(2);
  const credits = await a.callTool({ name: "get_credits", arguments: {} });
  expect(credits.structuredContent).toMatchObject({ allowance: { used_today: DAILY, remaining_today: 0 } });
  // Each replica says once that it wrote its entries again.
  for (const server of servers) expect(server.stderr()).toMatch(/came back without the shared state/);
}, 90_000);

it("a Redis that paused its writes costs the starts of that moment, which say that nothing was sent", async () => {
  const client = await clientOf(servers[0]!, BOB);
  const admin = new Redis(redis.url, { lazyConnect: true });
  await admin.connect();
  try {
    const request = video("a start during a write pause", 2);
    const before = startRequestsBy(sandbox, BOB);
    await admin.call("CLIENT", "PAUSE", "5500", "WRITE");
    const during = await call(client, request);
    expect(during.isError).toBe(true);
    expect(textOf(during)).toMatch(/^internal_error: /);
    expect(textOf(during)).toMatch(/nothing reached the service and nothing was charged/);
    expect(textOf(during)).not.toMatch(/charge is possible/i);
    expect(startRequestsBy(sandbox, BOB)).toBe(before);
    // Once writes resume (the paused commands run first), the same request starts promptly: what they left
    // behind is this replica's own, never "another replica's start" or "a charge is possible". The replica
    // sees writes resume at its next probe, and says so on /readyz.
    await admin.call("CLIENT", "UNPAUSE");
    await until(
      async () => (await fetch(new URL("/readyz", servers[0]!.url))).status === 200,
      "the replica to accept writes again",
    );
    const after = await call(client, request);
    expect(after.isError, textOf(after)).toBeFalsy();
    expect(startRequestsBy(sandbox, BOB)).toBe(before + 1);
  } finally {
    await admin.quit();
  }
}, 60_000);
