/**
 * Every call answers inside a client's patience, with the default settings, whatever the service does: a
 * service that never sends headers, drips its body, never answers a start, stalls an upload, or says
 * "no requests left" with a reset nobody can read. Default wait window: 45 s; clients cut a call at about
 * 60 s. Each case runs the built bin over stdio with no timing settings of its own, all at once.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { greyPng } from "../helpers/harness.js";
import { connectStdio, type StdioSession } from "../helpers/stdio.js";

/** The default window (45 s) plus a small margin. */
const PATIENCE_MS = 50_000;
const NEVER_MS = 10 * 60 * 1000;

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  await Promise.allSettled(cleanup.splice(0).map((step) => step()));
});

async function serverFor(
  arm: (sandbox: SandboxHandle) => void,
): Promise<{ session: StdioSession; dir: string }> {
  const sandbox = await startSandbox({ timings: { queuedMs: 40, processingMs: 160 } });
  const dir = await mkdtemp(path.join(tmpdir(), "generation-mcp-patience-"));
  const session = await connectStdio([], {
    HOME: dir,
    GENERATION_API_KEY: sandbox.keys.paid,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_STATE_DIR: path.join(dir, "state"),
    GENERATION_ALLOWED_DIRS: dir,
    GENERATION_OUTPUT_DIR: path.join(dir, "out"),
  });
  cleanup.push(
    () => session.close(),
    () => sandbox.close(),
    () => rm(dir, { recursive: true, force: true }),
  );
  arm(sandbox);
  return { session, dir };
}

async function timed(session: StdioSession, name: string, args: Record<string, unknown>) {
  const started = Date.now();
  const result = (await session.client.callTool({ name, arguments: args }, undefined, {
    timeout: 5 * 60_000,
  })) as CallToolResult;
  const text = result.content.map((part) => (part.type === "text" ? part.text : "")).join("\n");
  return { result, text, elapsed: Date.now() - started };
}

/** A real PNG of about `bytes` (noise does not compress), so the upload is large and passes every check. */
function noisePng(bytes: number): Buffer {
  const width = 1024;
  const height = Math.ceil(bytes / width);
  const rows = Buffer.alloc((width + 1) * height);
  const noise = randomBytes(width * height);
  for (let row = 0; row < height; row++)
    noise.copy(rows, row * (width + 1) + 1, row * width, (row + 1) * width);
  return greyPng(width, height, rows, { level: 1 });
}

describe.concurrent("every call answers inside the client's patience (default settings)", () => {
  it("get_credits against a service that never sends its headers", async () => {
    const { session } = await serverFor((sandbox) => sandbox.faults.latency("credits", NEVER_MS));
    const call = await timed(session, "get_credits", {});
    expect(call.elapsed).toBeLessThan(PATIENCE_MS);
    expect(call.text).toMatch(/^timeout: /);
  }, 120_000);

  it("list_videos against a service that drips its body", async () => {
    const { session } = await serverFor((sandbox) =>
      sandbox.faults.dripBody("videos", { chunkDelayMs: 4000, chunks: 60, count: 10 }),
    );
    const call = await timed(session, "list_videos", {});
    expect(call.elapsed).toBeLessThan(PATIENCE_MS);
    expect(call.text).toMatch(/^timeout: /);
  }, 120_000);

  it("generate_video whose start never answers keeps its 'a charge is possible' warning", async () => {
    const { session } = await serverFor((sandbox) => sandbox.faults.latency("generate", NEVER_MS));
    const call = await timed(session, "generate_video", { prompt: "a slow start" });
    expect(call.elapsed).toBeLessThan(PATIENCE_MS);
    expect(call.text).toMatch(/^timeout: /);
    expect(call.text).toMatch(/charge is possible/i);
  }, 120_000);

  it("upload_image whose upload stalls", async () => {
    const { session, dir } = await serverFor((sandbox) => sandbox.faults.latency("upload", NEVER_MS));
    const file = path.join(dir, "big.png");
    await writeFile(file, noisePng(3 * 1024 * 1024));
    const call = await timed(session, "upload_image", { path: file });
    expect(call.elapsed).toBeLessThan(PATIENCE_MS);
    expect(call.text).toMatch(/^timeout: /);
  }, 120_000);

  it.each([
    ["unparsable", "soon"],
    ["absurd", "99999999999999999"],
  ])(
    "X-RateLimit-Remaining: 0 with an %s reset does not hold calls for a window",
    async (_name, reset) => {
      const { session } = await serverFor((sandbox) =>
        sandbox.faults.headersNext(
          "credits",
          { "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset },
          1,
        ),
      );
      const first = await timed(session, "get_credits", {});
      expect(first.result.isError, first.text).toBeFalsy();
      const second = await timed(session, "get_credits", {});
      expect(second.result.isError, second.text).toBeFalsy();
      expect(second.elapsed).toBeLessThan(10_000);
    },
    120_000,
  );
});
