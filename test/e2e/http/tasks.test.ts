/**
 * MCP tasks over Streamable HTTP: a task started by one client is answered to any client of the same key
 * (each request meets a fresh, stateless server; the records live with the key's runtime), never to another
 * key; and ten clients polling tasks/get as fast as they like cost one upstream status request per poll
 * interval, proved by the sandbox's request log.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { CallToolResultSchema, CreateTaskResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_ACCOUNTS, startSandbox } from "../../../src/sandbox/index.js";
import type { SandboxHandle } from "../../../src/sandbox/types.js";
import { connectHttp, startHttpAgainst, type HttpServerProcess } from "../../helpers/http.js";

const POLL_MS = 250;
const OTHER_KEY = "sk-sandbox-other-team";
let sandbox: SandboxHandle;
let server: HttpServerProcess;
let dir: string;
const clients: Client[] = [];

beforeAll(async () => {
  sandbox = await startSandbox({
    timings: { queuedMs: 500, processingMs: 3000 },
    rateLimit: { limit: 100_000, windowMs: 60_000 },
    accounts: [
      ...DEFAULT_ACCOUNTS,
      { key: OTHER_KEY, name: "other", credits: 10_000, paidAccess: true, subscription: "pro" },
    ],
  });
  dir = await mkdtemp(path.join(tmpdir(), "generation-mcp-http-tasks-"));
  server = await startHttpAgainst(sandbox, dir, POLL_MS);
});
afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
  await server?.stop();
  await sandbox?.close();
  await rm(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function client(key: string): Promise<Client> {
  const connected = await connectHttp(server.url, key);
  clients.push(connected);
  return connected;
}

describe("MCP tasks over Streamable HTTP", () => {
  it("ten clients polling one task cost one upstream request per interval; another key never sees it", async () => {
    const starter = await client(sandbox.keys.paid);
    const { task } = await starter.request(
      {
        method: "tools/call",
        params: { name: "generate_video", arguments: { prompt: "one task, ten watchers" }, task: {} },
      },
      CreateTaskResultSchema,
    );
    const videoId = /video_id (\S+?):/.exec(task.statusMessage ?? "")?.[1] ?? "";
    expect(videoId).not.toBe("");
    const reads = () =>
      sandbox.requests.filter((r) => r.route === "video-status" && r.path.endsWith(`/${videoId}`)).length;

    const watchers = await Promise.all(Array.from({ length: 10 }, () => client(sandbox.keys.paid)));
    const startedAt = Date.now();
    const before = reads();
    let gets = 0;
    const finals = await Promise.all(
      watchers.map(async (watcher) => {
        for (;;) {
          const seen = await watcher.experimental.tasks.getTask(task.taskId);
          gets += 1;
          if (seen.status !== "working") return seen.status;
          await sleep(50);
        }
      }),
    );
    const elapsed = Date.now() - startedAt;
    expect(finals).toEqual(Array.from({ length: 10 }, () => "completed"));
    // Hundreds of tasks/get, and the service saw about one read per interval: the background wait's own.
    expect(gets).toBeGreaterThan(100);
    expect(reads() - before).toBeLessThanOrEqual(Math.ceil(elapsed / POLL_MS) + 2);

    const result = await watchers[3]!.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.structuredContent).toMatchObject({ video_id: videoId, status: "completed" });

    const stranger = await client(OTHER_KEY);
    await expect(stranger.experimental.tasks.getTask(task.taskId)).rejects.toThrow(/not found/i);
    const { tasks } = await stranger.experimental.tasks.listTasks();
    expect(tasks).toEqual([]);
  });
});
