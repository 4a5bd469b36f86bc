/**
 * MCP tasks through the SDK client's task API against the built server over stdio: a task-augmented
 * generate_video answers at once, after the service started the generation, and its task moves from
 * `working` to `completed` with the result a blocking call gives; a failed generation; tasks/cancel (our wait
 * stops, the service's task goes on); a restart between start and result; a ttl below the minimum; and plain
 * calls, with or without a client that declares tasks, unchanged. Expiry itself: test/mcp/task-records.test.ts.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  type CallToolResult,
  type ClientCapabilities,
  type Task,
} from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { connectStdio } from "../helpers/stdio.js";

const POLL_MS = 200;
let dir: string;
const open: Client[] = [];
const services: SandboxHandle[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "generation-mcp-tasks-"));
});
afterAll(async () => {
  await Promise.allSettled(open.map((client) => client.close()));
  await Promise.allSettled(services.map((sandbox) => sandbox.close()));
  await rm(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const textOf = (result: CallToolResult) =>
  result.content.map((part) => (part.type === "text" ? part.text : "")).join("\n");
const statusReads = (sandbox: SandboxHandle, videoId: string) =>
  sandbox.requests.filter((r) => r.route === "video-status" && r.path.endsWith(`/${videoId}`)).length;

/** A service of the case's own: the cases run at once, and each counts what reached its service. */
async function service(): Promise<SandboxHandle> {
  const sandbox = await startSandbox({
    timings: { queuedMs: 300, processingMs: 1500 },
    rateLimit: { limit: 100_000, windowMs: 60_000 },
  });
  services.push(sandbox);
  return sandbox;
}

/** The built bin against `sandbox`, or against its own embedded one (`--sandbox`); a state folder of its own. */
async function connect(
  sandbox: SandboxHandle | "--sandbox",
  stateDir?: string,
  capabilities: ClientCapabilities = { tasks: {} },
  pollMs = POLL_MS,
): Promise<{ client: Client; pid: number }> {
  const env = {
    HOME: dir,
    GENERATION_STATE_DIR: stateDir ?? (await mkdtemp(path.join(dir, "state-"))),
    GENERATION_POLL_INTERVAL_MS: String(pollMs),
    ...(sandbox === "--sandbox"
      ? {}
      : { GENERATION_API_KEY: sandbox.keys.paid, GENERATION_BASE_URL: sandbox.baseUrl }),
  };
  const session = await connectStdio(sandbox === "--sandbox" ? [sandbox] : [], env, capabilities);
  open.push(session.client);
  return session;
}

function startTask(client: Client, name: string, args: Record<string, unknown>, ttl?: number) {
  return client.request(
    { method: "tools/call", params: { name, arguments: args, task: ttl === undefined ? {} : { ttl } } },
    CreateTaskResultSchema,
  );
}

async function until(client: Client, taskId: string, done: (task: Task) => boolean): Promise<Task> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const task = await client.experimental.tasks.getTask(taskId);
    if (done(task) || Date.now() > deadline) return task;
    await sleep(task.pollInterval ?? POLL_MS);
  }
}

