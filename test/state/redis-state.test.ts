/**
 * The Redis implementation of the shared state, against a real redis-server: two hubs stand for two
 * replicas. One token bucket for both (Lua), one poll lease and its wake-ups, one claim per start; keys carry
 * a hash of the service key, never the key, and all expire; with Redis gone every part falls back on local
 * state instead of failing, and the hub reports ready again once Redis is back.
 */
import { createServer, connect, type AddressInfo, type Socket } from "node:net";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { AbortedError } from "../../src/api/errors.js";
import type { VideoStatus } from "../../src/api/types.js";
import { Logger } from "../../src/logger.js";
import { localState } from "../../src/state/local/index.js";
import { connectRedis } from "../../src/state/redis/index.js";
import { SharedStateUnavailableError, type SharedState, type StateHub } from "../../src/state/records.js";
import { freePort, startRedis, type RedisProcess } from "../helpers/redis.js";

const API_KEY = "sk-live-shared-state-0123456789";
const TARGET = { baseUrl: "http://127.0.0.1:9/api/v1", apiKey: API_KEY };
const PREFIX = "gm-test:";

let redis: RedisProcess;
let inspect: Redis;
const hubs: StateHub[] = [];
const logs: string[] = [];

beforeAll(async () => {
  redis = await startRedis();
  inspect = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await inspect.connect();
});
afterEach(async () => {
  await Promise.all(hubs.splice(0).map((hub) => hub.close()));
  await inspect.flushall().catch(() => undefined);
});
afterAll(async () => {
  inspect?.disconnect();
  await redis?.stop();
});

async function replica(whenDown: "refuse" | "alone" = "refuse"): Promise<SharedState & { hub: StateHub }> {
  const hub = await connectRedis(
    { url: redis.url, prefix: PREFIX, whenDown },
    new Logger("debug", (line) => logs.push(line)),
  );
  hubs.push(hub);
  return { hub, ...hub.forKey(TARGET, await localState(undefined, new Logger("error", () => {}))) };
}

const windowHeaders = (remaining: number) => ({
  "x-ratelimit-limit": "10",
  "x-ratelimit-remaining": String(remaining),
  "x-ratelimit-reset": String(Math.ceil(Date.now() / 1000) + 60),
});

async function budgetField(field: string): Promise<string | null> {
  const [key] = await inspect.keys(`${PREFIX}*:budget`);
  return key === undefined ? null : inspect.hget(key, field);
}

const video = (status: string): VideoStatus => ({
  video_id: "vid-1",
  status,
  video_url: undefined,
  error: undefined,
  raw: { status },
});

describe("the shared rate budget", () => {
  it("is one bucket for all replicas, seeded from the service's headers", async () => {
    const [a, b] = await Promise.all([replica(), replica()]);
    await a.budget.acquire("foreground");
    a.budget.observe(200, windowHeaders(9));
    await vi.waitFor(async () => expect(await budgetField("seeded")).toBe("1"));

    // Nine tokens left, taken from either replica: all granted, and the bucket is empty for both.
    await Promise.all(
      Array.from({ length: 9 }, (_, i) => (i % 2 === 0 ? a : b).budget.acquire("foreground")),
    );
    expect(await budgetField("remaining")).toBe("0");

    const stop = new AbortController();
    let granted = false;
    const tenth = b.budget.acquire("foreground", stop.signal).then(() => (granted = true));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(granted).toBe(false);
    stop.abort();
    await expect(tenth).rejects.toBeInstanceOf(AbortedError);
  });

  it("keeps the reserve for foreground calls: background polls stop above it", async () => {
    const a = await replica();
    await a.budget.acquire("foreground");
    // Two left, both within the reserve (20 % of 10): only foreground calls may take them.
    a.budget.observe(200, windowHeaders(2));
    await vi.waitFor(async () => expect(await budgetField("seeded")).toBe("1"));
    const stop = new AbortController();
    let granted = false;
    const poll = a.budget.acquire("background", stop.signal).then(() => (granted = true));
    await a.budget.acquire("foreground");
    expect(granted).toBe(false);
    stop.abort();
    await expect(poll).rejects.toBeInstanceOf(AbortedError);
  });

  it("names its keys by a hash of the service key, never the key, and lets every one expire", async () => {
    const a = await replica();
    await a.budget.acquire("foreground");
    a.budget.observe(200, windowHeaders(5));
    await a.polls.publish("vid-1", video("processing"));
    await a.claims.claim("fingerprint-1", 60_000);
    await vi.waitFor(async () => expect(await budgetField("seeded")).toBe("1"));
    const keys = await inspect.keys("*");
    expect(keys.length).toBeGreaterThanOrEqual(3);
    for (const key of keys) {
      // A replica's own liveness probe and the store's epoch carry no key at all; everything else is under
      // the key's hash.
      expect(key).toMatch(/^gm-test:([0-9a-f]{16}:|probe:[^:]+:\d+:[0-9a-f]{8}$|epoch$)/);
      expect(key).not.toContain(API_KEY);
      expect(await inspect.pttl(key)).toBeGreaterThan(0);
      const type = await inspect.type(key);
      const value = type === "string" ? await inspect.get(key) : JSON.stringify(await inspect.hgetall(key));
      expect(value ?? "").not.toContain(API_KEY);
    }
  });
});

