/**
 * Red team, strangers at the door: against the built `--http` bin in passthrough mode with a real
 * redis-server:
 * - unknown bearers cost nothing: pings, lists, calls and refused task calls with made-up bearers leave no
 *   folder, no file and no record in Redis (only the rate counters of the requests that reached the service,
 *   which expire);
 * - bodies and connections are bounded before anyone is trusted: many slow senders of large bodies cannot
 *   hold the memory of all those bodies, and connections past the limit are refused (stalled headers and
 *   bodies: stalled.test.ts, which waits half a minute beside this file);
 * - a JSON-RPC batch counts as its calls, and revisions without batches refuse them;
 * - the small ones: a malformed `task`, a tiny ttl, a huge task id.
 */
import { randomBytes } from "node:crypto";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SandboxHandle } from "../../../src/sandbox/types.js";
import { startHttpBin, type HttpServerProcess } from "../../helpers/http.js";
import {
  errorOf,
  filesUnder,
  heapSnapshotEnv,
  liveHeapMiB,
  rawConnection,
  redisDump,
  report,
  resultOf,
  rpc,
  rssMiB,
  SCALE,
  serviceRequests,
  sleep,
  startsSent,
} from "../../helpers/red-team.js";
import type { RedisProcess } from "../../helpers/redis.js";
import { startSharedState, type SharedState } from "../../helpers/shared-state.js";

let shared: SharedState;
let sandbox: SandboxHandle;
let redis: RedisProcess;
let root: SharedState["root"];
let server: HttpServerProcess;
let stateDir: string;
/** Where the server writes the heap snapshots `liveHeapMiB` reads. */
let heapDir: string;

beforeAll(async () => {
  shared = await startSharedState("red-team-bearers-", { rateLimit: { limit: 100_000, windowMs: 60_000 } });
  ({ sandbox, redis, root } = shared);
  stateDir = path.join(root.dir, "state");
  heapDir = path.join(root.dir, "heap");
  await mkdir(heapDir);
  server = await startHttpBin([], {
    ...heapSnapshotEnv(heapDir),
    HOME: root.dir,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_STATE_DIR: stateDir,
    GENERATION_REDIS_URL: redis.url,
    GENERATION_HTTP_MAX_CONCURRENT: "16",
  });
});
afterAll(async () => {
  await server?.stop();
  await shared?.close();
});

const madeUp = () => `made-up-${randomBytes(8).toString("hex")}`;

describe("unknown bearers cost nothing", () => {
  it(
    "leaves no folder, file or Redis record for 200 made-up bearers and 2,000 refused task calls",
    async () => {
      const pid = server.child.pid ?? 0;
      const rssBefore = await rssMiB(pid);
      const creditsBefore = serviceRequests(sandbox, "credits");
      const bearers = 200 * SCALE;
      let unauthorized = 0;
      for (let i = 0; i < bearers; i += 20) {
        await Promise.all(
          Array.from({ length: 20 }, async () => {
            const bearer = madeUp();
            await rpc(server.url, bearer, "initialize", {
              protocolVersion: "2025-11-25",
              capabilities: { tasks: {} },
              clientInfo: { name: "stranger", version: "1" },
            });
            await rpc(server.url, bearer, "ping");
            await rpc(server.url, bearer, "tools/list");
            await rpc(server.url, bearer, "resources/list");
            const credits = await rpc(server.url, bearer, "tools/call", {
              name: "get_credits",
              arguments: {},
            });
            if (/unauthorized/.test(credits.text)) unauthorized += 1;
            expect(credits.text).toMatch(/unauthorized/);
          }),
        );
      }
      const bogus = madeUp();
      const taskCalls = 2000 * SCALE;
      let failedTasks = 0;
      for (let i = 0; i < taskCalls; i += 50) {
        await Promise.all(
          Array.from({ length: 50 }, async () => {
            const answer = await rpc(server.url, bogus, "tools/call", {
              name: "generate_video",
              arguments: { prompt: "" },
              task: {},
            });
            if ((resultOf(answer)?.["task"] as { status?: string } | undefined)?.status === "failed") {
              failedTasks += 1;
            }
            expect(resultOf(answer)?.["task"]).toMatchObject({ status: "failed" });
          }),
        );
      }
      const files = [...(await filesUnder(stateDir)).keys()];
      // What reached the service is counted against its key's rate budget (two counters that expire); nothing
      // else of a made-up bearer is written (the replica's own liveness probe and the store's epoch name no key).
      const keys = [...(await redisDump(redis.url)).keys()];
      const records = keys.filter((key) => !/:([0-9a-f]{16}:(budget|inflight)|probe:.+|epoch)$/.test(key));
      report("made-up bearers and refused task calls", {
        bearers,
        calls: bearers * 5 + taskCalls,
        refusedUnauthorized: unauthorized,
        refusedTasks: failedTasks,
        reachedService: serviceRequests(sandbox, "credits") - creditsBefore,
        startsSent: startsSent(sandbox),
        filesLeft: files.length,
        redisRecordsLeft: records.length,
        redisCounters: keys.length - records.length,
        rssBeforeMiB: rssBefore,
        rssAfterMiB: await rssMiB(pid),
      });
      expect(files).toEqual([]);
      expect(records).toEqual([]);
      expect(sandbox.requests.filter((request) => request.route === "generate")).toEqual([]);
    },
    120_000 * SCALE,
  );
});

