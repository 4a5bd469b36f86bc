/**
 * What the built bin does before a stdio session's first answers, seen from inside the process: node:crypto
 * (about 5 ms to load) waits for the first call that needs a digest, so `initialize` and `tools/list` are
 * answered without it. A preload notes, at each answer the server writes, whether Node has loaded it yet.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { spawnRaw } from "./raw-stdio.js";

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
    const env = {
      HOME: root,
      GENERATION_API_KEY: sandbox.keys.paid,
      GENERATION_BASE_URL: sandbox.baseUrl,
      GENERATION_STATE_DIR: path.join(root, "state"),
    };
    const session = spawnRaw([], env, ["--import", path.join(root, "preload.mjs")]);
    /** Whether node:crypto was loaded when the answer to `id` was written. */
    const cryptoAt = (id: number) =>
      [...session.stderr().matchAll(/^START-PATH (.*)$/gm)]
        .map(([, json]) => JSON.parse(json ?? "{}") as { id: number; crypto: boolean })
        .find((seen) => seen.id === id)?.crypto;
    try {
      const initialize = await session.initialize();
      const list = await session.request("tools/list");
      // The probe can see it: the first call makes the runtime, which names the key by its digest.
      const call = await session.request("tools/call", { name: "get_credits", arguments: {} });
      // stderr is its own pipe: the note of the last answer may come after the answer itself.
      await session.waitFor(() => cryptoAt(Number(call.id)) !== undefined, "the note of the call's answer");
      expect(cryptoAt(Number(initialize.id))).toBe(false);
      expect(cryptoAt(Number(list.id))).toBe(false);
      expect(cryptoAt(Number(call.id))).toBe(true);
    } finally {
      await session.close();
    }
  });
});
