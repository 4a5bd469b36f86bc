/**
 * The sheet of a finished video's frames through the built bin: the SDK's Client over stdio (--sandbox) and
 * over Streamable HTTP (a plain call, an MCP task of the 2025-11-25 era, and a 2026-07-28 task read with
 * tasks/get). ffmpeg is the real one behind a wrapper that logs each run, so the test sees that later
 * results of the same video reuse the sheet; with the binary absent the result carries one note instead.
 * Two keys on one server: one caller's videos on a slow CDN do not hold back the other caller's sheet.
 */
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  type CallToolResult,
  type ImageContent,
} from "@modelcontextprotocol/sdk/types.js";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { callTool } from "../helpers/http-calls.js";
import { connectHttp, startHttpAgainst, type HttpServerProcess } from "../helpers/http.js";
import { modernHttp, pollTask } from "../helpers/modern.js";
import { tenant } from "../helpers/red-team.js";
import { connectStdio } from "../helpers/stdio.js";
import { ffmpegWrapper } from "../helpers/videos.js";

let root: string;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "generation-mcp-frames-e2e-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** An ffmpeg that appends a line to `<name>.log` for each run, then is the real one. */
function countingFfmpeg(name: string): { path: string; runs: () => number } {
  const log = path.join(root, `${name}.log`);
  const file = ffmpegWrapper(path.join(root, name), `echo run >> '${log}'\nexec ffmpeg "$@"`);
  return { path: file, runs: () => (existsSync(log) ? readFileSync(log, "utf8").split("\n").length - 1 : 0) };
}

const sheetOf = (result: CallToolResult) => {
  const text = result.content.flatMap((item) => (item.type === "text" ? [item.text] : []));
  const images = result.content.filter((item): item is ImageContent => item.type === "image");
  return { lines: text.filter((line) => line.startsWith("Frames of the video:")), images };
};

async function expectSheet(result: CallToolResult) {
  expect(result.isError, JSON.stringify(result.content).slice(0, 500)).toBeFalsy();
  const { lines, images } = sheetOf(result);
  expect(lines).toEqual([
    expect.stringMatching(
      /^Frames of the video: 6 frames at 0:00, 0:00\.33, .* 0:01\.67 \(left to right, top to bottom\)\.$/,
    ),
  ]);
  expect(images).toHaveLength(1);
  const metadata = await sharp(Buffer.from(images[0]?.data ?? "", "base64")).metadata();
  expect(result.structuredContent?.["frames"]).toEqual({
    frames: 6,
    layout: "3x2",
    times_s: [0, 0.33, 0.67, 1, 1.33, 1.67],
    duration_s: 2,
    width: metadata.width,
    height: metadata.height,
  });
  expect(metadata.format).toBe("jpeg");
  expect(Math.max(metadata.width ?? 0, metadata.height ?? 0)).toBeLessThanOrEqual(1024);
  expect(Buffer.byteLength(JSON.stringify(result))).toBeLessThan(1_000_000);
}

describe.concurrent("over stdio (--sandbox)", () => {
  it("answers generate_video with the sheet, and get_status of the same video reuses it", async () => {
    const ffmpeg = countingFfmpeg("stdio");
    const session = await connectStdio(["--sandbox", "--ffmpeg-path", ffmpeg.path], {
      HOME: root,
      GENERATION_STATE_DIR: path.join(root, "stdio-state"),
    });
    try {
      const call = async (name: string, args: Record<string, unknown>) =>
        (await session.client.callTool({ name, arguments: args }, undefined, {
          timeout: 60_000,
        })) as CallToolResult;
      const made = await call("generate_video", { prompt: "a kite over the sea", duration: 2 });
      await expectSheet(made);
      const runs = ffmpeg.runs();
      expect(runs).toBeGreaterThan(0);
      const again = await call("get_status", { video_id: made.structuredContent?.["video_id"] });
      await expectSheet(again);
      expect(ffmpeg.runs()).toBe(runs);
    } finally {
      await session.close();
    }
  }, 90_000);

  it("without ffmpeg, answers as before plus one note saying how to get frame previews", async () => {
    const session = await connectStdio(["--sandbox"], {
      HOME: root,
      GENERATION_STATE_DIR: path.join(root, "absent-state"),
      GENERATION_FFMPEG_PATH: "/nonexistent/ffmpeg",
    });
    try {
      const result = (await session.client.callTool(
        { name: "generate_video", arguments: { prompt: "a kite without frames", duration: 2 } },
        undefined,
        { timeout: 60_000 },
      )) as CallToolResult;
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent?.["status"]).toBe("completed");
      expect(result.structuredContent).not.toHaveProperty("frames");
      expect(sheetOf(result)).toEqual({ lines: [], images: [] });
      const notes = (result.structuredContent?.["notes"] as string[]).filter((note) => /ffmpeg/.test(note));
      expect(notes).toEqual([
        expect.stringMatching(/^No frame preview: ffmpeg was not found.*GENERATION_FFMPEG_PATH/),
      ]);
      const text = result.content.map((item) => (item.type === "text" ? item.text : "")).join("\n");
      expect(text.match(/ffmpeg was not found/g)).toHaveLength(1);
    } finally {
      await session.close();
    }
  }, 90_000);
});

