/**
 * MCP log notifications follow the protocol, seen on the built bin's raw stdout: the first thing the
 * server writes is the initialize result (its start-up lines stay on stderr); nothing goes out before the
 * client's notifications/initialized, and what was logged before is not replayed; until the client sets a
 * level it gets warnings and above, after that exactly the level it asked for.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { spawnRaw, type Message, type RawSession } from "./raw-stdio.js";

let sandbox: SandboxHandle;
let root: string;
let session: RawSession;

beforeAll(async () => {
  sandbox = await startSandbox({ timings: { queuedMs: 20, processingMs: 80 } });
  root = await mkdtemp(path.join(tmpdir(), "generation-mcp-hygiene-"));
  session = spawnRaw([], {
    HOME: root,
    GENERATION_API_KEY: sandbox.keys.paid,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_POLL_INTERVAL_MS: "100",
    GENERATION_STATE_DIR: path.join(root, "state"),
  });
});

afterAll(async () => {
  await session?.close();
  await sandbox?.close();
  await rm(root, { recursive: true, force: true });
});

const logNotes = () => session.messages.filter((message) => message.method === "notifications/message");
const levelOf = (note: Message) => (note["params"] as { level: string }).level;

/** Starts a short video, waits for it, and returns its id. */
async function makeVideo(prompt: string): Promise<string> {
  const answer = await session.request("tools/call", {
    name: "generate_video",
    arguments: { prompt, duration: 1, wait: true },
  });
  const result = answer["result"] as { isError?: boolean; structuredContent?: { video_id?: string } };
  expect(result.isError, JSON.stringify(answer)).toBeFalsy();
  return String(result.structuredContent?.video_id);
}

/** A round trip, so every notification the server wrote before answering has arrived. */
const settle = () => session.request("ping");

describe("log notifications over stdio", () => {
  it("writes nothing before the initialize result, and nothing to log before notifications/initialized", async () => {
    // The start-up lines are logged (stderr shows them) before any client message arrives.
    await session.waitFor(() => session.stderr().includes("ready on stdio"), "the ready line on stderr");
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(session.stdout()).toBe("");

    const init = await session.request("initialize", {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "raw-e2e", version: "1.0.0" },
    });
    expect(session.messages[0]).toBe(init);
    expect(init).toMatchObject({ jsonrpc: "2.0", id: 1, result: { serverInfo: { name: "generation-mcp" } } });
    expect((init["result"] as { capabilities: Record<string, unknown> }).capabilities).toHaveProperty(
      "logging",
    );

    // A call before notifications/initialized logs on stderr but sends no notification.
    const early = await makeVideo("before initialized");
    await settle();
    expect(session.stderr()).toContain(early);
    expect(logNotes()).toEqual([]);

    await session.write({ jsonrpc: "2.0", method: "notifications/initialized" });
    // Until the client sets a level it hears warnings and above only: an info line stays on stderr (some
    // clients report every notification they did not ask for as an error).
    const quiet = await makeVideo("after initialized, no level set");
    await settle();
    expect(session.stderr()).toContain(quiet);
    expect(logNotes()).toEqual([]);

    expect(await session.request("logging/setLevel", { level: "info" })).toMatchObject({ result: {} });
    const later = await makeVideo("after initialized, at info");
    await session.waitFor(
      () => logNotes().some((note) => JSON.stringify(note).includes(later)),
      "a log notification about the video at info level",
    );
    await settle();
    // Nothing logged before was replayed; no debug line reached a client that never asked for one.
    expect(logNotes().some((note) => JSON.stringify(note).includes(early))).toBe(false);
    expect(logNotes().some((note) => JSON.stringify(note).includes(quiet))).toBe(false);
    expect(logNotes().map(levelOf)).not.toContain("debug");
    expect(session.badLines).toEqual([]);
  });

  it("sends debug lines once the client sets logging/setLevel debug, and only errors once it sets error", async () => {
    const before = logNotes().length;
    const answer = await session.request("logging/setLevel", { level: "debug" });
    expect(answer).toMatchObject({ result: {} });
    const watched = await makeVideo("at debug level");
    await session.waitFor(
      () =>
        logNotes()
          .slice(before)
          .some((note) => levelOf(note) === "debug" && JSON.stringify(note).includes(watched)),
      "a debug notification about the video",
    );

    expect(await session.request("logging/setLevel", { level: "error" })).toMatchObject({ result: {} });
    const quiet = logNotes().length;
    const unseen = await makeVideo("at error level");
    await settle();
    expect(session.stderr()).toContain(unseen);
    expect(logNotes().slice(quiet)).toEqual([]);
    expect(session.badLines).toEqual([]);
  });

  it("refuses an unknown level with a JSON-RPC error and keeps the level it had", async () => {
    const answer = await session.request("logging/setLevel", { level: "verbose" });
    expect(answer["error"]).toMatchObject({ code: expect.any(Number) });
    const quiet = logNotes().length;
    await makeVideo("still at error level");
    await settle();
    expect(logNotes().slice(quiet)).toEqual([]);
  });
});
