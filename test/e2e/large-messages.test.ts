/**
 * Large inputs fail loudly over stdio (the built bin, raw pipes, a sandbox behind it): upload_image's
 * data_base64 limit fits one message, so the largest image it advertises uploads; a longer value is a
 * validation_error pointing to `path`; a line over the transport's limit is answered with a JSON-RPC
 * error for its id and one stderr line, and the session goes on. stdout stays JSON lines throughout.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { crc32 } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { MAX_DATA_BASE64_BYTES, MAX_DATA_BASE64_CHARS } from "../../src/tools/upload-image.js";
import { MAX_MESSAGE_BYTES } from "../../src/config/index.js";
import { tinyPng } from "../helpers/harness.js";
import { CLI } from "../helpers/stdio.js";
import { spawnRaw, type Message, type RawSession } from "./raw-stdio.js";

let sandbox: SandboxHandle;
let root: string;
let session: RawSession;

beforeAll(async () => {
  sandbox = await startSandbox();
  root = await mkdtemp(path.join(tmpdir(), "generation-mcp-large-"));
  session = spawnRaw([], {
    HOME: root,
    GENERATION_API_KEY: sandbox.keys.paid,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_STATE_DIR: path.join(root, "state"),
  });
  await session.initialize();
});

afterAll(async () => {
  await session?.close();
  await sandbox?.close();
  await rm(root, { recursive: true, force: true });
});

/** A valid PNG of exactly `size` bytes: the tiny PNG with a tEXt chunk before IEND (nothing after it). */
function pngOfSize(size: number): Buffer {
  const png = tinyPng(4, 4);
  const iend = png.subarray(png.length - 12);
  const padding = size - png.length - 12 - "Comment\0".length;
  const data = Buffer.concat([Buffer.from("Comment\0", "latin1"), Buffer.alloc(padding, 0x61)]);
  const body = Buffer.concat([Buffer.from("tEXt", "ascii"), data]);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  const out = Buffer.concat([png.subarray(0, png.length - 12), length, body, crc, iend]);
  expect(out.length).toBe(size);
  return out;
}

const callTool = (name: string, args: Record<string, unknown>) =>
  session.request("tools/call", { name, arguments: args }, 60_000);
const resultOf = (answer: Message) =>
  answer["result"] as {
    isError?: boolean;
    content: Array<{ text?: string }>;
    structuredContent?: { url?: string };
  };

describe("upload_image data_base64 and the stdio message limit agree", () => {
  it("advertises the real maximum, derived from the message limit", async () => {
    expect(MAX_DATA_BASE64_CHARS).toBeLessThan(MAX_MESSAGE_BYTES - 1530 - 200);
    expect(MAX_DATA_BASE64_BYTES).toBe((MAX_DATA_BASE64_CHARS / 4) * 3);
    const answer = await session.request("tools/list");
    type Listed = {
      name: string;
      description: string;
      inputSchema: { properties: Record<string, { maxLength?: number; description: string }> };
    };
    const tools = (answer["result"] as { tools: Listed[] }).tools;
    const upload = tools.find((tool) => tool.name === "upload_image");
    const field = upload?.inputSchema.properties["data_base64"] ?? { description: "" };
    expect(field.maxLength).toBe(MAX_DATA_BASE64_CHARS);
    const shown = (Math.floor((MAX_DATA_BASE64_BYTES / 1024 / 1024) * 10) / 10).toFixed(1);
    expect(field.description).toContain(`${shown} MB`);
    expect(field.description).toMatch(/pass path/);
    expect(upload?.description).toContain(`${shown} MB`);
    expect(upload?.description).toMatch(/path for a local file of at most 10 MB/);
  });

  it("uploads an image of the largest advertised size sent as data_base64", async () => {
    const png = pngOfSize(MAX_DATA_BASE64_BYTES - 2);
    const data = png.toString("base64");
    expect(data.length).toBeLessThanOrEqual(MAX_DATA_BASE64_CHARS);
    const answer = await callTool("upload_image", { data_base64: data, filename: "big.png" });
    const result = resultOf(answer);
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    expect(result.structuredContent?.url).toMatch(/^http:\/\/127\.0\.0\.1/);
    const received = sandbox.requests.filter((request) => request.route === "upload");
    expect(received.at(-1)?.status).toBe(200);
  });

  it("refuses a data_base64 over its limit (but within one message) with validation_error naming path", async () => {
    const data = "A".repeat(MAX_DATA_BASE64_CHARS + 4);
    const before = sandbox.requests.length;
    const answer = await callTool("upload_image", { data_base64: data, filename: "big.png" });
    const result = resultOf(answer);
    expect(result.isError).toBe(true);
    const text = result.content.map((part) => part.text ?? "").join("\n");
    expect(text).toMatch(/^validation_error: .*data_base64: must be at most \d+ characters/);
    expect(text).toMatch(/pass its path instead/);
    expect(sandbox.requests.length).toBe(before);
  });
});

