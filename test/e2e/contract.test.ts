/**
 * CONTRACT.md through the built bin over stdio, against a sandbox on 127.0.0.1:0: every input rule (each
 * proven to send no request), every error code of spec section 7 as its isError text, and tolerance of
 * the shapes the spec leaves open.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_SHAPES, startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { VALIDATION_CASES, fileCases, fixturePaths, prepareFileFixtures } from "../helpers/contract-cases.js";
import { tinyPng } from "../helpers/harness.js";
import { connectStdio, type StdioSession } from "../helpers/stdio.js";

const root = mkdtempSync(path.join(tmpdir(), "generation-mcp-contract-"));
const files = fixturePaths(path.join(root, "images"));
let sandbox: SandboxHandle;
let session: StdioSession;

const env = (baseUrl: string, key: string) => ({
  HOME: root,
  GENERATION_API_KEY: key,
  GENERATION_BASE_URL: baseUrl,
  GENERATION_POLL_INTERVAL_MS: "100",
  GENERATION_OUTPUT_DIR: path.join(root, "out"),
  GENERATION_ALLOWED_DIRS: files.imagesDir,
  GENERATION_STATE_DIR: path.join(root, "state"),
});

beforeAll(async () => {
  mkdirSync(files.imagesDir);
  await prepareFileFixtures(files);
  sandbox = await startSandbox({ timings: { queuedMs: 50, processingMs: 250 } });
  session = await connectStdio([], env(sandbox.baseUrl, sandbox.keys.paid));
});

afterAll(async () => {
  await session?.close();
  await sandbox?.close();
  rmSync(root, { recursive: true, force: true });
});

async function call(name: string, args: Record<string, unknown> = {}) {
  const result = (await session.client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content.map((part) => (part.type === "text" ? part.text : "")).join("\n");
  return { result, text, structured: result.structuredContent };
}

describe("every input rule over stdio: validation_error, nothing sent", () => {
  it.each([
    ...VALIDATION_CASES,
    ...fileCases(files).map(([title, args, pattern]) => ["generate_video", title, args, pattern] as const),
  ])("%s: %s", async (tool, _title, args, pattern) => {
    const mark = sandbox.requests.length;
    const { result, text } = await call(tool, args);
    expect(result.isError).toBe(true);
    expect(text.startsWith("validation_error: ")).toBe(true);
    expect(text).toMatch(pattern);
    expect(sandbox.requests.slice(mark)).toEqual([]);
  });
});

describe("every error of spec section 7 over stdio", () => {
  it.each([
    ["unauthorized", 401, "credits", "get_credits", {}],
    ["insufficient_credits", 403, "generate", "generate_video", { prompt: "x", wait: false }],
    ["paid_access_required", 403, "generate", "generate_video", { prompt: "x", wait: false }],
    ["validation_error", 400, "generate", "generate_video", { prompt: "x", wait: false }],
    ["rate_limit_exceeded", 429, "credits", "get_credits", {}],
    ["internal_error", 500, "credits", "get_credits", {}],
    ["upstream_error", 502, "credits", "get_credits", {}],
  ] as const)("%s (%d)", async (code, status, route, tool, args) => {
    // Reads are retried (three times): fail every attempt, and let a 429's Retry-After be 0.
    sandbox.faults.failNext(route, { status, code, message: `forced ${code}`, count: 4 });
    if (status === 429) sandbox.faults.headersNext(route, { "Retry-After": "0" }, 4);
    const { result, text } = await call(tool, args);
    sandbox.faults.clear();
    expect(result.isError).toBe(true);
    expect(text.startsWith(`${code}: `)).toBe(true);
    expect(text).toContain(`forced ${code}`);
    expect(text).toMatch(/Next step: /);
  });

  it("not_found for an unknown video_id", async () => {
    const { text } = await call("get_status", { video_id: "no-such-task" });
    expect(text).toMatch(/^not_found: .*\nNext step: .*list_videos/s);
  });

  it("network_error when nothing listens at the base URL", async () => {
    const closed = await startSandbox();
    const { baseUrl } = closed;
    await closed.close();
    const offline = await connectStdio([], env(baseUrl, "sk-offline-key"));
    try {
      const result = (await offline.client.callTool({
        name: "get_credits",
        arguments: {},
      })) as CallToolResult;
      const text = result.content.map((part) => (part.type === "text" ? part.text : "")).join("");
      expect(text).toMatch(/^network_error: .*ECONNREFUSED/);
    } finally {
      await offline.close();
    }
  });
});

describe("tolerance of the open shapes over stdio", () => {
  afterAll(() => {
    Object.assign(sandbox.shapes, DEFAULT_SHAPES);
  });

  it("a bare-array history", async () => {
    await call("generate_video", { prompt: "listed", wait: false });
    sandbox.shapes.listShape = "array";
    const { result, structured } = await call("list_videos", {});
    expect(result.isError).toBeFalsy();
    expect((structured?.["items"] as unknown[]).length).toBeGreaterThan(0);
  });

  it("an upload URL under another field name", async () => {
    sandbox.shapes.uploadUrlField = "file_url";
    const { structured } = await call("upload_image", {
      data_base64: tinyPng().toString("base64"),
      filename: "x.png",
    });
    expect(structured?.["url"]).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/media\/uploads\//);
  });

  it("an unfamiliar in-progress status", async () => {
    sandbox.shapes.inProgressStatuses = ["pending", "rendering"];
    const { structured } = await call("generate_video", { prompt: "odd statuses", timeout_seconds: 30 });
    expect(structured?.["status"]).toBe("completed");
  });

  it("an unknown video_id answered as 400", async () => {
    sandbox.shapes.notFoundStatus = 400;
    const { result, text } = await call("get_status", { video_id: "missing" });
    expect(result.isError).toBe(true);
    expect(text).toMatch(/^validation_error: /);
  });

  it("an image answer that is a task", async () => {
    sandbox.shapes.imageShape = "task";
    const { result, structured } = await call("generate_image", { prompt: "later" });
    expect(result.isError).toBeFalsy();
    expect(structured?.["image_urls"]).toEqual([]);
  });
});