describe("bodies and connections are bounded before anyone is trusted", () => {
  it("holds far less than 60 bodies of almost 4 MiB that never end, refusing some with 503", async () => {
    const pid = server.child.pid ?? 0;
    const before = await liveHeapMiB(pid, heapDir);
    const rssBefore = await rssMiB(pid);
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const bodies = 60 * SCALE;
    const senders = await Promise.all(
      Array.from({ length: bodies }, async () => {
        const connection = await rawConnection(server.port);
        connection.socket.write(
          `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nAuthorization: Bearer ${madeUp()}\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${4 * 1024 * 1024}\r\n\r\n`,
        );
        for (let i = 0; i < 62; i++) connection.socket.write(chunk);
        return connection;
      }),
    );
    let refused = 0;
    for (let waited = 0; waited < 10_000 && refused <= 20; waited += 250) {
      await sleep(250);
      refused = senders.filter((sender) => sender.data().startsWith("HTTP/1.1 503")).length;
    }
    // What the server holds while the bodies hang: its live heap after a full collection, buffers included.
    // RSS is reported, not judged: it also counts the chunks of refused bodies the collector has not yet
    // freed, and on a loaded machine the collector runs later.
    const during = await liveHeapMiB(pid, heapDir);
    const rssDuring = await rssMiB(pid);
    for (const sender of senders) sender.socket.destroy();
    report("bodies of almost 4 MiB that never end", {
      connections: bodies,
      offeredMiB: (bodies * 62 * chunk.length) / 1024 / 1024,
      refused503: refused,
      heapBeforeMiB: before,
      heapDuringMiB: during,
      rssBeforeMiB: rssBefore,
      rssDuringMiB: rssDuring,
    });
    // 60 bodies of 3.9 MiB are 234 MiB; at most 16 full bodies are ever buffered.
    expect(during - before).toBeLessThan(120);
    expect(refused).toBeGreaterThan(20);
    // Two heap snapshots, each a few seconds on a loaded machine.
  }, 60_000);

  it("closes connections past GENERATION_HTTP_MAX_CONNECTIONS at once", async () => {
    const limited = await startHttpBin([], {
      HOME: root.dir,
      GENERATION_BASE_URL: sandbox.baseUrl,
      GENERATION_STATE_DIR: path.join(root.dir, "limited"),
      GENERATION_HTTP_MAX_CONNECTIONS: "16",
    });
    try {
      const count = 60 * SCALE;
      const connections = await Promise.all(Array.from({ length: count }, () => rawConnection(limited.port)));
      await sleep(500);
      const closed = await Promise.all(
        connections.map((connection) =>
          Promise.race([connection.closed.then(() => true), sleep(50).then(() => false)]),
        ),
      );
      // Those still open are ended politely, and are gone for the server once it has closed its side too
      // (a reset would leave the server to notice it later, racing the check below).
      await Promise.all(
        connections.map((connection) => {
          connection.socket.end();
          return connection.closed;
        }),
      );
      const health = await fetch(new URL("/healthz", limited.url));
      report("connections past a limit of 16", {
        connections: count,
        closedAtOnce: closed.filter(Boolean).length,
        healthzAfter: health.status,
      });
      // All but the 16 the limit allows, less a margin of 4 (20 at scale 1: at least 40 of 60).
      expect(closed.filter(Boolean).length).toBeGreaterThanOrEqual(count - 20);
      // It still serves once those are gone.
      expect(health.status).toBe(200);
    } finally {
      await limited.stop();
    }
  });
});

