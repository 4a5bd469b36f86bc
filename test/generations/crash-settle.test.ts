/**
 * No double charge across a crash or a lost answer. The journal holds the intent of every start (with its
 * Idempotency-Key) before the POST leaves; a start whose answer never came (the process died, the call timed
 * out with "a charge is possible") is settled from the history; while it may still appear, an identical
 * request within the duplicate window sends nothing by itself. Each test reproduces the state a dead process or a lost answer leaves behind.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_ASPECT_RATIO_VIDEO, DEFAULT_DURATION_S, DEFAULT_VIDEO_MODEL } from "../../src/models.js";
import { journalDir } from "../../src/runtime.js";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { JOURNAL_FILE } from "../../src/state/local/journal.js";
import { fingerprintRequest } from "../../src/generations/fingerprint.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { byRoute, credits } from "./support.js";

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

/** What generate_video sends for a bare prompt, and the fingerprint it files it under. */
function bareRequest(prompt: string) {
  const body = {
    prompt,
    generation_type: "text_to_video",
    aspect_ratio: DEFAULT_ASPECT_RATIO_VIDEO,
    duration: DEFAULT_DURATION_S,
  };
  return { body, fingerprint: fingerprintRequest("video", { ...body, model: DEFAULT_VIDEO_MODEL }, []) };
}

