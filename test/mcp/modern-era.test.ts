/**
 * MCP revision 2026-07-28 through the built bin, as a client of that revision writes it (raw JSON, over HTTP
 * and over stdio), against the sandbox: the server is discovered; tools listed (without 2025 fields, with
 * cache fields); every tool called; progress and log lines on the request's own stream; generate_video and
 * generate_image answered as tasks of the extension for a client that declares it (tasks/get until the
 * result comes inline, tasks/cancel), and plainly for one that does not; what the revision removed is gone.
 * Older clients get nothing of it. The SDK's own v2 client (a published client of this revision) works too.
 */
import { Client } from "@modelcontextprotocol/client";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { spawnRaw, type RawSession } from "../e2e/raw-stdio.js";
import { tempRoot } from "../helpers/http-calls.js";
import { startHttpAgainst, type HttpServerProcess } from "../helpers/http.js";
import { REVISION, TASKS, modernHttp, modernStdio, pollTask } from "../helpers/modern.js";
import { rpc } from "../helpers/red-team.js";

const PNG_1PX =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

let sandbox: SandboxHandle;
let root: Awaited<ReturnType<typeof tempRoot>>;
let server: HttpServerProcess;
let key: string;

beforeAll(async () => {
  [sandbox, root] = await Promise.all([
    startSandbox({
      timings: { queuedMs: 200, processingMs: 800 },
      rateLimit: { limit: 100_000, windowMs: 60_000 },
    }),
    tempRoot("modern-era-"),
  ]);
  key = sandbox.keys.paid;
  server = await startHttpAgainst(sandbox, root.dir, 100);
});
afterAll(async () => {
  await server?.stop();
  await sandbox?.close();
  await root?.remove();
});

const call = (name: string, args: Record<string, unknown>, options = {}) =>
  modernHttp(server.url, key, "tools/call", { name, arguments: args }, options);
const generates = () => sandbox.requests.filter((request) => request.route === "generate").length;