describe("a batch counts as its calls", () => {
  const batch = (count: number) =>
    JSON.stringify(
      Array.from({ length: count }, (_, i) => ({
        jsonrpc: "2.0",
        id: i + 1,
        method: "tools/call",
        params: { name: "get_credits", arguments: {} },
      })),
    );

  it("refuses a batch of more calls than the cap allows, and serves one within it (2025-03-26)", async () => {
    const headers = { "mcp-protocol-version": "2025-03-26" };
    const over = await rpc(server.url, sandbox.keys.paid, "", {}, { headers, body: batch(20) });
    expect(over.status).toBe(429);
    const within = await rpc(server.url, sandbox.keys.paid, "", {}, { headers, body: batch(10) });
    report("a batch over the cap (2025-03-26)", {
      calls: 30,
      capPerKey: 16,
      overStatus: over.status,
      withinStatus: within.status,
      withinResults: within.messages.filter((message) => "result" in message).length,
    });
    expect(within.status).toBe(200);
    expect(within.messages.filter((message) => "result" in message)).toHaveLength(10);
  });

  it("refuses any batch from a revision that has none", async () => {
    let refused = 0;
    for (const version of ["2025-06-18", "2025-11-25"]) {
      const answer = await rpc(
        server.url,
        sandbox.keys.paid,
        "",
        {},
        { headers: { "mcp-protocol-version": version }, body: batch(2) },
      );
      if (answer.status === 400 && errorOf(answer)?.code === -32600) refused += 1;
      expect(answer.status).toBe(400);
      expect(errorOf(answer)?.code).toBe(-32600);
    }
    report("batches where the revision has none", { batches: 2, calls: 4, refused400: refused });
  });
});

describe("the small ones", () => {
  it("refuses a task whose ttl is not a number instead of running a blocking call", async () => {
    const answer = await rpc(server.url, sandbox.keys.paid, "tools/call", {
      name: "generate_video",
      arguments: { prompt: "a ttl that is not a number", duration: 1 },
      task: { ttl: "soon" },
    });
    report("a ttl that is not a number", {
      calls: 1,
      errorCode: errorOf(answer)?.code ?? 0,
      startsSent: startsSent(sandbox),
    });
    expect(errorOf(answer)?.code).toBe(-32602);
    expect(sandbox.requests.filter((request) => request.route === "generate")).toEqual([]);
  });

  it("gives a tiny ttl the minimum, so the task outlives its first read", async () => {
    const answer = await rpc(server.url, sandbox.keys.paid, "tools/call", {
      name: "generate_video",
      arguments: { prompt: "a ttl of one millisecond", duration: 1 },
      task: { ttl: 1 },
    });
    const task = resultOf(answer)?.["task"] as { taskId: string; ttl: number };
    expect(task.ttl).toBe(60_000);
    await sleep(50);
    const read = await rpc(server.url, sandbox.keys.paid, "tasks/get", { taskId: task.taskId });
    report("a ttl of 1 ms", {
      calls: 2,
      ttlGivenMs: task.ttl,
      readAfter50Ms: resultOf(read)?.["taskId"] === task.taskId ? 1 : 0,
    });
    expect(resultOf(read)?.["taskId"]).toBe(task.taskId);
  });

  it("answers params that break a method's schema with a clean -32602 naming the field, never a dump", async () => {
    const codes: number[] = [];
    for (const [method, params, field] of [
      ["tasks/get", { taskId: 5 }, "taskId"],
      ["resources/read", { uri: 7 }, "uri"],
      ["logging/setLevel", { level: "loud" }, "level"],
      ["tasks/list", { cursor: {} }, "cursor"],
    ] as const) {
      const answer = await rpc(server.url, sandbox.keys.paid, method, params);
      const error = errorOf(answer);
      codes.push(error?.code ?? 0);
      expect(error?.code, method).toBe(-32602);
      expect(error?.message, method).toContain(field);
      expect(error?.message, method).not.toMatch(/[[{]\s*"|invalid_type|\\n/);
    }
    report("schema-breaking params", {
      calls: codes.length,
      cleanRefusals: codes.filter((code) => code === -32602).length,
    });
  });

  it("names an unknown task id of 200 KB in a few characters", async () => {
    const lengths: number[] = [];
    for (const method of ["tasks/get", "tasks/result", "tasks/cancel"]) {
      const answer = await rpc(server.url, sandbox.keys.paid, method, { taskId: "x".repeat(200_000) });
      lengths.push(answer.text.length);
      expect(errorOf(answer)?.code).toBe(-32602);
      expect(answer.text.length).toBeLessThan(500);
    }
    report("a task id of 200 KB", { calls: lengths.length, longestAnswerChars: Math.max(...lengths) });
  });
});
