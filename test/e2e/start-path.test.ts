/**
 * What the built bin does before a stdio session's first answers, seen from inside the process: node:crypto
 * (about 5 ms to load) waits for the first call that needs a digest, so `initialize` and `tools/list` are
 * answered without it. A preload notes, at each answer the server writes, whether Node has loaded it yet.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { CLI } from "../helpers/stdio.js";

// Runs before the bin: at every line with an id written on stdout, one line on stderr saying so.
const PRELOAD = `
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = (chunk, ...rest) => {
  const id = /"id":(\\d+)/.exec(String(chunk))?.[1];
  if (id !== undefined) {
    const crypto = process.moduleLoadList.includes("NativeModule crypto");
    process.stderr.write("START-PATH " + JSON.stringify({ id: Number(id), crypto }) + "\\n");
  }
  return write(chunk, ...rest);
};
`;

let sandbox: SandboxHandle;
let root: string;

beforeAll(async () => {
  sandbox = await startSandbox({});
  root = await mkdtemp(path.join(tmpdir(), "generation-mcp-start-path-"));
  await writeFile(path.join(root, "preload.mjs"), PRELOAD);
});

afterAll(async () => {
  await sandbox?.close();
  await rm(root, { recursive: true, force: true });
});

describe("the stdio start path", () => {
  it("answers initialize and tools/list before node:crypto loads; the first call loads it", async () => {
    const child = spawn(process.execPath, ["--import", path.join(root, "preload.mjs"), CLI], {
      env: {
        PATH: process.env["PATH"] ?? "",
        HOME: root,
        GENERATION_API_KEY: sandbox.keys.paid,
        GENERATION_BASE_URL: sandbox.baseUrl,
        GENERATION_STATE_DIR: path.join(root, "state"),
      },
      stdio: ["pipe", "pipe", "pipe"],
    });
    // Read as it comes (no polling delay): the runtime, and node:crypto with it, is made 250 ms after start.
    let stderr = "";
    const answered = new Map<number, boolean>();
    const waiting = new Map<number, (crypto: boolean) => void>();
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
      for (const [, json] of chunk.matchAll(/^START-PATH (.*)$/gm)) {
        const seen = JSON.parse(json ?? "{}") as { id: number; crypto: boolean };
        answered.set(seen.id, seen.crypto);
        waiting.get(seen.id)?.(seen.crypto);
      }
    });
    const answer = (id: number) =>
      new Promise<boolean>((resolve, reject) => {
        const seen = answered.get(id);
        if (seen !== undefined) return resolve(seen);
        const timer = setTimeout(() => reject(new Error(`no answer to ${id}; stderr:\n${stderr}`)), 20_000);
        waiting.set(id, (crypto) => {
          clearTimeout(timer);
          resolve(crypto);
        });
      });
    const send = (message: Record<string, unknown>) =>
      child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`);
    try {
      send({
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
      });
      expect(await answer(1)).toBe(false);
      send({ method: "notifications/initialized" });
      send({ id: 2, method: "tools/list", params: {} });
      expect(await answer(2)).toBe(false);
      // The probe can see it: the first call makes the runtime, which names the key by its digest.
      send({ id: 3, method: "tools/call", params: { name: "get_credits", arguments: {} } });
      expect(await answer(3)).toBe(true);
    } finally {
      child.stdin.end();
      child.kill();
    }
  });
});
