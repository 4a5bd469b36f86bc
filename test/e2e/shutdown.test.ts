/**
 * SIGTERM while calls are running: each one answers before the process exits, a started task with its
 * video_id and "still processing" (never lost), a call that had not started anything with a plain
 * "cancelled" line; no stack trace anywhere; the process is gone within a few seconds.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult, Progress } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { CLI } from "../helpers/stdio.js";

let sandbox: SandboxHandle;
let dir: string;

beforeAll(async () => {
  sandbox = await startSandbox({ timings: { queuedMs: 60_000, processingMs: 60_000 } });
  dir = await mkdtemp(path.join(tmpdir(), "generation-mcp-shutdown-"));
});
afterAll(async () => {
  await sandbox?.close();
  await rm(dir, { recursive: true, force: true });
});

const textOf = (result: CallToolResult) =>
  result.content.map((part) => (part.type === "text" ? part.text : "")).join("\n");

describe("graceful shutdown", () => {
  it("answers every running call, loses no video_id, prints no stack, and exits promptly", async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI],
      env: {
        PATH: process.env["PATH"] ?? "",
        HOME: dir,
        GENERATION_API_KEY: sandbox.keys.paid,
        GENERATION_BASE_URL: sandbox.baseUrl,
        GENERATION_STATE_DIR: path.join(dir, "state"),
        GENERATION_POLL_INTERVAL_MS: "200",
      },
      stderr: "pipe",
    });
    let stderr = "";
    transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const client = new Client({ name: "shutdown", version: "1" });
    await client.connect(transport);
    const pid = transport.pid;
    expect(pid).toEqual(expect.any(Number));

    const started: string[] = [];
    const onprogress = (progress: Progress) => {
      const id = /video_id (\S+):/.exec(progress.message ?? "")?.[1];
      if (id) started.push(id);
    };
    const call = (name: string, args: Record<string, unknown>) =>
      client.callTool({ name, arguments: args }, undefined, {
        timeout: 60_000,
        onprogress,
      }) as Promise<CallToolResult>;
    const waits = [
      call("generate_video", { prompt: "a long render" }),
      call("generate_video", { prompt: "another long render", duration: 3 }),
    ];
    // Both tasks exist and are being waited for.
    const until = Date.now() + 10_000;
    while (started.length < 2 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(started.length).toBeGreaterThanOrEqual(2);
    sandbox.faults.latency("credits", 30_000);
    const read = call("get_credits", {});
    await new Promise((resolve) => setTimeout(resolve, 200));

    const exited = new Promise<number | null>((resolve) => {
      const check = setInterval(() => {
        try {
          process.kill(pid ?? -1, 0);
        } catch {
          clearInterval(check);
          resolve(Date.now());
        }
      }, 20);
    });
    const signalledAt = Date.now();
    process.kill(pid ?? -1, "SIGTERM");

    const answers = await Promise.all(waits);
    for (const answer of answers) {
      expect(answer.isError, textOf(answer)).toBeFalsy();
      expect(answer.structuredContent).toMatchObject({ status: "queued" });
      expect(started).toContain((answer.structuredContent as { video_id: string }).video_id);
      expect(textOf(answer)).toMatch(/get_status/);
    }
    const credits = await read;
    expect(credits.isError).toBe(true);
    expect(textOf(credits)).toMatch(/^cancelled: the server is shutting down/);

    const exitedAt = await exited;
    expect(Number(exitedAt) - signalledAt).toBeLessThan(8000);
    expect(stderr).not.toMatch(/\n\s+at /);
    expect(stderr).not.toMatch(/Unhandled|TypeError|ReferenceError/);
    sandbox.faults.latency("credits", 0);
  }, 60_000);
});