describe("2026-07-28 over HTTP", () => {
  it("is discovered: its revision, the tasks extension, no 2025 capability, server info and cache fields", async () => {
    const answer = await modernHttp(server.url, key, "server/discover");
    expect(answer.status).toBe(200);
    expect(answer.result).toMatchObject({
      resultType: "complete",
      supportedVersions: expect.arrayContaining([REVISION]),
      capabilities: { tools: {}, resources: {}, extensions: { [TASKS]: {} } },
      ttlMs: expect.any(Number),
      cacheScope: "public",
    });
    expect(answer.result?.["capabilities"]).not.toHaveProperty("tasks");
    expect(JSON.stringify(answer.result?.["_meta"])).toContain('"name":"generation-mcp"');
  });

  it("lists the tools in a fixed order, cacheable, without the 2025 `execution` field", async () => {
    const first = await modernHttp(server.url, key, "tools/list");
    const second = await modernHttp(server.url, key, "tools/list");
    const tools = first.result?.["tools"] as Array<Record<string, unknown>>;
    expect(tools.map((tool) => tool["name"])).toEqual([
      "generate_video",
      "get_status",
      "generate_image",
      "upload_image",
      "list_videos",
      "get_credits",
    ]);
    expect(second.result?.["tools"]).toEqual(tools);
    for (const tool of tools) expect(tool).not.toHaveProperty("execution");
    expect(first.result).toMatchObject({ ttlMs: expect.any(Number), cacheScope: "public" });
  });

  it("calls every tool, and each answers with resultType complete", async () => {
    const answers = {
      credits: await call("get_credits", {}),
      upload: await call("upload_image", { data_base64: PNG_1PX, filename: "dot.png" }),
      dryImage: await call("generate_image", { prompt: "a lighthouse, modern", dry_run: true }),
      image: await call("generate_image", { prompt: "a lighthouse, modern, plain" }),
      video: await call("generate_video", { prompt: "a kite, modern", duration: 1, wait: false }),
      list: await call("list_videos", { limit: 5 }),
    };
    const videoId = String(
      answers.video.result?.["structuredContent"] &&
        (answers.video.result["structuredContent"] as { video_id: string }).video_id,
    );
    const status = await call("get_status", { video_id: videoId, wait: true, timeout_seconds: 20 });
    for (const [name, answer] of Object.entries({ ...answers, status })) {
      expect(answer.status, name).toBe(200);
      expect(answer.result?.["resultType"], name).toBe("complete");
      expect(answer.result?.["isError"], name).toBeUndefined();
    }
    expect(answers.upload.result?.["structuredContent"]).toMatchObject({
      url: expect.stringMatching(/^http/),
    });
    expect(answers.image.result?.["structuredContent"]).toMatchObject({ image_urls: [expect.any(String)] });
    expect(status.result?.["structuredContent"]).toMatchObject({ video_id: videoId, status: "completed" });
  });

  it("sends progress, and the log lines a request asked for, on the request's own stream", async () => {
    const answer = await call(
      "generate_video",
      { prompt: "a kite with progress, modern", duration: 1, timeout_seconds: 20 },
      { progressToken: "p-1", logLevel: "info" },
    );
    expect(answer.result?.["structuredContent"]).toMatchObject({ status: "completed" });
    const progress = answer.notifications.filter((note) => note.method === "notifications/progress");
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress[0]?.params).toMatchObject({
      progressToken: "p-1",
      message: expect.stringMatching(/^video_id /),
    });
    const logs = answer.notifications.filter((note) => note.method === "notifications/message");
    expect(JSON.stringify(logs)).toMatch(/video task started/);
    // A request that did not ask for log lines gets none.
    const quiet = await call("get_credits", {});
    expect(quiet.notifications).toEqual([]);
  });

  it("runs generate_video and generate_image as tasks for a client that declares the extension", async () => {
    const before = generates();
    const video = await call("generate_video", { prompt: "a task, modern", duration: 1 }, { tasks: true });
    expect(video.result).toMatchObject({
      resultType: "task",
      taskId: expect.any(String),
      status: "working",
      ttlMs: expect.any(Number),
      pollIntervalMs: expect.any(Number),
    });
    expect(video.result).not.toHaveProperty("ttl");
    expect(video.result).not.toHaveProperty("task");
    const taskId = String(video.result?.["taskId"]);
    const done = await pollTask(
      () => modernHttp(server.url, key, "tasks/get", { taskId }, { tasks: true }),
      (task) => task["status"] !== "working",
    );
    expect(done).toMatchObject({ resultType: "complete", taskId, status: "completed" });
    // The inline result is a CallToolResult of this revision too: clients validate its resultType.
    expect(done["result"]).toMatchObject({
      resultType: "complete",
      structuredContent: { status: "completed", video_url: expect.stringMatching(/^http/) },
    });

    const image = await call("generate_image", { prompt: "an image task, modern" }, { tasks: true });
    expect(image.result).toMatchObject({ resultType: "task" });
    const imageDone = await pollTask(
      () =>
        modernHttp(
          server.url,
          key,
          "tasks/get",
          { taskId: String(image.result?.["taskId"]) },
          { tasks: true },
        ),
      (task) => task["status"] !== "working",
    );
    expect(imageDone["result"]).toMatchObject({
      resultType: "complete",
      structuredContent: { image_urls: [expect.any(String)] },
    });
    expect(generates() - before).toBe(1);

    // A call that answers at once is not made a task.
    const dry = await call(
      "generate_video",
      { prompt: "no task for a dry run", dry_run: true },
      { tasks: true },
    );
    expect(dry.result).toMatchObject({ resultType: "complete" });
  }, 40_000);

  it("cancels a task's wait (the generation goes on), acknowledges, and says so in tasks/get", async () => {
    const started = await call(
      "generate_video",
      { prompt: "a task to cancel, modern", duration: 1 },
      { tasks: true },
    );
    const taskId = String(started.result?.["taskId"]);
    const cancelled = await modernHttp(server.url, key, "tasks/cancel", { taskId }, { tasks: true });
    expect(cancelled.result).toMatchObject({ resultType: "complete" });
    const seen = await modernHttp(server.url, key, "tasks/get", { taskId }, { tasks: true });
    expect(seen.result).toMatchObject({ taskId, status: "cancelled" });
    expect(seen.result).not.toHaveProperty("result");
    // Acknowledged again on a task that has ended; a task that does not exist is -32602.
    expect(
      (await modernHttp(server.url, key, "tasks/cancel", { taskId }, { tasks: true })).result,
    ).toMatchObject({
      resultType: "complete",
    });
    const unknown = await modernHttp(
      server.url,
      key,
      "tasks/get",
      { taskId: "00000000-0000-0000-0000-000000000000" },
      { tasks: true },
    );
    expect(unknown.error?.code).toBe(-32602);
  });

  it("answers tasks without the extension as the revision says, and the removed methods not at all", async () => {
    const plain = await call("generate_video", {
      prompt: "no extension, modern",
      duration: 1,
      timeout_seconds: 20,
    });
    expect(plain.result).toMatchObject({
      resultType: "complete",
      structuredContent: { status: "completed" },
    });
    const refused = await modernHttp(server.url, key, "tasks/get", {
      taskId: "00000000-0000-0000-0000-000000000000",
    });
    expect(refused.status).toBe(400);
    expect(refused.error).toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { extensions: { [TASKS]: {} } } },
    });
    for (const method of [
      "tasks/result",
      "tasks/list",
      "initialize",
      "ping",
      "logging/setLevel",
      "completion/complete",
    ]) {
      const answer = await modernHttp(server.url, key, method, { taskId: "x" }, { tasks: true });
      expect(answer.status, method).toBe(404);
      expect(answer.error?.code, method).toBe(-32601);
    }
  });

  it("checks the headers against the body", async () => {
    const mismatch = await modernHttp(
      server.url,
      key,
      "tools/call",
      { name: "get_credits", arguments: {} },
      {
        headers: { "mcp-name": "generate_video" },
      },
    );
    expect(mismatch.status).toBe(400);
    expect(mismatch.error?.code).toBe(-32020);
    const unsupported = await modernHttp(
      server.url,
      key,
      "tools/list",
      {},
      { headers: { "mcp-protocol-version": "2099-01-01" } },
    );
    expect(unsupported.status).toBe(400);
  });

  // The v2 client speaks 2025-11-25 unless told otherwise: 'auto' probes with server/discover, a pin insists.
  for (const mode of ["auto", { pin: "2026-07-28" }] as const) {
    it(`serves the SDK's own v2 client negotiating ${JSON.stringify(mode)}, on this revision`, async () => {
      const client = new Client({ name: "sdk-v2", version: "1.0.0" }, { versionNegotiation: { mode } });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(server.url), {
          requestInit: { headers: { authorization: `Bearer ${key}` } },
        }),
      );
      try {
        expect(client.getProtocolEra()).toBe("modern");
        expect(client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
        const { tools } = await client.listTools();
        expect(tools.map((tool) => tool.name)).toContain("generate_video");
        const credits = await client.callTool({ name: "get_credits", arguments: {} });
        expect(credits.structuredContent).toMatchObject({ credits: expect.any(Number) });
      } finally {
        await client.close();
      }
      expect(sandbox.requests.length).toBeGreaterThan(0);
    });
  }
});

