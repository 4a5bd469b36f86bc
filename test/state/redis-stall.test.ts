/**
 * Redis lost while a replica stalls: the replica that started a caller's request is paused (SIGSTOP: a long
 * GC pause, a frozen VM) while Redis, without persistence, is killed with -9 and started again empty; then the
 * replica is resumed (SIGCONT). The other replica must not start anything that only the stalled one can
 * write back: while it is paused, the same request is refused with when to retry (nothing sent); once it
 * resumed, the same request is the same task (not a second charge) and the caller's day holds its limit.
 * The same when Redis is lost twice in a row: a replica that learned of the first loss, but not yet from
 * the stalled one, still waits for it after the second. And a replica that stopped before the loss is not
 * waited for, even one still named from an earlier loss. Each case has a Redis and two replicas of its own.
 * Real processes throughout: the built bin (two `--http` replicas), redis-server, the sandbox. Needs
 * `npm run build`.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { connectHttp, startHttpBin, type HttpServerProcess } from "../helpers/http.js";
import { sleep, tenant, until } from "../helpers/red-team.js";
import { startRedis, type RedisProcess } from "../helpers/redis.js";
import { startSharedState, type SharedState } from "../helpers/shared-state.js";
import { startRequestsBy, textOf } from "../spend/spend-helpers.js";

const DAILY = 60;
const KEY = "sk-stall-carol";
const OTHER_KEY = "sk-stall-dave";
const TWICE_KEY = "sk-stall-erin";
/** How long replica A stays paused, Redis lost meanwhile. */
const STALL_MS = 5000;

let shared: SharedState;
let sandbox: SandboxHandle;
const servers: HttpServerProcess[] = [];
const redises: RedisProcess[] = [];
const clients: Client[] = [];

beforeAll(async () => {
  shared = await startSharedState("generation-mcp-redis-stall-", {
    timings: { queuedMs: 60_000, processingMs: 60_000 },
    rateLimit: { limit: 10_000, windowMs: 60_000 },
    accounts: [KEY, OTHER_KEY, TWICE_KEY].map((key) => tenant(key, key)),
  });
  ({ sandbox } = shared);
});

afterAll(async () => {
  for (const server of servers) server.child.kill("SIGCONT");
  await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
  await Promise.all(servers.map((server) => server.stop()));
  await Promise.all(redises.map((redis) => redis.stop()));
  await shared?.close();
});

let replicaCount = 0;

/**
 * Two replicas on a Redis of their own: each case loses its Redis and pauses or stops a replica, beside the
 * others (each with a caller of its own on the one sandbox).
 */
async function pair(): Promise<{ redis: RedisProcess; a: HttpServerProcess; b: HttpServerProcess }> {
  const redis = await startRedis();
  redises.push(redis);
  const [a, b] = await Promise.all(
    [0, 1].map(() =>
      startHttpBin([], {
        HOME: shared.root.dir,
        GENERATION_BASE_URL: sandbox.baseUrl,
        GENERATION_STATE_DIR: path.join(shared.root.dir, `replica-${replicaCount++}`),
        GENERATION_REDIS_URL: redis.url,
        GENERATION_DAILY_CREDITS: String(DAILY),
      }),
    ),
  );
  servers.push(a!, b!);
  return { redis, a: a!, b: b! };
}

/** 10 s on the lite model: 50 credits, so two of them pass the day's 60. */
const video = (prompt: string) => ({
  name: "generate_video",
  arguments: { prompt, duration: 10, wait: false },
});

async function call(client: Client, request: ReturnType<typeof video>): Promise<CallToolResult> {
  return (await client.callTool(request, undefined, { timeout: 60_000 })) as CallToolResult;
}

