/**
 * Many `--http` replicas, one Redis, one sandbox: real processes throughout (the built bin, redis-server,
 * the sandbox on loopback). The replicas share the key's rate budget, each task's poll and the duplicate
 * guard; a replica killed with -9 loses nothing, and a Redis restart in the middle of waits costs no id.
 * Time is scaled down (a rate window of a few seconds instead of a minute). The cases run side by side, each
 * with its own sandbox (and the Redis restart with its own Redis). Needs `npm run build`.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { tempRoot } from "../helpers/http-calls.js";
import { connectHttp, startHttpBin, type HttpServerProcess } from "../helpers/http.js";
import { freePort, startRedis, type RedisProcess } from "../helpers/redis.js";

const INTERVAL_MS = 1000;

let redis: RedisProcess;
let root: Awaited<ReturnType<typeof tempRoot>>;
const stops: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  [redis, root] = await Promise.all([startRedis(), tempRoot("redis-replicas-")]);
});
afterAll(async () => {
  for (const stop of stops.splice(0).reverse()) await stop().catch(() => undefined);
  await redis?.stop();
  await root?.remove();
});

let replicaCount = 0;

/** Starts `n` replicas against the sandbox, each with its own state folder, all on the test's Redis. */
async function replicas(
  sandbox: SandboxHandle,
  n: number,
  env: Record<string, string> = {},
): Promise<HttpServerProcess[]> {
  const started = await Promise.all(
    Array.from({ length: n }, () =>
      startHttpBin([], {
        HOME: root.dir,
        GENERATION_BASE_URL: sandbox.baseUrl,
        GENERATION_REDIS_URL: redis.url,
        GENERATION_STATE_DIR: `${root.dir}/replica-${replicaCount++}`,
        GENERATION_POLL_INTERVAL_MS: String(INTERVAL_MS),
        GENERATION_HTTP_MAX_CONCURRENT: "200",
        ...env,
      }),
    ),
  );
  for (const replica of started) stops.push(() => replica.stop());
  return started;
}

async function clientsOf(servers: HttpServerProcess[], key: string): Promise<Client[]> {
  const clients = await Promise.all(servers.map((server) => connectHttp(server.url, key)));
  for (const client of clients) stops.push(() => client.close());
  return clients;
}

async function sandboxFor(options: Parameters<typeof startSandbox>[0]): Promise<SandboxHandle> {
  const sandbox = await startSandbox(options);
  stops.push(() => sandbox.close());
  return sandbox;
}

async function call(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const result = (await client.callTool({ name, arguments: args }, undefined, {
    timeout: 170_000,
  })) as CallToolResult;
  const text = result.content.map((part) => (part.type === "text" ? part.text : "")).join("\n");
  if (result.isError) throw new Error(`${name} failed: ${text}`);
  return result.structuredContent ?? {};
}

const count = (sandbox: SandboxHandle, route: string) =>
  sandbox.requests.filter((request) => request.route === route).length;

describe.concurrent("readiness", () => {
  it("reports not ready with a clear log line when Redis is unreachable at start, and still serves calls", async () => {
    const sandbox = await sandboxFor({});
    const [down] = await replicas(sandbox, 1, {
      GENERATION_REDIS_URL: `redis://:hunter2-secret@127.0.0.1:${await freePort()}`,
    });
    const [up] = await replicas(sandbox, 1);
    const readyz = async (server: HttpServerProcess) => (await fetch(new URL("/readyz", server.url))).status;
    expect(await readyz(down!)).toBe(503);
    expect(await readyz(up!)).toBe(200);
    expect(down!.stderr()).toMatch(/Redis at redis:\/\/127\.0\.0\.1:\d+ did not answer at start/);
    expect(down!.stderr()).not.toContain("hunter2-secret");
    const [client] = await clientsOf([down!], sandbox.keys.paid);
    const credits = await call(client!, "get_credits", {});
    expect(credits["credits"]).toEqual(expect.any(Number));
  });
});