// Each case waits on generations of its own service, so they run at once; side by side on two cores each
// takes longer than alone, hence the larger bound.
describe.concurrent("MCP tasks over stdio", { timeout: 60_000 }, () => {
  it("declares tasks for tools/call and marks only the generation tools, as optional", async () => {
    const { client } = await connect(await service());
    expect(client.getServerCapabilities()?.tasks).toMatchObject({
      list: {},
      cancel: {},
      requests: { tools: { call: {} } },
    });
    const { tools } = await client.listTools();
    const support = Object.fromEntries(tools.map((tool) => [tool.name, tool.execution?.taskSupport]));
    expect(support).toEqual({
      generate_video: "optional",
      generate_image: "optional",
      get_status: undefined,
      upload_image: undefined,
      list_videos: undefined,
      get_credits: undefined,
    });
  });

  it("answers at once with a working task naming the video_id, then completes with the blocking call's result", async () => {
    const sandbox = await service();
    const { client } = await connect(sandbox);
    const before = sandbox.requests.filter((r) => r.route === "generate").length;
    const { task } = await startTask(client, "generate_video", { prompt: "a red kite, as a task" }, 120_000);
    // Started before the answer: the service has the task, and the journal and duplicate guard saw it.
    expect(sandbox.requests.filter((r) => r.route === "generate").length).toBe(before + 1);
    expect(task.status).toBe("working");
    expect(task.pollInterval).toBe(POLL_MS);
    expect(task.ttl).toBe(120_000);
    const videoId = /video_id (\S+?):/.exec(task.statusMessage ?? "")?.[1];
    expect(videoId).toMatch(/\S/);

    const done = await until(client, task.taskId, (t) => t.status !== "working");
    expect(done.status).toBe("completed");
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError ?? false).toBe(false);
    expect(result.structuredContent).toMatchObject({
      video_id: videoId,
      status: "completed",
      video_url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/media\//),
      estimated_credits: expect.any(Number),
    });

    // The blocking call of the same tool answers with the same fields.
    const plain = (await client.callTool(
      { name: "generate_video", arguments: { prompt: "a blue kite, plain call" } },
      undefined,
      { timeout: 30_000 },
    )) as CallToolResult;
    expect(plain.isError ?? false).toBe(false);
    expect(Object.keys(result.structuredContent ?? {}).sort()).toEqual(
      Object.keys(plain.structuredContent ?? {}).sort(),
    );
    expect(textOf(result).split("\n")[0]).toMatch(new RegExp(`^Video ${videoId} is completed: http`));

    // An identical request within 10 minutes, as a task, reuses the same generation.
    const again = await startTask(client, "generate_video", { prompt: "a red kite, as a task" });
    expect(again.task.statusMessage).toContain(videoId);
    const reused = await until(client, again.task.taskId, (t) => t.status !== "working");
    expect(reused.status).toBe("completed");

    const { tasks } = await client.experimental.tasks.listTasks();
    expect(tasks.map((t) => t.taskId)).toEqual(expect.arrayContaining([task.taskId, again.task.taskId]));
  });

  it("ends a failed generation as a failed task whose result is the blocking call's answer", async () => {
    const sandbox = await service();
    const { client } = await connect(sandbox);
    sandbox.faults.failNextTask("content policy: the sandbox refused this one");
    const { task } = await startTask(client, "generate_video", { prompt: "a task the service fails" });
    const videoId = /video_id (\S+?):/.exec(task.statusMessage ?? "")?.[1];
    const done = await until(client, task.taskId, (t) => t.status !== "working");
    expect(done.status).toBe("failed");
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    // As over a blocking call: the generation's failure is the answer (status failed, the service's reason).
    expect(result.structuredContent).toMatchObject({ video_id: videoId, status: "failed" });
    expect(JSON.stringify(result.structuredContent)).toContain("content policy");
    expect(textOf(result)).toMatch(new RegExp(`^Video ${videoId} failed`));
    expect(done.statusMessage).toBe(textOf(result).split("\n")[0]);
  });

  it("refuses bad arguments as a task that failed at once, before any request reaches the service", async () => {
    const sandbox = await service();
    const { client } = await connect(sandbox);
    const before = sandbox.requests.length;
    const { task } = await startTask(client, "generate_video", { prompt: "x", duration: -3 });
    expect(task.status).toBe("failed");
    expect(sandbox.requests.length).toBe(before);
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/^validation_error: /);
    // A tool that does not run as a task says so.
    await expect(startTask(client, "get_credits", {})).rejects.toThrow(/does not run as a task/);
  });

  it("tasks/cancel stops our wait, says the service's task goes on, and the video stays recoverable", async () => {
    const sandbox = await service();
    const { client } = await connect(sandbox);
    const { task } = await startTask(client, "generate_video", { prompt: "a task cancelled by the client" });
    const videoId = /video_id (\S+?):/.exec(task.statusMessage ?? "")?.[1] ?? "";
    const cancelled = await client.experimental.tasks.cancelTask(task.taskId);
    expect(cancelled.status).toBe("cancelled");
    expect(cancelled.statusMessage).toMatch(/generation itself goes on/);
    const reads = statusReads(sandbox, videoId);
    await sleep(POLL_MS * 5);
    expect(statusReads(sandbox, videoId)).toBeLessThanOrEqual(reads + 1);
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(textOf(result)).toMatch(/^cancelled: .*get_status/);
    const status = (await client.callTool({
      name: "get_status",
      arguments: { video_id: videoId, wait: true, timeout_seconds: 20 },
    })) as CallToolResult;
    expect(status.structuredContent).toMatchObject({ video_id: videoId, status: "completed" });
  });

  it("keeps a task across a restart of the server: the new process answers tasks/get and delivers the result", async () => {
    const sandbox = await service();
    const stateDir = path.join(dir, "state-restart");
    const first = await connect(sandbox, stateDir);
    const starts = () => sandbox.requests.filter((r) => r.route === "generate").length;
    const before = starts();
    const { task } = await startTask(first.client, "generate_video", { prompt: "a task across a restart" });
    const videoId = /video_id (\S+?):/.exec(task.statusMessage ?? "")?.[1];
    // The hard way: no chance to write anything on the way out.
    process.kill(first.pid, "SIGKILL");
    await first.client.close().catch(() => undefined);

    const second = await connect(sandbox, stateDir);
    const seen = await second.client.experimental.tasks.getTask(task.taskId);
    expect(seen.taskId).toBe(task.taskId);
    const done = await until(second.client, task.taskId, (t) => t.status !== "working");
    expect(done.status).toBe("completed");
    const result = await second.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.structuredContent).toMatchObject({ video_id: videoId, status: "completed" });
    // One generation, started once: the new process followed it and started nothing.
    expect(starts()).toBe(before + 1);
  });

  it("raises a ttl below the minimum, visibly; its video_id stays recoverable with get_status", async () => {
    const { client } = await connect(await service());
    // A 1 s task would be gone before a client could read its result: it gets the minimum, and says so.
    const { task } = await startTask(client, "generate_video", { prompt: "a short-lived task" }, 1000);
    expect(task.ttl).toBe(60_000);
    const videoId = /video_id (\S+?):/.exec(task.statusMessage ?? "")?.[1] ?? "";
    await sleep(1500);
    expect((await client.experimental.tasks.getTask(task.taskId)).taskId).toBe(task.taskId);
    const status = (await client.callTool({
      name: "get_status",
      arguments: { video_id: videoId, wait: true, timeout_seconds: 20 },
    })) as CallToolResult;
    expect(status.structuredContent).toMatchObject({ video_id: videoId, status: "completed" });
  });

  it("runs as tasks in --sandbox mode too: a video with its video_url, an image with its image_urls", async () => {
    const { client } = await connect("--sandbox", undefined, { tasks: {} }, 500);
    const video = await startTask(client, "generate_video", { prompt: "a lighthouse, sandbox task" });
    const image = await startTask(client, "generate_image", { prompt: "a lighthouse, sandbox image task" });
    expect(video.task.status).toBe("working");
    const imageDone = await until(client, image.task.taskId, (t) => t.status !== "working");
    expect(imageDone.status).toBe("completed");
    const imageResult = await client.experimental.tasks.getTaskResult(
      image.task.taskId,
      CallToolResultSchema,
    );
    expect(imageResult.structuredContent).toMatchObject({ image_urls: [expect.stringMatching(/^http:/)] });
    // The embedded sandbox takes about 12 s per video.
    const videoDone = await until(client, video.task.taskId, (t) => t.status !== "working");
    expect(videoDone.status).toBe("completed");
    const videoResult = await client.experimental.tasks.getTaskResult(
      video.task.taskId,
      CallToolResultSchema,
    );
    expect(videoResult.structuredContent).toMatchObject({
      status: "completed",
      video_url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/media\//),
    });
  }, 40_000);

  it("answers plain calls as before, for a client that declares no task support", async () => {
    const { client } = await connect(await service(), undefined, {});
    const result = (await client.callTool(
      { name: "generate_video", arguments: { prompt: "a plain call from a plain client" } },
      undefined,
      { timeout: 30_000 },
    )) as CallToolResult;
    expect(result.isError ?? false).toBe(false);
    expect(result.structuredContent).toMatchObject({ status: "completed", video_url: expect.any(String) });
    expect(result._meta?.["io.modelcontextprotocol/related-task"]).toBeUndefined();
  });
});