// Each case on a Redis and replicas of its own, side by side.
describe.concurrent("Redis lost while a replica stalls", () => {
  it("starts nothing on the other replica that only the stalled one could write back, and keeps the day's limit", async () => {
    const { redis, a, b } = await pair();
    const [onA, onB] = [await connectHttp(a.url, KEY), await connectHttp(b.url, KEY)];
    clients.push(onA, onB);
    const request = video("a heron at dawn, before the stall");
    const first = await call(onA, request);
    expect(first.isError, textOf(first)).toBeFalsy();
    expect(startRequestsBy(sandbox, KEY)).toBe(1);

    // Each replica has seen the other at a heartbeat (every second), as replicas that have been up a while
    // have; then Redis dies and comes back empty while A cannot answer.
    await sleep(1200);
    a.child.kill("SIGSTOP");
    const pausedAt = Date.now();
    await redis.crash();
    await sleep(1500);
    // B knows the store was lost and that A, live a moment ago, held entries: it starts nothing meanwhile.
    const during = await call(onB, request);
    expect(during.isError, JSON.stringify(during)).toBe(true);
    expect(textOf(during)).toMatch(/^internal_error: This server's shared state \(Redis\) came back empty/);
    expect(textOf(during)).toMatch(/nothing reached the service and nothing was charged/);
    expect(textOf(during)).toMatch(/Call the tool again in \d+ s/);
    expect(startRequestsBy(sandbox, KEY)).toBe(1);
    await sleep(Math.max(0, pausedAt + STALL_MS - Date.now()));
    a.child.kill("SIGCONT");

    // At once: A rebuilds before B decides; the same request is A's task, and a new one passes the day's 60.
    const retry = await call(onB, request);
    expect(retry.isError, textOf(retry)).toBeFalsy();
    expect(retry.structuredContent).toMatchObject({
      reused: true,
      video_id: first.structuredContent?.["video_id"],
    });
    for (const client of [onB, onA]) {
      const another = await call(
        client,
        video(`another heron after the stall, on ${client === onA ? "A" : "B"}`),
      );
      expect(another.isError).toBe(true);
      expect(textOf(another)).toMatch(/^budget_exceeded: /);
    }
    expect(startRequestsBy(sandbox, KEY)).toBe(1);
    expect(a.stderr()).toMatch(/came back without the shared state/);
  }, 60_000);

  it("still waits for the stalled replica when Redis is lost a second time before it wrote back", async () => {
    const { redis, a, b } = await pair();
    const [onA, onB] = [await connectHttp(a.url, TWICE_KEY), await connectHttp(b.url, TWICE_KEY)];
    clients.push(onA, onB);
    const request = video("a heron at dawn, before two losses");
    const first = await call(onA, request);
    expect(first.isError, textOf(first)).toBeFalsy();
    await sleep(1200);
    a.child.kill("SIGSTOP");
    const pausedAt = Date.now();
    await redis.crash();
    // B notices the first loss at a heartbeat and reads the epoch again, where A has not registered since.
    await sleep(1500);
    await redis.crash();
    await sleep(1500);
    const during = await call(onB, request);
    expect(during.isError, JSON.stringify(during)).toBe(true);
    expect(textOf(during)).toMatch(/^internal_error: This server's shared state \(Redis\) came back empty/);
    expect(startRequestsBy(sandbox, TWICE_KEY)).toBe(1);
    await sleep(Math.max(0, pausedAt + STALL_MS - Date.now()));
    a.child.kill("SIGCONT");

    const retry = await call(onB, request);
    expect(retry.isError, textOf(retry)).toBeFalsy();
    expect(retry.structuredContent).toMatchObject({
      reused: true,
      video_id: first.structuredContent?.["video_id"],
    });
    const another = await call(onB, video("another heron after two losses"));
    expect(textOf(another)).toMatch(/^budget_exceeded: /);
    expect(startRequestsBy(sandbox, TWICE_KEY)).toBe(1);
  }, 60_000);

  it("does not wait for a replica that stopped before the loss", async () => {
    const { redis, a, b } = await pair();
    const onB = await connectHttp(b.url, OTHER_KEY);
    clients.push(onB);
    // An earlier loss, which both wrote back: each is still named in the epoch as one awaited then.
    await sleep(1200);
    await redis.crash();
    await until(
      () => [a, b].every((replica) => /came back without the shared state/.test(replica.stderr())),
      "both replicas to write their entries back",
    );
    // A leaves (SIGTERM: it says so in the epoch), B sees that at a heartbeat, then Redis is lost.
    await a.stop();
    await sleep(1200);
    await redis.crash();
    // Repeated only while B's connection is being made again (then it refuses, sending nothing).
    const request = video("a heron once the other replica has gone");
    let started = await call(onB, request);
    for (let tries = 0; /is not accepting writes/.test(textOf(started)) && tries < 100; tries++) {
      await sleep(100);
      started = await call(onB, request);
    }
    expect(started.isError, textOf(started)).toBeFalsy();
    expect(startRequestsBy(sandbox, OTHER_KEY)).toBe(1);
  }, 30_000);
});
