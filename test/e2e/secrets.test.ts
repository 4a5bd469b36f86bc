/**
 * The API key never leaves through any byte the server emits. A mixed session over stdio (the built bin)
 * against a sandbox whose key is long and distinctive, with error paths that try hard to echo it: forced
 * errors whose message carries the key or an Authorization header, a failed task whose reason names it,
 * a prompt, a file name and a video_id made of it, HTML pages, resets. Every message on stdout (results,
 * progress and log notifications included) and all of stderr are scanned. The CLI's own outputs too.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { tinyPng } from "../helpers/harness.js";
import { outputOf } from "../helpers/processes.js";
import { CLI, connectStdio, type StdioSession } from "../helpers/stdio.js";

const alnum = (length: number) =>
  randomBytes(length * 2)
    .toString("base64")
    .replace(/[^A-Za-z0-9]/g, "")
    .slice(0, length);
const KEY = `sk-live-${alnum(40)}`;
const OTHER_KEY = `sk-live-${alnum(40)}`;

let sandbox: SandboxHandle;
let session: StdioSession;
let root: string;
let imagesDir: string;

beforeAll(async () => {
  sandbox = await startSandbox({
    timings: { queuedMs: 30, processingMs: 120 },
    accounts: [
      { key: KEY, name: "paid", credits: 10_000, paidAccess: true, subscription: "pro" },
      { key: OTHER_KEY, name: "free", credits: 100, paidAccess: false, subscription: null },
    ],
  });
  root = await mkdtemp(path.join(tmpdir(), "generation-mcp-secrets-"));
  imagesDir = path.join(root, "images");
  await mkdir(imagesDir);
  session = await connectStdio([], {
    HOME: root,
    GENERATION_API_KEY: KEY,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_POLL_INTERVAL_MS: "100",
    GENERATION_OUTPUT_DIR: path.join(root, "out"),
    GENERATION_ALLOWED_DIRS: imagesDir,
    GENERATION_STATE_DIR: path.join(root, "state"),
  });
}, 30_000);

afterAll(async () => {
  await session?.close();
  await sandbox?.close();
  await rm(root, { recursive: true, force: true });
});

const call = async (name: string, args: Record<string, unknown>, onprogress?: (message: string) => void) =>
  (await session.client.callTool({ name, arguments: args }, undefined, {
    timeout: 30_000,
    ...(onprogress && {
      onprogress: (update: { message?: string | undefined }) => onprogress(String(update.message)),
    }),
  })) as CallToolResult;
const textOf = (result: CallToolResult) =>
  result.content.map((part) => (part.type === "text" ? part.text : "")).join("\n");

// The three parts run side by side: each waits on processes of its own.
describe.concurrent("a hostile session over stdio never emits the API key", () => {
  it("runs every tool through error paths that try to echo the key", async () => {
    await session.client.setLoggingLevel("debug");
    const seen: string[] = [];
    const faults = sandbox.faults;

    const first = await call("get_credits", {});
    expect(first.isError, textOf(first)).toBeFalsy();

    // Forced errors whose messages carry the key, bare and as an Authorization header.
    faults.failNext("credits", { status: 401, code: "unauthorized", message: `Invalid API key ${KEY}` });
    seen.push(textOf(await call("get_credits", {})));
    faults.failNext("credits", {
      status: 500,
      code: "internal_error",
      message: `upstream rejected headers {Authorization: Bearer ${KEY}}`,
    });
    seen.push(textOf(await call("get_credits", {})));
    faults.failNext("videos", { status: 400, code: "validation_error", message: `bad key=${KEY};` });
    seen.push(textOf(await call("list_videos", {})));
    faults.failNext("generate", {
      status: 403,
      code: "insufficient_credits",
      message: `account ${KEY} is short`,
    });
    seen.push(textOf(await call("generate_video", { prompt: "short of credits", duration: 1 })));

    // HTML pages and resets on reads (retried, so logged) and on a start.
    faults.malformedNext("credits", "html", { status: 502 });
    seen.push(textOf(await call("get_credits", {})));
    faults.dropNext("credits", { phase: "before" });
    seen.push(textOf(await call("get_credits", {})));
    faults.failNext("generate", {
      status: 502,
      code: "upstream_error",
      message: `provider saw Bearer ${KEY}`,
    });
    seen.push(textOf(await call("generate_video", { prompt: "ambiguous start", duration: 1, wait: false })));

    // The key as user input: a prompt, a file name, a video_id.
    const progress: string[] = [];
    const video = await call("generate_video", { prompt: `a video about ${KEY}`, duration: 1 }, (message) =>
      progress.push(message),
    );
    expect(video.isError, textOf(video)).toBeFalsy();
    seen.push(textOf(video));
    seen.push(textOf(await call("generate_video", { prompt: `dry ${KEY}`, dry_run: true })));
    seen.push(textOf(await call("list_videos", { limit: 10 })));
    seen.push(textOf(await call("get_status", { video_id: KEY })));
    seen.push(
      textOf(
        await call("upload_image", { data_base64: tinyPng().toString("base64"), filename: `${KEY}.png` }),
      ),
    );
    seen.push(textOf(await call("upload_image", { path: path.join(imagesDir, `${KEY}.png`) })));

    // A task that fails with a reason naming the key, seen through a wait with progress. Armed before the
    // start: a task of 150 ms may be over before a loaded machine has read the start's answer.
    faults.failNextTask(`render failed for Authorization: Bearer ${KEY}`);
    const started = await call("generate_video", { prompt: "will fail", duration: 1, wait: false });
    const id = String(started.structuredContent?.["video_id"]);
    const failed = await call("get_status", { video_id: id, wait: true }, (message) =>
      progress.push(message),
    );
    expect(failed.structuredContent?.["status"]).toBe("failed");
    seen.push(textOf(failed));

    // The image endpoint with a forced error and a success.
    faults.failNext("generate-image", { status: 500, code: "internal_error", message: `key ${KEY}` });
    seen.push(textOf(await call("generate_image", { prompt: "err image" })));
    seen.push(textOf(await call("generate_image", { prompt: `an image of ${KEY}` })));

    // The key was really redacted (not merely absent): the echoing paths show the mask.
    expect(seen.join("\n")).toContain("[redacted]");
    expect(progress.length).toBeGreaterThan(0);

    const stdout = session.messages.join("\n");
    expect(session.messages.some((message) => message.includes("notifications/message"))).toBe(true);
    expect(session.messages.some((message) => message.includes("notifications/progress"))).toBe(true);
    for (const secret of [KEY, KEY.slice(8), OTHER_KEY]) {
      expect(stdout).not.toContain(secret);
      expect(session.stderr()).not.toContain(secret);
    }
    // The sandbox really received the key, so the scan above is meaningful.
    expect(sandbox.requests.some((request) => request.key === KEY)).toBe(true);
  }, 60_000);
});

describe.concurrent("no network listener but the sandbox on loopback, when asked", () => {
  it("--sandbox serves on 127.0.0.1 only, and its service refuses requests without a key", async () => {
    const state = await mkdtemp(path.join(tmpdir(), "generation-mcp-loopback-"));
    const sandboxed = await connectStdio(["--sandbox"], { HOME: state, GENERATION_STATE_DIR: state });
    try {
      await sandboxed.client.listTools();
      const deadline = Date.now() + 5000;
      while (!/http:\/\/[^\s]+\/api\/v1/.test(sandboxed.stderr()) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const baseUrl = /(http:\/\/[^\s]+\/api\/v1)/.exec(sandboxed.stderr())?.[1] ?? "";
      expect(baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1$/);
      const anonymous = await fetch(`${baseUrl}/credits`);
      expect(anonymous.status).toBe(401);
    } finally {
      await sandboxed.close();
      await rm(state, { recursive: true, force: true });
    }
  });
});

describe.concurrent("the CLI's own outputs never carry the key from the environment", () => {
  const run = (args: string[], env: Record<string, string>) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env["PATH"] ?? "", HOME: tmpdir(), ...env },
      timeout: 15_000,
    });
    child.stdin.end();
    return outputOf(child);
  };

  it.each([
    ["--help", ["--help"], { GENERATION_API_KEY: KEY }],
    ["--version", ["--version"], { GENERATION_API_KEY: KEY }],
    ["key without base URL", [], { GENERATION_API_KEY: KEY }],
    [
      "a base URL that embeds the key",
      [],
      { GENERATION_API_KEY: KEY, GENERATION_BASE_URL: `not a url ${KEY}` },
    ],
    [
      "a base URL with the key as userinfo",
      [],
      { GENERATION_API_KEY: KEY, GENERATION_BASE_URL: `ftp://u:${KEY}@h/api/v1` },
    ],
    [
      "the key in another variable",
      [],
      {
        GENERATION_API_KEY: KEY,
        GENERATION_BASE_URL: "http://127.0.0.1:9/api/v1",
        GENERATION_POLL_INTERVAL_MS: KEY,
      },
    ],
    ["an unknown flag", ["--sandbx", KEY], { GENERATION_API_KEY: KEY }],
  ] as const)("%s", async (_name, args, env) => {
    const result = await run([...args], { ...env });
    expect(result.stdout + result.stderr, "the command said something").not.toBe("");
    expect(result.stdout + result.stderr).not.toContain(KEY);
    expect(result.stdout + result.stderr).not.toContain(KEY.slice(8));
  });
});
