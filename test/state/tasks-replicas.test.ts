/**
 * MCP tasks across `--http` replicas sharing state on Redis (real processes: the built bin, redis-server,
 * the sandbox): a task started on one replica is answered by another (tasks/get, tasks/result, tasks/list),
 * a cancel sent to another replica stops the follower's polling, and a task whose replica was killed with -9
 * is taken over by the next replica asked about it, without a second charge. Needs `npm run build`.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { CallToolResultSchema, CreateTaskResultSchema, type Task } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { tempRoot } from "../helpers/http-calls.js";
import { connectHttp, startHttpBin, type HttpServerProcess } from "../helpers/http.js";
import { modernHttp, pollTask } from "../helpers/modern.js";
import { startRedis, type RedisProcess } from "../helpers/redis.js";

const POLL_MS = 250;
let redis: RedisProcess;
let root: Awaited<ReturnType<typeof tempRoot>>;
const stops: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  [redis, root] = await Promise.all([startRedis(), tempRoot("redis-tasks-")]);
});
afterAll(async () => {
  for (const stop of stops.splice(0).reverse()) await stop().catch(() => undefined);
  await redis?.stop();
  await root?.remove();
});

/** A sandbox for one case: the cases run side by side, and each counts the requests that reached its own. */
async function ownSandbox(): Promise<SandboxHandle> {
  const sandbox = await startSandbox({
    timings: { queuedMs: 300, processingMs: 3000 },
    rateLimit: { limit: 100_000, windowMs: 60_000 },
  });
  stops.push(() => sandbox.close());
  return sandbox;
}

let count = 0;
async function replica(sandbox: SandboxHandle): Promise<HttpServerProcess> {
  const server = await startHttpBin([], {
    HOME: root.dir,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_REDIS_URL: redis.url,
    GENERATION_STATE_DIR: `${root.dir}/replica-${count++}`,
    GENERATION_POLL_INTERVAL_MS: String(POLL_MS),
  });
  stops.push(() => server.stop());
  return server;
}

async function client(sandbox: SandboxHandle, server: HttpServerProcess): Promise<Client> {
  const connected = await connectHttp(server.url, sandbox.keys.paid);
  stops.push(() => connected.close());
  return connected;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const starts = (sandbox: SandboxHandle) => sandbox.requests.filter((r) => r.route === "generate").length;
const reads = (sandbox: SandboxHandle, videoId: string) =>
  sandbox.requests.filter((r) => r.route === "video-status" && r.path.endsWith(`/${videoId}`)).length;

async function startTask(on: Client, prompt: string) {
  const { task } = await on.request(
    { method: "tools/call", params: { name: "generate_video", arguments: { prompt }, task: {} } },
    CreateTaskResultSchema,
  );
  const videoId = /video_id (\S+?):/.exec(task.statusMessage ?? "")?.[1] ?? "";
  expect(videoId).not.toBe("");
  return { task, videoId };
}

async function until(on: Client, taskId: string, done: (task: Task) => boolean): Promise<Task> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const task = await on.experimental.tasks.getTask(taskId);
    if (done(task) || Date.now() > deadline) return task;
    await sleep(POLL_MS);
  }
}

// The cases run side by side, each with a sandbox and replicas of its own (on the one Redis).
describe.concurrent("MCP tasks across replicas on Redis", () => {
  it("answers for a task started on another replica: get, result and list", async () => {
    const sandbox = await ownSandbox();
    const [a, b] = await Promise.all([replica(sandbox), replica(sandbox)]);
    const [onA, onB] = await Promise.all([client(sandbox, a), client(sandbox, b)]);
    const { task, videoId } = await startTask(onA, "a task seen from the other replica");

    const seen = await onB.experimental.tasks.getTask(task.taskId);
    expect(seen.status).toBe("working");
    const done = await until(onB, task.taskId, (t) => t.status !== "working");
    expect(done.status).toBe("completed");
    const result = await onB.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.structuredContent).toMatchObject({ video_id: videoId, status: "completed" });
    const { tasks } = await onB.experimental.tasks.listTasks();
    expect(tasks.map((t) => t.taskId)).toContain(task.taskId);
  }, 60_000);

  it("a cancel sent to another replica stops the follower's polling", async () => {
    const sandbox = await ownSandbox();
    const [a, b] = await Promise.all([replica(sandbox), replica(sandbox)]);
    const [onA, onB] = await Promise.all([client(sandbox, a), client(sandbox, b)]);
    const { task, videoId } = await startTask(onA, "a task cancelled from the other replica");
    const cancelled = await onB.experimental.tasks.cancelTask(task.taskId);
    expect(cancelled.status).toBe("cancelled");
    // The follower on A notices at its next poll and stops.
    await sleep(POLL_MS * 3);
    const settled = reads(sandbox, videoId);
    await sleep(POLL_MS * 6);
    expect(reads(sandbox, videoId)).toBeLessThanOrEqual(settled + 1);
    expect((await onA.experimental.tasks.getTask(task.taskId)).status).toBe("cancelled");
  }, 60_000);

  it("takes over a task whose replica was killed with -9, without charging again", async () => {
    const sandbox = await ownSandbox();
    const [a, b] = await Promise.all([replica(sandbox), replica(sandbox)]);
    const [onA, onB] = await Promise.all([client(sandbox, a), client(sandbox, b)]);
    const before = starts(sandbox);
    const { task, videoId } = await startTask(onA, "a task whose replica dies");
    a.child.kill("SIGKILL");
    await a.exited;

    const done = await until(onB, task.taskId, (t) => t.status !== "working");
    expect(done.status).toBe("completed");
    const result = await onB.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.structuredContent).toMatchObject({ video_id: videoId, status: "completed" });
    expect(starts(sandbox)).toBe(before + 1);
  }, 60_000);

  it("2026-07-28: takes over an extension task whose replica was killed with -9, without charging again", async () => {
    const sandbox = await ownSandbox();
    const [a, b] = await Promise.all([replica(sandbox), replica(sandbox)]);
    const before = starts(sandbox);
    const started = await modernHttp(
      a.url,
      sandbox.keys.paid,
      "tools/call",
      { name: "generate_video", arguments: { prompt: "a modern task whose replica dies", duration: 2 } },
      { tasks: true },
    );
    expect(started.result).toMatchObject({ resultType: "task" });
    const taskId = String(started.result?.["taskId"]);
    a.child.kill("SIGKILL");
    await a.exited;

    const done = await pollTask(
      () => modernHttp(b.url, sandbox.keys.paid, "tasks/get", { taskId }, { tasks: true }),
      (task) => task["status"] !== "working",
    );
    expect(done).toMatchObject({ taskId, status: "completed" });
    expect((done["result"] as { structuredContent: unknown }).structuredContent).toMatchObject({
      status: "completed",
    });
    expect(starts(sandbox)).toBe(before + 1);
  }, 60_000);
});