describe("poll sharing and start claims", () => {
  it("gives the poll of a task to one replica and wakes the others when it publishes", async () => {
    const [a, b] = await Promise.all([replica(), replica()]);
    expect(await a.polls.lead("vid-1", 5000)).toBe(true);
    expect(await b.polls.lead("vid-1", 5000)).toBe(false);
    expect(await a.polls.lead("vid-1", 5000)).toBe(true);

    const woken = b.polls.nextChange("vid-1", 60_000, new AbortController().signal);
    await a.polls.publish("vid-1", video("completed"));
    await woken;
    expect((await b.polls.latest("vid-1"))?.video.status).toBe("completed");

    await a.polls.release("vid-1");
    expect(await b.polls.lead("vid-1", 5000)).toBe(true);
  });

  it("does not wait for a change once the follower's loop has stopped", async () => {
    const b = await replica();
    const started = Date.now();
    // The loop's signal aborted before the call (its last waiter left): nothing is left to wait for.
    await b.polls.nextChange("vid-2", 60_000, AbortSignal.abort());
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("lets one replica claim a start; the claim frees only by its owner", async () => {
    const [a, b] = await Promise.all([replica(), replica()]);
    expect(await a.claims.claim("fp", 60_000)).toBe(true);
    expect(await b.claims.claim("fp", 60_000)).toBe(false);
    await b.claims.unclaim("fp");
    expect(await b.claims.claim("fp", 60_000)).toBe(false);
    await a.claims.unclaim("fp");
    expect(await b.claims.claim("fp", 60_000)).toBe(true);
  });

  it("mirrors the open intent and the started task for the other replicas", async () => {
    const [a, b] = await Promise.all([replica(), replica()]);
    const intent = {
      kind: "video" as const,
      phase: "intent" as const,
      key: "idem-1",
      id: undefined,
      fingerprint: "fp",
      started_at: Date.now(),
      request: { prompt: "a fox" },
    };
    await a.claims.mirror(intent, 60_000);
    expect((await b.claims.read("fp"))?.intent?.key).toBe("idem-1");
    await a.claims.mirror({ ...intent, phase: "started", id: "vid-9" }, 60_000);
    const seen = await b.claims.read("fp");
    expect(seen?.started?.id).toBe("vid-9");
    expect(seen?.intent).toBeUndefined();
  });
});

describe("without Redis", () => {
  it("does not wait on a Redis that stops answering: each command gives up after its timeout; a claim is refused", async () => {
    const a = await replica();
    const alone = await replica("alone");
    // Redis holds every client's commands (as a stalled server would) for longer than the command timeout.
    const pause = new Redis(redis.url, { lazyConnect: true });
    await pause.connect();
    try {
      // Longer than the four timeouts below take (the finally unpauses it at once): ready stays false till then.
      await pause.call("CLIENT", "PAUSE", "6000", "ALL");
      await a.budget.acquire("foreground");
      expect(await a.polls.lead("vid-slow", 5000)).toBe(true);
      // No agreement, no start: a claim that could not be written is refused, unless the operator chose
      // to let each replica decide alone.
      await expect(a.claims.claim("fp-slow", 60_000)).rejects.toBeInstanceOf(SharedStateUnavailableError);
      expect(await alone.claims.claim("fp-slow", 60_000)).toBe(true);
      expect(a.hub.ready()).toBe(false);
    } finally {
      await pause.call("CLIENT", "UNPAUSE").catch(() => undefined);
      pause.disconnect();
    }
    // A write that succeeds again ends the outage: ready, and one line for each end of it.
    await vi.waitFor(() => expect(a.hub.ready()).toBe(true), { timeout: 5000 });
    expect(logs.filter((line) => /did not answer within 1000 ms/.test(line)).length).toBeGreaterThanOrEqual(
      1,
    );
    expect(logs.some((line) => /accepts writes again/.test(line))).toBe(true);
  });

  it("reports not ready within seconds when writes stop, even with no traffic, and ready once they resume", async () => {
    const a = await replica();
    expect(a.hub.ready()).toBe(true);
    const pause = new Redis(redis.url, { lazyConnect: true });
    await pause.connect();
    try {
      await pause.call("CLIENT", "PAUSE", "6000", "WRITE");
      await vi.waitFor(() => expect(a.hub.ready()).toBe(false), { timeout: 5000 });
    } finally {
      await pause.call("CLIENT", "UNPAUSE").catch(() => undefined);
      pause.disconnect();
    }
    await vi.waitFor(() => expect(a.hub.ready()).toBe(true), { timeout: 5000 });
  });

  it("starts without Redis, not ready, and becomes ready once Redis comes up", async () => {
    const port = await freePort();
    const hub = await connectRedis(
      { url: `redis://127.0.0.1:${port}`, prefix: PREFIX, whenDown: "refuse" },
      new Logger("debug", (line) => logs.push(line)),
    );
    hubs.push(hub);
    expect(hub.ready()).toBe(false);
    expect(logs.join("\n")).toContain(`Redis at redis://127.0.0.1:${port} did not answer at start`);
    const late = await startRedis(port);
    try {
      await vi.waitFor(() => expect(hub.ready()).toBe(true), { timeout: 10_000 });
      const state = hub.forKey(TARGET, await localState(undefined, new Logger("error", () => {})));
      expect(await state.claims.claim("fp-late", 60_000)).toBe(true);
      expect(await state.claims.claim("fp-late", 60_000)).toBe(false);
    } finally {
      await late.stop();
    }
  });

  it("names a connection reset while it looked ready as Redis being unreachable", async () => {
    // A loopback proxy in front of Redis that resets every connection at once: the client hears ECONNRESET
    // while its status still says ready, and no later connect succeeds.
    const sockets: Socket[] = [];
    const proxy = createServer((client) => {
      const upstream = connect(Number(new URL(redis.url).port), "127.0.0.1");
      sockets.push(client, upstream);
      client.pipe(upstream).pipe(client);
      client.on("error", () => upstream.destroy());
      upstream.on("error", () => client.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const lines: string[] = [];
    const hub = await connectRedis(
      {
        url: `redis://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
        prefix: PREFIX,
        whenDown: "refuse",
      },
      new Logger("debug", (line) => lines.push(line)),
    );
    hubs.push(hub);
    expect(hub.ready()).toBe(true);
    proxy.close();
    for (const socket of sockets) socket.resetAndDestroy();
    await vi.waitFor(() => expect(hub.ready()).toBe(false));
    const outage = lines.filter((line) => /warning: Redis at /.test(line));
    expect(outage).toHaveLength(1);
    expect(outage[0]).toMatch(/Redis at redis:\/\/127\.0\.0\.1:\d+ is unreachable: /);
  });

  it("goes on with local state, reports not ready, and rejoins when Redis is back", async () => {
    const a = await replica();
    expect(a.hub.ready()).toBe(true);
    await redis.stop();
    try {
      await vi.waitFor(() => expect(a.hub.ready()).toBe(false));
      await a.budget.acquire("foreground");
      a.budget.observe(200, windowHeaders(5));
      expect(await a.polls.lead("vid-1", 5000)).toBe(true);
      await expect(a.claims.claim("fp", 60_000)).rejects.toBeInstanceOf(SharedStateUnavailableError);
      expect(await a.polls.latest("vid-1")).toBeUndefined();
      await vi.waitFor(() =>
        expect(logs.join("\n")).toMatch(/Redis at redis:\/\/127\.0\.0\.1:\d+ is unreachable/),
      );
    } finally {
      await redis.restart();
      await inspect.connect().catch(() => undefined);
    }
    await vi.waitFor(() => expect(a.hub.ready()).toBe(true), { timeout: 10_000 });
    expect(await a.claims.claim("fp-2", 60_000)).toBe(true);
    expect(await a.claims.claim("fp-2", 60_000)).toBe(false);
  });
});