describe("a line over the stdio limit", () => {
  it("is answered with a JSON-RPC error for its id, logged as one stderr line, and the session goes on", async () => {
    const stderrBefore = session.stderr().length;
    const id = 9001;
    const data = "A".repeat(12 * 1024 * 1024);
    // The SDK client's own order: method and params first, the id last.
    const line = JSON.stringify({
      method: "tools/call",
      params: { name: "upload_image", arguments: { data_base64: data, filename: "huge.png" } },
      jsonrpc: "2.0",
      id,
    });
    await session.write(line);
    await session.waitFor(() => session.messages.some((message) => message.id === id), "the error answer");
    const answer = session.messages.find((message) => message.id === id);
    expect(answer).toMatchObject({ jsonrpc: "2.0", id, error: { code: -32600 } });
    const message = String((answer?.["error"] as { message?: string }).message);
    expect(message).toContain(`${Buffer.byteLength(line)} bytes`);
    expect(message).toContain(`exceeded the ${MAX_MESSAGE_BYTES}-byte`);
    expect(message).toMatch(/pass its path to upload_image \(path\) instead of data_base64/);

    await session.waitFor(
      () => /skipped a \d+-byte message/.test(session.stderr().slice(stderrBefore)),
      "log",
    );
    const logged = session
      .stderr()
      .slice(stderrBefore)
      .split("\n")
      .filter((entry) => entry.includes("skipped"));
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatch(
      new RegExp(
        `^\\[generation-mcp\\] warning: skipped a ${Buffer.byteLength(line)}-byte message on stdin \\(tools/call id ${id}\\): over the ${MAX_MESSAGE_BYTES}-byte limit`,
      ),
    );

    const credits = resultOf(await callTool("get_credits", {}));
    expect(credits.isError).toBeFalsy();
    expect(session.child.exitCode).toBeNull();
  });

  it("left stdout as JSON lines only, every one of them parsed", () => {
    expect(session.badLines).toEqual([]);
    expect(session.stdout().endsWith("\n")).toBe(true);
    expect(session.stdout().split("\n").filter(Boolean)).toHaveLength(session.messages.length);
  });
});

describe("the stdio transport's resources", () => {
  it("keeps memory bounded while skipping a 200 MiB line (only a head and a tail are kept)", () => {
    const module = pathToFileURL(path.resolve(import.meta.dirname, "../../dist/transports/stdio.js")).href;
    const script = `
      import { PassThrough, Writable } from "node:stream";
      const { stdioTransport } = await import(${JSON.stringify(module)});
      const stdin = new PassThrough();
      let out = "";
      const stdout = new Writable({ write(chunk, _e, done) { out += chunk; done(); } });
      const transport = stdioTransport({ stdin, stdout, logger: { log() {} } });
      await transport.start();
      gc();
      const before = process.memoryUsage().arrayBuffers;
      stdin.emit("data", Buffer.from('{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"x":"'));
      let peak = 0;
      for (let i = 0; i < 200; i++) {
        stdin.emit("data", Buffer.alloc(1024 * 1024, 0x61));
        if (i % 20 === 19) {
          // Freed buffers are released after the collection, on a later turn.
          gc();
          await new Promise((resolve) => setImmediate(resolve));
          gc();
          peak = Math.max(peak, process.memoryUsage().arrayBuffers - before);
        }
      }
      stdin.emit("data", Buffer.from('"}}\\n'));
      await new Promise((resolve) => setImmediate(resolve));
      process.stdout.write(JSON.stringify({ peak, out }));
    `;
    const run = spawnSync(process.execPath, ["--expose-gc", "--input-type=module", "-e", script], {
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(run.status, run.stderr).toBe(0);
    const { peak, out } = JSON.parse(run.stdout) as { peak: number; out: string };
    // Buffering the line would hold 200 MiB; the transport holds a few KiB (GC noise aside).
    expect(peak).toBeLessThan(16 * 1024 * 1024);
    expect(JSON.parse(out)).toMatchObject({ id: 5, error: { code: -32600 } });
  });

  it("exits cleanly, without a crash, when the client goes away and stdout breaks (EPIPE)", async () => {
    const child = spawn(process.execPath, [CLI], {
      env: {
        PATH: process.env["PATH"] ?? "",
        HOME: root,
        GENERATION_API_KEY: sandbox.keys.paid,
        GENERATION_BASE_URL: sandbox.baseUrl,
        GENERATION_STATE_DIR: path.join(root, "state-epipe"),
      },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    const deadline = Date.now() + 15_000;
    while (!stderr.includes("ready on stdio") && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // The client closes its end of stdout but keeps stdin open, then asks for something.
    child.stdout.destroy();
    for (let id = 1; id <= 5; id++)
      child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method: "ping" })}\n`);
    const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
    const code = await exited;
    clearTimeout(timer);
    expect(code, stderr).toBe(0);
    expect(stderr).not.toMatch(/Unhandled|uncaught|at .*\(node:/i);
  });
});
