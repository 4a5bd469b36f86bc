/**
 * A Redis emptied between a replica's look at the epoch and its write (a FLUSHALL, a failover to an empty node
 * behind the same address: the connection stays up, so nothing tells the replica). The write the replicas
 * must agree on (a day's spend, a start's claim, a used confirmation) arrives at the emptied store; a real
 * loopback proxy holds it there while the test flushes a real redis-server. The write must find the store
 * not the epoch it was sent for, and run again after the rebuild, instead of acting on the empty store.
 */
import { createServer, connect, type AddressInfo, type Server, type Socket } from "node:net";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, expect, it, vi } from "vitest";
import { Logger } from "../../src/logger.js";
import { localState } from "../../src/state/local/index.js";
import { connectRedis } from "../../src/state/redis/index.js";
import type { SharedState, StateHub } from "../../src/state/records.js";
import { startRedis, type RedisProcess } from "../helpers/redis.js";

const TARGET = { baseUrl: "http://127.0.0.1:9/api/v1", apiKey: "sk-live-flushed-0123456789" };
const PREFIX = "gm-flushed:";
const DAY = "2026-11-28";

/** A proxy to Redis that, once armed, holds what a client sends from the first chunk holding `marker` on. */
interface HoldingRedisProxy {
  url: string;
  hold(marker: string): Promise<void>;
  release(): void;
  close(): void;
}

async function holdingProxy(target: number): Promise<HoldingRedisProxy> {
  let marker: string | undefined;
  let seen: () => void = () => undefined;
  /** The writes held, in order, while `held` is set; the connection they were sent on. */
  let held: { writes: (() => void)[]; on: Socket } | undefined;
  const sockets: Socket[] = [];
  const server: Server = createServer((client) => {
    const upstream = connect(target, "127.0.0.1");
    sockets.push(client, upstream);
    client.on("data", (chunk: Buffer) => {
      if (marker !== undefined && chunk.includes(marker)) {
        marker = undefined;
        held = { writes: [], on: client };
        seen();
      }
      if (held?.on === client) held.writes.push(() => upstream.write(chunk));
      else upstream.write(chunk);
    });
    upstream.pipe(client);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
    client.on("close", () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `redis://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hold: (text) => {
      marker = text;
      return new Promise((resolve) => (seen = resolve));
    },
    release: () => {
      for (const write of held?.writes ?? []) write();
      held = undefined;
    },
    close: () => {
      server.close();
      for (const socket of sockets) socket.destroy();
    },
  };
}

let redis: RedisProcess;
let inspect: Redis;
let proxy: HoldingRedisProxy;
const hubs: StateHub[] = [];

beforeAll(async () => {
  redis = await startRedis();
  inspect = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await inspect.connect();
});
afterEach(async () => {
  proxy?.release();
  await Promise.all(hubs.splice(0).map((hub) => hub.close()));
  proxy?.close();
  await inspect.flushall();
});
afterAll(async () => {
  inspect?.disconnect();
  await redis?.stop();
});

/** A replica whose commands pass `proxy`, or reach Redis directly. */
async function replica(through?: HoldingRedisProxy): Promise<SharedState> {
  const hub = await connectRedis(
    { url: through?.url ?? redis.url, prefix: PREFIX, whenDown: "refuse" },
    new Logger("error", () => {}),
  );
  hubs.push(hub);
  return hub.forKey(TARGET, await localState(undefined, new Logger("error", () => {})));
}

/** Sends `write` through the proxy, holds it, empties Redis, then lets it arrive; resolves with its answer. */
async function flushedUnder<T>(marker: string, write: () => Promise<T>): Promise<T> {
  const seen = proxy.hold(marker);
  const answer = write();
  await seen;
  await inspect.flushall();
  proxy.release();
  return answer;
}

it("a day's spend: the reservation runs again on the rebuilt day, and the limit holds", async () => {
  proxy = await holdingProxy(redis.port);
  const a = await replica(proxy);
  expect(await a.spend.reserve("alice", DAY, 50, 60)).toEqual({ reserved: true, used: 50 });
  // On the emptied store the day reads 0, and 50 more would fit: 100 credits under a limit of 60.
  const second = await flushedUnder(":spend:", () => a.spend.reserve("alice", DAY, 50, 60));
  expect(second).toEqual({ reserved: false, used: 50 });
  expect(await a.spend.used("alice", DAY)).toBe(50);
});

it("a start's claim: another replica's claim is written back before this one is taken", async () => {
  proxy = await holdingProxy(redis.port);
  const [a, b] = await Promise.all([replica(), replica(proxy)]);
  expect(await a.claims.claim("fp-flushed", 60_000)).toBe(true);
  // Each replica reads the other's registration at its next heartbeat: B knows A was live at the loss.
  await vi.waitFor(async () => expect(Object.keys(await inspect.hgetall(`${PREFIX}epoch`))).toHaveLength(3));
  await new Promise((resolve) => setTimeout(resolve, 1100));
  // On the emptied store the claim is free, and B would start the same request a second time.
  expect(await flushedUnder(":claim:", () => b.claims.claim("fp-flushed", 60_000))).toBe(false);
});

it("a used confirmation: the state answered before is not taken a second time", async () => {
  proxy = await holdingProxy(redis.port);
  const a = await replica(proxy);
  expect(await a.confirmations.use("digest-flushed", 60_000)).toBe(true);
  expect(await flushedUnder(":confirmed:", () => a.confirmations.use("digest-flushed", 60_000))).toBe(false);
});
