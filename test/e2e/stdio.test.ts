/**
 * The built bin over stdio, through the SDK's Client, against a sandbox on 127.0.0.1:0: every tool, the
 * CLI's modes, and a scan of every byte the server emitted for the API key.
 */
import { spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import { describeTools } from "../../src/mcp/tool-list.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { tinyPng } from "../helpers/harness.js";
import { CLI, connectStdio, type StdioSession } from "../helpers/stdio.js";

let sandbox: SandboxHandle;
let session: StdioSession;
let root: string;
let imagesDir: string;

beforeAll(async () => {
  sandbox = await startSandbox({ timings: { queuedMs: 50, processingMs: 250 } });
  root = await mkdtemp(path.join(tmpdir(), "generation-mcp-e2e-"));
  imagesDir = path.join(root, "images");
  await import("node:fs/promises").then((fs) => fs.mkdir(imagesDir));
  session = await connectStdio([], {
    HOME: root,
    GENERATION_API_KEY: sandbox.keys.paid,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_POLL_INTERVAL_MS: "100",
    GENERATION_OUTPUT_DIR: path.join(root, "out"),
    GENERATION_ALLOWED_DIRS: imagesDir,
    GENERATION_STATE_DIR: path.join(root, "state"),
  });
});

afterAll(async () => {
  await session?.close();
  await sandbox?.close();
  await rm(root, { recursive: true, force: true });
});

const text = (result: CallToolResult) =>
  result.content.map((part) => (part.type === "text" ? part.text : "")).join("");

describe("generation-mcp over stdio", () => {
  it("lists the six tools, exactly as the schemas describe them", async () => {
    const { tools } = await session.client.listTools();
    // The bundle answers from a list computed at build time; it must be the schemas' own (pinned in
    // test/tools/schema.test.ts).
    expect(tools).toHaveLength(6);
    expect(tools).toEqual(describeTools());
  });

  it("runs every tool end to end", async () => {
    const credits = (await session.client.callTool({ name: "get_credits", arguments: {} })) as CallToolResult;
    expect(credits.structuredContent).toMatchObject({ paid_access: true });

    const file = path.join(imagesDir, "ref.png");
    await writeFile(file, tinyPng(8, 8));
    const upload = (await session.client.callTool({
      name: "upload_image",
      arguments: { path: file },
    })) as CallToolResult;
    const url = String(upload.structuredContent?.["url"]);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1/);

    const progress: string[] = [];
    const video = (await session.client.callTool(
      { name: "generate_video", arguments: { prompt: "a paper boat", image_url: url, duration: 2 } },
      undefined,
      { onprogress: (update) => progress.push(String(update.message)) },
    )) as CallToolResult;
    expect(video.isError).toBeFalsy();
    const videoId = String(video.structuredContent?.["video_id"]);
    expect(video.structuredContent).toMatchObject({ status: "completed", estimated_credits: 10 });
    expect(progress[0]).toContain(videoId);

    const status = (await session.client.callTool({
      name: "get_status",
      arguments: { video_id: videoId, download: true },
    })) as CallToolResult;
    expect(String(status.structuredContent?.["local_path"])).toContain(path.join(root, "out"));

    const list = (await session.client.callTool({
      name: "list_videos",
      arguments: { limit: 5 },
    })) as CallToolResult;
    expect((list.structuredContent?.["items"] as unknown[]).length).toBe(1);

    const image = (await session.client.callTool({
      name: "generate_image",
      arguments: { prompt: "a kite", images: [url] },
    })) as CallToolResult;
    expect((image.structuredContent?.["image_urls"] as string[]).length).toBe(1);

    const bad = (await session.client.callTool({
      name: "list_videos",
      arguments: { limit: 51 },
    })) as CallToolResult;
    expect(bad.isError).toBe(true);
    expect(text(bad)).toMatch(/^validation_error: .*limit: must be from 1 to 50/);
  });

  it("never emits the API key, on stdout or stderr", () => {
    const key = sandbox.keys.paid;
    expect(session.messages.length).toBeGreaterThan(5);
    expect(session.messages.join("\n")).not.toContain(key);
    expect(session.stderr()).not.toContain(key);
  });
});

describe("the CLI", () => {
  const run = (args: string[], env: Record<string, string> = {}) =>
    spawnSync(process.execPath, [CLI, ...args], {
      env: { PATH: process.env["PATH"] ?? "", HOME: tmpdir(), ...env },
      encoding: "utf8",
      timeout: 15_000,
      input: "",
    });

  it("fails fast without key and base URL, naming what to set", () => {
    const result = run([]);
    expect(result.status).not.toBe(0);
    expect(result.stdout).toBe("");
    for (const word of ["GENERATION_API_KEY", "GENERATION_BASE_URL", "--sandbox"])
      expect(result.stderr).toContain(word);
  });

  it("prints help and version on stdout (they are what was asked for), nothing on stderr", () => {
    const help = run(["--help"]);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/generation-mcp sandbox/);
    const version = run(["--version"]);
    expect(version.status).toBe(0);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    expect(help.stderr + version.stderr).toBe("");
  });

  it("refuses an unknown flag", () => {
    const result = run(["--sandbx"]);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toMatch(/sandbx/);
  });

  it("--sandbox serves the tools with no account", async () => {
    const state = await mkdtemp(path.join(tmpdir(), "generation-mcp-sbx-"));
    const sandboxed = await connectStdio(["--sandbox"], { HOME: state, GENERATION_STATE_DIR: state });
    try {
      const { tools } = await sandboxed.client.listTools();
      expect(tools).toHaveLength(6);
      const credits = (await sandboxed.client.callTool({
        name: "get_credits",
        arguments: {},
      })) as CallToolResult;
      expect(credits.isError).toBeFalsy();
      const started = (await sandboxed.client.callTool({
        name: "generate_video",
        arguments: { prompt: "demo", wait: false },
      })) as CallToolResult;
      expect(started.structuredContent?.["video_id"]).toEqual(expect.any(String));
    } finally {
      await sandboxed.close();
      await rm(state, { recursive: true, force: true });
    }
  });
});