describe("older revisions get nothing of a later one", () => {
  for (const version of ["2025-06-18", "2025-03-26"]) {
    it(`${version}: no tasks capability, no extensions, no execution field`, async () => {
      const init = await rpc(
        server.url,
        key,
        "initialize",
        { protocolVersion: version, capabilities: {}, clientInfo: { name: "old", version: "1" } },
        { headers: { "mcp-protocol-version": version } },
      );
      const result = init.messages.at(-1)?.["result"] as {
        protocolVersion: string;
        capabilities: Record<string, unknown>;
      };
      expect(result.protocolVersion).toBe(version);
      expect(result.capabilities).not.toHaveProperty("tasks");
      expect(result.capabilities).not.toHaveProperty("extensions");
      const list = await rpc(
        server.url,
        key,
        "tools/list",
        {},
        { headers: { "mcp-protocol-version": version } },
      );
      expect(list.text).not.toContain('"execution"');
      expect(list.text).not.toContain('"resultType"');
    });
  }

  it("2025-11-25: the tasks capability and each task tool's execution field", async () => {
    const init = await rpc(server.url, key, "initialize", {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "vscode-like", version: "1" },
    });
    expect(init.text).toContain('"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}');
    const list = await rpc(server.url, key, "tools/list");
    expect(list.text).toContain('"execution":{"taskSupport":"optional"}');
  });
});

describe("2026-07-28 over stdio", () => {
  let session: RawSession;
  beforeAll(() => {
    session = spawnRaw([], {
      HOME: root.dir,
      GENERATION_API_KEY: key,
      GENERATION_BASE_URL: sandbox.baseUrl,
      GENERATION_STATE_DIR: path.join(root.dir, "stdio-state"),
      GENERATION_POLL_INTERVAL_MS: "100",
    });
  });
  afterAll(async () => {
    await session?.close();
  });

  it("is discovered, lists, calls and runs a task; `initialize` is refused once the connection is modern", async () => {
    const discovered = await modernStdio(session, "server/discover");
    expect(discovered.result).toMatchObject({ supportedVersions: expect.arrayContaining([REVISION]) });
    const tools = await modernStdio(session, "tools/list");
    expect((tools.result?.["tools"] as unknown[]).length).toBe(6);
    const credits = await modernStdio(session, "tools/call", { name: "get_credits", arguments: {} });
    expect(credits.result).toMatchObject({
      resultType: "complete",
      structuredContent: { credits: expect.any(Number) },
    });
    const progress = await modernStdio(
      session,
      "tools/call",
      {
        name: "generate_video",
        arguments: { prompt: "stdio progress, modern", duration: 1, timeout_seconds: 20 },
      },
      { progressToken: 7 },
    );
    expect(progress.result?.["structuredContent"]).toMatchObject({ status: "completed" });
    expect(
      progress.notifications.filter((note) => note.method === "notifications/progress").length,
    ).toBeGreaterThan(1);

    const task = await modernStdio(
      session,
      "tools/call",
      { name: "generate_video", arguments: { prompt: "stdio task, modern", duration: 1 } },
      { tasks: true },
    );
    expect(task.result).toMatchObject({ resultType: "task" });
    const done = await pollTask(
      () => modernStdio(session, "tasks/get", { taskId: String(task.result?.["taskId"]) }, { tasks: true }),
      (state) => state["status"] !== "working",
    );
    expect(done).toMatchObject({
      status: "completed",
      result: { structuredContent: { status: "completed" } },
    });

    const late = await session.request("initialize", {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "late", version: "1" },
    });
    expect((late["error"] as { code: number }).code).toBe(-32022);
    expect(session.badLines).toEqual([]);
  }, 40_000);
});