describe.concurrent("over Streamable HTTP", () => {
  let sandbox: SandboxHandle;
  let server: HttpServerProcess;
  let client: Client;
  const ffmpeg = () => countingFfmpeg("http");

  beforeAll(async () => {
    sandbox = await startSandbox({ timings: { queuedMs: 50, processingMs: 300 } });
    server = await startHttpAgainst(sandbox, path.join(root, "http"), 100, {
      GENERATION_FFMPEG_PATH: ffmpeg().path,
    });
    client = await connectHttp(server.url, sandbox.keys.paid);
  });
  afterAll(async () => {
    await client?.close();
    await server?.stop();
    await sandbox?.close();
  });

  it("carries the sheet in a plain call, in a 2025 task's result and in a 2026 tasks/get, decoding once per video", async () => {
    const plain = (await client.callTool(
      { name: "generate_video", arguments: { prompt: "a plain call", duration: 2 } },
      undefined,
      { timeout: 60_000 },
    )) as CallToolResult;
    await expectSheet(plain);
    const runs = ffmpeg().runs();
    const status = (await client.callTool({
      name: "get_status",
      arguments: { video_id: plain.structuredContent?.["video_id"] },
    })) as CallToolResult;
    await expectSheet(status);
    expect(ffmpeg().runs()).toBe(runs);

    const { task } = await client.request(
      {
        method: "tools/call",
        params: { name: "generate_video", arguments: { prompt: "a 2025 task", duration: 2 }, task: {} },
      },
      CreateTaskResultSchema,
    );
    for (
      let i = 0;
      i < 400 && (await client.experimental.tasks.getTask(task.taskId)).status === "working";
      i++
    )
      await new Promise((resolve) => setTimeout(resolve, 50));
    await expectSheet(await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema));

    const key = sandbox.keys.paid;
    const started = await modernHttp(
      server.url,
      key,
      "tools/call",
      { name: "generate_video", arguments: { prompt: "a 2026 task", duration: 2 } },
      { tasks: true },
    );
    const taskId = String(started.result?.["taskId"]);
    const done = await pollTask(
      () => modernHttp(server.url, key, "tasks/get", { taskId }, { tasks: true }),
      (read) => read["status"] !== "working",
    );
    await expectSheet(done["result"] as CallToolResult);
  }, 120_000);
});

describe.concurrent("two callers on one server", () => {
  const key = (name: string) => `sk-test-${name}-0123456789abcdef`;
  const [ALICE, BOB] = [tenant("alice", key("alice")), tenant("bob", key("bob"))];
  let sandbox: SandboxHandle;
  let server: HttpServerProcess;

  beforeAll(async () => {
    sandbox = await startSandbox({ accounts: [ALICE, BOB], timings: { queuedMs: 50, processingMs: 300 } });
    server = await startHttpAgainst(sandbox, path.join(root, "callers"), 100);
  });
  afterAll(async () => {
    await server?.stop();
    await sandbox?.close();
  });

  it("makes one caller's sheet while another caller's four videos crawl in from a slow CDN", async () => {
    const [alice, bob] = await Promise.all([
      connectHttp(server.url, ALICE.key),
      connectHttp(server.url, BOB.key),
    ]);
    try {
      // The next two videos fetched (Alice's first two) come in three pieces 5 s apart.
      sandbox.faults.dripBody("media", { chunkDelayMs: 5000, chunks: 3, count: 2 });
      let aliceAnswered = 0;
      const fromAlice = [1, 2, 3, 4].map((i) =>
        callTool(alice, "generate_video", { prompt: `Alice's video ${i}`, duration: 2 }).then((answer) => {
          aliceAnswered += 1;
          return answer;
        }),
      );
      // Closing the clients below ends these calls when an assertion failed first.
      for (const answer of fromAlice) answer.catch(() => undefined);
      const fetching = () => sandbox.requests.filter((request) => request.route === "media").length;
      for (let i = 0; i < 400 && fetching() < 2; i++) await new Promise((resolve) => setTimeout(resolve, 25));
      expect(fetching()).toBe(2);

      const fromBob = await callTool(bob, "generate_video", { prompt: "Bob's video", duration: 2 });
      await expectSheet(fromBob.result);
      expect(aliceAnswered).toBe(0);
      for (const answer of await Promise.all(fromAlice)) await expectSheet(answer.result);
    } finally {
      await Promise.all([alice.close(), bob.close()]);
    }
  }, 60_000);
});
