/**
 * The upload link store, one contract for both implementations: in this process (local) and on a real
 * redis-server. Per caller a cap on open links and on requests per minute; of two racing swaps one wins; a
 * used link frees its caller's slot; parked bytes are handed out once; an expired link is gone; a record
 * another writer planted in Redis is not read as a link.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalUploadLinks } from "../../src/state/local/upload-links.js";
import { redisUploadLinks } from "../../src/state/redis/upload-links.js";
import type { UploadLink, UploadLinkStore } from "../../src/state/upload-links.js";
import { sha256Hex } from "../helpers/http-calls.js";
import { startRedis, type RedisProcess } from "../helpers/redis.js";

let redis: RedisProcess;
let commands: Redis;
let next = 0;

beforeAll(async () => {
  redis = await startRedis();
  commands = new Redis(redis.url, { lazyConnect: true });
  await commands.connect();
});
afterAll(async () => {
  commands?.disconnect();
  await redis?.stop();
});

const stores: Array<[string, () => UploadLinkStore]> = [
  ["local", () => new LocalUploadLinks()],
  ["redis", () => redisUploadLinks(commands, `test-${next++}:`)],
];

function linkOf(caller: string, ttlMs = 60_000): UploadLink {
  const id = sha256Hex(`link-${next++}`).slice(0, 22);
  return {
    id,
    caller: sha256Hex(caller),
    key: sha256Hex("key"),
    expiresAt: Date.now() + ttlMs,
    state: "open",
  };
}

describe.each(stores)("upload link store (%s)", (_name, make) => {
  it("caps open links per caller, then requests per minute, each caller on its own", async () => {
    const store = make();
    const limits = { maxOpen: 2, perMinute: 4 };
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await store.open(linkOf("alice"), limits));
    expect(answers).toEqual(["opened", "opened", "too_many", "too_many", "too_fast", "too_fast"]);
    expect(await store.open(linkOf("bob"), limits)).toBe("opened");
  });

  it("one of two racing swaps wins; a used link frees its caller's slot", async () => {
    const store = make();
    const limits = { maxOpen: 1, perMinute: 10 };
    const link = linkOf("carol");
    expect(await store.open(link, limits)).toBe("opened");
    expect(await store.open(linkOf("carol"), limits)).toBe("too_many");
    const receiving = { ...link, state: "receiving" as const };
    const raced = await Promise.all([store.swap("open", receiving), store.swap("open", receiving)]);
    expect(raced.filter(Boolean)).toHaveLength(1);
    expect(await store.swap("receiving", { ...link, state: "done", url: "https://x.test/a.png" })).toBe(true);
    expect(await store.read(link.id)).toEqual({ ...link, state: "done", url: "https://x.test/a.png" });
    expect(await store.open(linkOf("carol"), limits)).toBe("opened");
  });

  it("hands parked bytes out once, and forgets an expired link", async () => {
    const store = make();
    const link = linkOf("dave", 300);
    await store.open(link, { maxOpen: 5, perMinute: 5 });
    await store.park(link.id, Buffer.from("picture"), link.expiresAt);
    expect((await store.take(link.id))?.toString()).toBe("picture");
    expect(await store.take(link.id)).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await store.read(link.id)).toBeUndefined();
  });
});

it("redis: a planted record is not read as a link", async () => {
  const store = redisUploadLinks(commands, "planted:");
  const id = "A".repeat(22);
  await commands.set(
    `planted:upload:${id}`,
    JSON.stringify({
      id,
      caller: "x",
      key: "y",
      expiresAt: Date.now() + 60_000,
      state: "done",
      url: "javascript:alert(1)",
    }),
  );
  expect(await store.read(id)).toBeUndefined();
  await commands.set(`planted:upload:${id}`, "not json");
  expect(await store.read(id)).toBeUndefined();
  expect(await store.swap("open", { ...linkOf("eve"), id })).toBe(false);
});