describe.concurrent("the duplicate guard across replicas", () => {
  it("starts one task for the same generate_video sent to two replicas at once; both get its video_id", async () => {
    const sandbox = await sandboxFor({ timings: { queuedMs: 60_000, processingMs: 60_000 } });
    const clients = await clientsOf(await replicas(sandbox, 2), sandbox.keys.paid);
    const request = { prompt: "two replicas, one fox", duration: 2, wait: false };
    const answers = await Promise.all(clients.map((client) => call(client, "generate_video", request)));
    expect(answers[0]?.["video_id"]).toEqual(expect.any(String));
    expect(answers[1]?.["video_id"]).toBe(answers[0]?.["video_id"]);
    expect(answers.map((answer) => answer["reused"] === true).sort()).toEqual([false, true]);
    expect(count(sandbox, "generate")).toBe(1);
  });

  it("starts one image for the same generate_image sent to two replicas at once; both get its URLs", async () => {
    const sandbox = await sandboxFor({});
    const clients = await clientsOf(await replicas(sandbox, 2), sandbox.keys.paid);
    const request = { prompt: "two replicas, one lantern" };
    const answers = await Promise.all(clients.map((client) => call(client, "generate_image", request)));
    expect(answers[0]?.["image_urls"]).toEqual(expect.arrayContaining([expect.any(String)]));
    expect(answers[1]?.["image_urls"]).toEqual(answers[0]?.["image_urls"]);
    expect(answers.map((answer) => answer["reused"] === true).sort()).toEqual([false, true]);
    expect(count(sandbox, "generate-image")).toBe(1);
  });

  it("after kill -9 of the replica that started a task mid-wait, another replica finds and delivers it", async () => {
    const sandbox = await sandboxFor({ timings: { queuedMs: 500, processingMs: 4000 } });
    const [first, second] = await replicas(sandbox, 2);
    const [starter, survivor] = await clientsOf([first!, second!], sandbox.keys.paid);
    const request = { prompt: "a heron at dawn", duration: 2 };
    const lost = call(starter!, "generate_video", { ...request, wait: true, timeout_seconds: 60 });
    lost.catch(() => undefined);
    // Mid-wait: started and polled at least once.
    await waitUntil(() => count(sandbox, "generate") === 1 && count(sandbox, "video-status") >= 1);
    first!.child.kill("SIGKILL");
    await first!.exited;

    const again = await call(survivor!, "generate_video", { ...request, wait: false });
    expect(again["reused"]).toBe(true);
    const done = await call(survivor!, "get_status", {
      video_id: again["video_id"],
      wait: true,
      timeout_seconds: 60,
    });
    expect(done["status"]).toBe("completed");
    expect(count(sandbox, "generate")).toBe(1);
  });
});

describe.concurrent("waits shared by three replicas", () => {
  it("completes 60 concurrent generate_video wait:true under a 60-per-window limit with no 429 and one poll per task per interval", async () => {
    const windowMs = 6000;
    const sandbox = await sandboxFor({
      rateLimit: { limit: 60, windowMs },
      timings: { queuedMs: 1000, processingMs: 4000 },
    });
    const clients = await clientsOf(await replicas(sandbox, 3), sandbox.keys.paid);
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        call(clients[i % 3]!, "generate_video", {
          prompt: `wave ${i}`,
          duration: 2,
          wait: true,
          timeout_seconds: 150,
        }),
      ),
    );
    expect(answers.filter((answer) => answer["status"] === "completed")).toHaveLength(60);
    expect(new Set(answers.map((answer) => answer["video_id"])).size).toBe(60);
    expect(sandbox.requests.filter((request) => request.status === 429)).toEqual([]);
    expect(count(sandbox, "generate")).toBe(60);
    // One status request per task per interval, whichever replicas its waiters were on.
    const polls = new Map<string, number[]>();
    for (const request of sandbox.requests.filter((entry) => entry.route === "video-status")) {
      polls.set(request.path, [...(polls.get(request.path) ?? []), request.at]);
    }
    const gaps = [...polls.values()].flatMap((times) => times.slice(1).map((at, i) => at - (times[i] ?? 0)));
    expect(gaps.filter((gap) => gap < INTERVAL_MS * 0.9)).toEqual([]);
  }, 180_000);
});

describe.concurrent("Redis lost and back", () => {
  it("delivers every id of 20 waits while Redis is stopped and restarted, with one charge each", async () => {
    const sandbox = await sandboxFor({
      rateLimit: { limit: 60, windowMs: 6000 },
      timings: { queuedMs: 1000, processingMs: 6000 },
    });
    // A Redis of its own: the cases beside this one keep theirs through the outage.
    const own = await startRedis();
    stops.push(() => own.stop());
    const servers = await replicas(sandbox, 2, { GENERATION_REDIS_URL: own.url });
    const clients = await clientsOf(servers, sandbox.keys.paid);
    const waits = Array.from({ length: 20 }, (_, i) =>
      call(clients[i % 2]!, "generate_video", {
        prompt: `through the outage ${i}`,
        duration: 2,
        wait: true,
        timeout_seconds: 90,
      }),
    );
    await waitUntil(() => count(sandbox, "generate") === 20);
    await own.stop();
    await new Promise((resolve) => setTimeout(resolve, 2500));
    await own.restart();
    const answers = await Promise.all(waits);
    expect(answers.filter((answer) => answer["status"] === "completed")).toHaveLength(20);
    expect(new Set(answers.map((answer) => answer["video_id"])).size).toBe(20);
    expect(count(sandbox, "generate")).toBe(20);
    // Both rejoined: ready again, so a load balancer sends them calls.
    for (const server of servers) expect((await fetch(new URL("/readyz", server.url))).status).toBe(200);
  }, 150_000);
});

async function waitUntil(condition: () => boolean, limitMs = 30_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