/** A started task created straight through the REST interface, as a POST that reached the service would. */
async function startDirectly(sandbox: SandboxHandle, body: Record<string, unknown>): Promise<string> {
  const response = await fetch(`${sandbox.baseUrl}/generate`, {
    method: "POST",
    headers: { authorization: `Bearer ${sandbox.keys.paid}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const answer = (await response.json()) as { data: { video_id: string } };
  return answer.data.video_id;
}

async function setup(): Promise<{ sandbox: SandboxHandle; stateDir: string; journalFile: string }> {
  const sandbox = await startSandbox({ timings: { queuedMs: 40, processingMs: 160 } });
  const stateDir = await mkdtemp(path.join(tmpdir(), "generation-mcp-crash-"));
  cleanup.push(
    () => sandbox.close(),
    () => rm(stateDir, { recursive: true, force: true }),
  );
  const dir = journalDir(stateDir, { baseUrl: sandbox.baseUrl, apiKey: sandbox.keys.paid });
  await mkdir(dir, { recursive: true });
  return { sandbox, stateDir, journalFile: path.join(dir, JOURNAL_FILE) };
}

async function harnessOn(sandbox: SandboxHandle, stateDir: string): Promise<Harness> {
  const h = await startHarness({ reuseSandbox: sandbox, config: { stateDir } });
  cleanup.push(() => h.close());
  return h;
}

async function journalLines(file: string): Promise<Record<string, unknown>[]> {
  return JSON.parse(await readFile(file, "utf8")) as Record<string, unknown>[];
}

describe("a start whose answer was lost is settled before anything pays again", () => {
  it("killed after the POST reached the service: the identical request after restart adopts that task", async () => {
    const { sandbox, stateDir, journalFile } = await setup();
    const { body, fingerprint } = bareRequest("a lighthouse in a storm");
    // The dead process synced its intent, sent the POST (the service charged), and died before the answer.
    const sentAt = Date.now() - 500;
    await writeFile(
      journalFile,
      JSON.stringify([
        { kind: "video", phase: "intent", key: "key-dead-1", fingerprint, started_at: sentAt, request: body },
      ]),
    );
    const charged = await startDirectly(sandbox, body);
    const before = credits({ sandbox } as Harness);

    const h = await harnessOn(sandbox, stateDir);
    const mark = sandbox.requests.length;
    const again = await h.call("generate_video", { prompt: "a lighthouse in a storm", wait: false });
    expect(again.result.isError, again.text).toBeFalsy();
    expect(again.structured).toMatchObject({ video_id: charged, reused: true });
    expect(byRoute(sandbox.requests.slice(mark), "generate")).toEqual([]);
    expect(credits(h)).toBe(before);
    // The journal now holds the task under the dead process's key: its id can never be lost.
    const lines = await journalLines(journalFile);
    expect(lines.at(-1)).toMatchObject({ phase: "started", key: "key-dead-1", id: charged });
  });

  it("killed around its POST with nothing in the history yet: an identical request sends nothing until allow_duplicate says so", async () => {
    const { sandbox, stateDir, journalFile } = await setup();
    const { body, fingerprint } = bareRequest("a paper crane");
    await writeFile(
      journalFile,
      JSON.stringify([
        {
          kind: "video",
          phase: "intent",
          key: "key-dead-2",
          fingerprint,
          started_at: Date.now() - 500,
          request: body,
        },
      ]),
    );
    const before = credits({ sandbox } as Harness);
    const h = await harnessOn(sandbox, stateDir);
    const mark = sandbox.requests.length;
    const call = await h.call("generate_video", { prompt: "a paper crane", wait: false });
    // The start may still reach the service (a proxy or a queue may hold it): this call sends nothing.
    expect(call.result.isError).toBe(true);
    expect(call.text).toMatch(/^timeout: An identical generate_video request was sent \d+ s ago/);
    expect(call.text).toContain("This call sent nothing and charged nothing.");
    expect(byRoute(sandbox.requests.slice(mark), "generate")).toEqual([]);
    expect(credits(h)).toBe(before);

    const forced = await h.call("generate_video", {
      prompt: "a paper crane",
      wait: false,
      allow_duplicate: true,
    });
    expect(forced.result.isError, forced.text).toBeFalsy();
    expect(byRoute(sandbox.requests.slice(mark), "generate")).toHaveLength(1);
    expect(before - credits(h)).toBe(25);
    const lines = await journalLines(journalFile);
    expect(lines.at(-1)).toMatchObject({ phase: "started", id: forced.structured?.["video_id"] });
    expect(lines.at(-1)?.["key"]).not.toBe("key-dead-2");
  });

  it("killed around its POST longer ago than the duplicate window: the identical request is a new one", async () => {
    const { sandbox, stateDir, journalFile } = await setup();
    const { body, fingerprint } = bareRequest("a paper boat");
    await writeFile(
      journalFile,
      JSON.stringify([
        {
          kind: "video",
          phase: "intent",
          key: "key-dead-3",
          fingerprint,
          started_at: Date.now() - 11 * 60_000,
          request: body,
        },
      ]),
    );
    const h = await harnessOn(sandbox, stateDir);
    const mark = sandbox.requests.length;
    const call = await h.call("generate_video", { prompt: "a paper boat", wait: false });
    expect(call.result.isError, call.text).toBeFalsy();
    expect(byRoute(sandbox.requests.slice(mark), "generate")).toHaveLength(1);
    const lines = await journalLines(journalFile);
    expect(lines.find((line) => line["phase"] === "void" && line["key"] === "key-dead-3")).toBeDefined();
  });

  it("an answer lost with 'a charge is possible': the identical retry finds the task instead of paying again", async () => {
    const { sandbox, stateDir } = await setup();
    const h = await harnessOn(sandbox, stateDir);
    const before = credits(h);
    // The service creates the task and the answer is lost; the history cannot be read to settle it now.
    sandbox.faults.dropNext("generate", { phase: "after" });
    sandbox.faults.failNext("videos", { status: 500, code: "internal_error", count: 20 });
    const lost = await h.call("generate_video", { prompt: "a fox in the snow", wait: false });
    expect(lost.result.isError).toBe(true);
    expect(lost.text).toMatch(/charge is possible/i);
    expect(before - credits(h)).toBe(25);
    sandbox.faults.clear();

    const mark = sandbox.requests.length;
    const retry = await h.call("generate_video", { prompt: "a fox in the snow", wait: false });
    expect(retry.result.isError, retry.text).toBeFalsy();
    expect(retry.structured).toMatchObject({ reused: true });
    expect(byRoute(sandbox.requests.slice(mark), "generate")).toEqual([]);
    expect(before - credits(h)).toBe(25);
    const listed = await h.call("list_videos", {});
    expect(JSON.stringify(listed.structured?.["items"])).toContain(String(retry.structured?.["video_id"]));
  });

  it("an image start whose answer was lost is not sent again blindly: the user decides", async () => {
    const { sandbox, stateDir } = await setup();
    const h = await harnessOn(sandbox, stateDir);
    const before = credits(h);
    sandbox.faults.dropNext("generate-image", { phase: "after" });
    const lost = await h.call("generate_image", { prompt: "a red kite" });
    expect(lost.text).toMatch(/charge is possible/i);
    const mark = sandbox.requests.length;
    const again = await h.call("generate_image", { prompt: "a red kite" });
    expect(again.result.isError).toBe(true);
    expect(again.text).toMatch(/^timeout: An identical generate_image request was sent/);
    expect(again.text).toContain("allow_duplicate: true");
    expect(sandbox.requests.slice(mark)).toEqual([]);
    expect(before - credits(h)).toBe(5);
    const forced = await h.call("generate_image", { prompt: "a red kite", allow_duplicate: true });
    expect(forced.result.isError, forced.text).toBeFalsy();
    expect(before - credits(h)).toBe(10);
  });
});
