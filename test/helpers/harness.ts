/**
 * An in-process MCP server (the same assembly the CLI uses) wired to a real SDK Client through
 * InMemoryTransport, against a sandbox on 127.0.0.1:0. Fast enough for the tool-layer tests.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { deflateSync, type ZlibOptions } from "node:zlib";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import {
  ListRootsRequestSchema,
  type CallToolResult,
  type Progress,
} from "@modelcontextprotocol/sdk/types.js";
import type { Config } from "../../src/config/index.js";
import { localCaller } from "../../src/auth/caller.js";
import { Logger } from "../../src/logger.js";
import { createRuntime } from "../../src/runtime.js";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle, SandboxOptions } from "../../src/sandbox/types.js";
import { createMcpServer } from "../../src/mcp/server.js";
import type { StateHub } from "../../src/state/records.js";
import { pngChunk } from "../files/fixtures.js";

export interface Harness {
  sandbox: SandboxHandle;
  client: Client;
  config: Config;
  /** A folder inside the allowed dirs, for local images. */
  imagesDir: string;
  /** Everything the server logged (stderr side). */
  logs: string[];
  call(name: string, args?: Record<string, unknown>, options?: CallOptions): Promise<ToolCall>;
  /** Requests the sandbox received since the harness started (or since `mark`). */
  requestsSince(mark: number): SandboxHandle["requests"];
  /** Changes the client's roots and notifies the server (needs `roots` in the options). */
  setRoots(folders: string[]): Promise<void>;
  close(): Promise<void>;
}

export interface CallOptions {
  signal?: AbortSignal;
  onProgress?: (progress: Progress) => void;
}

export interface ToolCall {
  result: CallToolResult;
  text: string;
  structured: Record<string, unknown> | undefined;
}

export interface HarnessOptions {
  sandbox?: SandboxOptions;
  /** Folders the client offers as MCP roots; the client declares the roots capability when given. */
  roots?: string[];
  /**
   * Reuse a running sandbox instead of starting one (a "restarted server" against the same service). The
   * harness does not close it; its owner does.
   */
  reuseSandbox?: SandboxHandle;
  config?: Partial<Config>;
  apiKey?: "paid" | "free" | "poor";
  /** Per-attempt timeout and read retries of the API client (tests keep them small). */
  client?: { timeoutMs?: number; maxRetries?: number };
  /** State shared with other replicas (a Redis hub); local by default. */
  hub?: StateHub;
}

/**
 * The whole Config of a runtime built in a test: quick polls, a 10 s wait, previews on, outputs and state under
 * `root` (its `out` and `state` folders), no service, no HTTP, no Redis; `overrides` on top.
 */
export function testConfig(root: string, overrides: Partial<Config> = {}): Config {
  return {
    apiKey: undefined,
    baseUrl: undefined,
    sandbox: false,
    pollIntervalMs: 25,
    waitTimeoutS: 10,
    outputDir: path.join(root, "out"),
    allowedDirs: [],
    stateDir: path.join(root, "state"),
    outputDirConfigured: true,
    uploadLinkTtlS: 900,
    http: undefined,
    previews: true,
    previewMaxSide: 1024,
    resourceLinks: false,
    redis: undefined,
    settingsForm: "env",
    ...overrides,
  };
}

export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const ownsSandbox = options.reuseSandbox === undefined;
  const sandbox =
    options.reuseSandbox ??
    (await startSandbox({ timings: { queuedMs: 40, processingMs: 160 }, ...options.sandbox }));
  const root = await mkdtemp(path.join(tmpdir(), "generation-mcp-test-"));
  const imagesDir = path.join(root, "images");
  await mkdir(imagesDir);
  const config = testConfig(root, {
    apiKey: sandbox.keys[options.apiKey ?? "paid"],
    baseUrl: sandbox.baseUrl,
    allowedDirs: [imagesDir],
    ...options.config,
  });
  const logs: string[] = [];
  const logger = new Logger("debug", (line) => logs.push(line));
  const runtime = await createRuntime(
    config,
    { baseUrl: config.baseUrl ?? "", apiKey: config.apiKey ?? "" },
    logger,
    "test",
    { timeoutMs: 2000, maxRetries: 1, ...options.client },
    options.hub,
  );
  const server = createMcpServer({
    version: "test",
    session: {
      caller: localCaller(config.apiKey ?? ""),
      advice: "stdio",
      mediaOrigin: new URL(sandbox.baseUrl).origin,
      runtime: async () => runtime,
    },
    revision: { era: "legacy", version: "2025-11-25" },
    negotiates: true,
    logger,
    sessionLog: runtime.logger,
  });
  const client = new Client(
    { name: "harness", version: "1.0.0" },
    { capabilities: options.roots ? { roots: { listChanged: true } } : {} },
  );
  let roots = options.roots ?? [];
  if (options.roots) {
    client.setRequestHandler(ListRootsRequestSchema, () => ({
      roots: roots.map((folder) => ({ uri: pathToFileURL(folder).href })),
    }));
  }
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await server.connect(serverTransport);
  await client.connect(clientTransport);

  return {
    sandbox,
    client,
    config,
    imagesDir,
    logs,
    async call(name, args = {}, callOptions = {}) {
      const result = (await client.callTool({ name, arguments: args }, undefined, {
        timeout: 60_000,
        ...(callOptions.signal && { signal: callOptions.signal }),
        ...(callOptions.onProgress && { onprogress: callOptions.onProgress }),
      })) as CallToolResult;
      const text = result.content.map((part) => (part.type === "text" ? part.text : "")).join("\n");
      return { result, text, structured: result.structuredContent };
    },
    requestsSince: (mark) => sandbox.requests.slice(mark),
    async setRoots(folders) {
      roots = folders;
      await client.sendRootsListChanged();
    },
    async close() {
      await client.close();
      await server.close();
      await runtime.close();
      if (ownsSandbox) await sandbox.close();
      await rm(root, { recursive: true, force: true });
    },
  };
}

/** A valid, decodable PNG of `width` x `height` grey pixels. */
export function tinyPng(width = 2, height = 2): Buffer {
  const rows = Buffer.alloc((width + 1) * height, 0x80);
  for (let row = 0; row < height; row++) rows[row * (width + 1)] = 0;
  return greyPng(width, height, rows);
}

/**
 * A PNG of `width` x `height` 8-bit grey pixels made of `rows`, the image data before compression (each row a
 * filter byte, then a byte a pixel), compressed with `deflate`.
 */
export function greyPng(width: number, height: number, rows: Buffer, deflate: ZlibOptions = {}): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 0, 0, 0, 0], 8); // 8-bit greyscale
  return Buffer.concat([
    Buffer.from("89504e470d0a1a0a", "hex"),
    pngChunk("IHDR", header),
    pngChunk("IDAT", deflateSync(rows, deflate)),
    pngChunk("IEND", Buffer.alloc(0)),
  ]);
}

export async function writeImage(dir: string, name: string, bytes: Buffer = tinyPng()): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, bytes);
  return file;
}
