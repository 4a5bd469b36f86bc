/**
 * Starting paid tasks around the wait: the journal survives a restart, the allow_duplicate guard returns
 * the earlier task (also after a restart), and no failure of the start ever charges twice.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { startHarness, tinyPng, writeImage, type Harness } from "../helpers/harness.js";
import { byRoute, credits, journalText } from "./support.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const roomy = { limit: 10_000, windowMs: 60_000 };

async function harness(options: Parameters<typeof startHarness>[0] = {}): Promise<Harness> {
  const h = await startHarness({
    ...options,
    sandbox: { rateLimit: roomy, ...options.sandbox },
    config: { pollIntervalMs: 30, ...options.config },
  });
  let closed = false;
  const close = h.close.bind(h);
  h.close = async () => {
    if (closed) return;
    closed = true;
    await close();
  };
  cleanups.push(() => h.close());
  return h;
}

/** A sandbox and a state folder that outlive one server: the setting of a restart. */
async function sharedWorld(): Promise<{ sandbox: SandboxHandle; stateDir: string }> {
  const sandbox = await startSandbox({ timings: { queuedMs: 40, processingMs: 160 }, rateLimit: roomy });
  const dir = await mkdtemp(path.join(tmpdir(), "generation-mcp-state-"));
  cleanups.push(async () => {
    await sandbox.close();
    await rm(dir, { recursive: true, force: true });
  });
  return { sandbox, stateDir: path.join(dir, "state") };
}

describe("journal across a restart", () => {
  it("a task started by one server is recovered by the next one sharing the state folder", async () => {
    const { sandbox, stateDir } = await sharedWorld();
    const first = await harness({ reuseSandbox: sandbox, config: { stateDir } });
    const started = await first.call("generate_video", { prompt: "survive a restart", wait: false });
    const videoId = String(started.structured?.["video_id"]);
    // On disk by the time the tool answered, not only at shutdown.
    expect(journalText(stateDir)).toContain(videoId);
    const afterStart = credits(first);
    await first.close();

    const second = await harness({ reuseSandbox: sandbox, config: { stateDir } });
    // The identical request is answered from the journal, not paid again.
    const again = await second.call("generate_video", { prompt: "survive a restart", wait: false });
    expect(again.structured).toMatchObject({ video_id: videoId, reused: true });
    expect(credits(second)).toBe(afterStart);
    const resumed = await second.call("get_status", { video_id: videoId, wait: true });
    expect(resumed.structured).toMatchObject({ video_id: videoId, status: "completed" });
    expect(byRoute(sandbox.requests, "generate")).toHaveLength(1);
  });
});

describe("allow_duplicate guard", () => {
  it("identical starts share one task and one charge; allow_duplicate: true starts a new one", async () => {
    const h = await harness();
    const before = credits(h);
    const first = await h.call("generate_video", { prompt: "the same thing", duration: 2, wait: false });
    const videoId = String(first.structured?.["video_id"]);
    const second = await h.call("generate_video", { prompt: "the same thing", duration: 2 });
    expect(second.structured).toMatchObject({ video_id: videoId, reused: true, status: "completed" });
    expect(second.text).toMatch(/reused/);
    expect(before - credits(h)).toBe(10);
    const third = await h.call("generate_video", {
      prompt: "the same thing",
      duration: 2,
      wait: false,
      allow_duplicate: true,
    });
    expect(third.structured?.["video_id"]).not.toBe(videoId);
    expect(third.structured?.["reused"]).toBeUndefined();
    expect(before - credits(h)).toBe(20);
    expect(byRoute(h.sandbox.requests, "generate")).toHaveLength(2);
  });

  it("concurrent identical starts are charged once", async () => {
    const h = await harness();
    const before = credits(h);
    const results = await Promise.all(
      [0, 1, 2].map(() =>
        h.call("generate_video", { prompt: "at the same moment", duration: 2, wait: false }),
      ),
    );
    const ids = new Set(results.map(({ structured }) => structured?.["video_id"]));
    expect(ids.size).toBe(1);
    expect(results.filter(({ structured }) => structured?.["reused"] === true)).toHaveLength(2);
    expect(before - credits(h)).toBe(10);
    expect(byRoute(h.sandbox.requests, "generate")).toHaveLength(1);
  });

  it("with image_path: same bytes under another name are identical, other bytes are not", async () => {
    const h = await harness();
    const a = await writeImage(h.imagesDir, "a.png", tinyPng(4, 4));
    const b = await writeImage(h.imagesDir, "copy-of-a.png", tinyPng(4, 4));
    const c = await writeImage(h.imagesDir, "c.png", tinyPng(5, 5));
    const before = credits(h);
    const first = await h.call("generate_video", {
      prompt: "animate it",
      image_path: a,
      duration: 2,
      wait: false,
    });
    expect(first.result.isError, first.text).toBeFalsy();
    const videoId = String(first.structured?.["video_id"]);
    const same = await h.call("generate_video", {
      prompt: "animate it",
      image_path: b,
      duration: 2,
      wait: false,
    });
    expect(same.structured).toMatchObject({ video_id: videoId, reused: true });
    const other = await h.call("generate_video", {
      prompt: "animate it",
      image_path: c,
      duration: 2,
      wait: false,
    });
    expect(other.structured?.["video_id"]).not.toBe(videoId);
    expect(other.structured?.["reused"]).toBeUndefined();
    expect(before - credits(h)).toBe(20);
    expect(byRoute(h.sandbox.requests, "generate")).toHaveLength(2);
  });

  it("survives a restart (same state folder, same service)", async () => {
    const { sandbox, stateDir } = await sharedWorld();
    const first = await harness({ reuseSandbox: sandbox, config: { stateDir } });
    const a = await writeImage(first.imagesDir, "a.png", tinyPng(3, 3));
    const started = await first.call("generate_video", {
      prompt: "restart with image",
      image_path: a,
      wait: false,
    });
    const videoId = String(started.structured?.["video_id"]);
    const afterStart = credits(first);
    await first.close();

    const second = await harness({ reuseSandbox: sandbox, config: { stateDir } });
    const b = await writeImage(second.imagesDir, "renamed.png", tinyPng(3, 3));
    const again = await second.call("generate_video", {
      prompt: "restart with image",
      image_path: b,
      wait: false,
    });
    expect(again.structured).toMatchObject({ video_id: videoId, reused: true });
    const fresh = await second.call("generate_video", {
      prompt: "restart with image",
      image_path: b,
      wait: false,
      allow_duplicate: true,
    });
    expect(fresh.structured?.["video_id"]).not.toBe(videoId);
    expect(afterStart - credits(second)).toBe(25);
  });
});

describe("never double-charge", () => {
  it("an answer lost after the charge is reconciled from the history: one POST, one charge, the video_id", async () => {
    const h = await harness();
    const before = credits(h);
    h.sandbox.faults.dropNext("generate", { phase: "after" });
    const { result, structured, text } = await h.call("generate_video", {
      prompt: "lost answer",
      duration: 2,
    });
    expect(result.isError, text).toBeFalsy();
    const videoId = String(structured?.["video_id"]);
    expect(structured).toMatchObject({ status: "completed" });
    expect(structured?.["warning"]).toMatch(/history/);
    expect(before - credits(h)).toBe(10);
    expect(byRoute(h.sandbox.requests, "generate")).toHaveLength(1);
    expect(byRoute(h.sandbox.requests, "videos").length).toBeGreaterThanOrEqual(1);
    expect(journalText(h.config.stateDir)).toContain(videoId);
  });

  it("a 429 on the start is retried once after Retry-After and charged once", async () => {
    const h = await harness();
    const before = credits(h);
    h.sandbox.faults.failNext("generate", { status: 429, code: "rate_limit_exceeded" });
    h.sandbox.faults.headersNext("generate", { "Retry-After": "0" });
    const { result, structured, text } = await h.call("generate_video", {
      prompt: "busy once",
      duration: 2,
      wait: false,
    });
    expect(result.isError, text).toBeFalsy();
    expect(structured?.["video_id"]).toEqual(expect.any(String));
    expect(before - credits(h)).toBe(10);
    expect(byRoute(h.sandbox.requests, "generate").map((r) => r.status)).toEqual([429, 200]);
  });

  it("a second 429 is rate_limit_exceeded: two POSTs, nothing charged", async () => {
    const h = await harness();
    const before = credits(h);
    h.sandbox.faults.failNext("generate", { status: 429, code: "rate_limit_exceeded", count: 2 });
    h.sandbox.faults.headersNext("generate", { "Retry-After": "0" }, 2);
    const { result, text } = await h.call("generate_video", {
      prompt: "busy twice",
      duration: 2,
      wait: false,
    });
    expect(result.isError).toBe(true);
    expect(text).toMatch(/^rate_limit_exceeded/);
    expect(credits(h)).toBe(before);
    expect(byRoute(h.sandbox.requests, "generate").map((r) => r.status)).toEqual([429, 429]);
  });

  it("a 500 on the start is never retried; the error says a charge is possible and to check list_videos", async () => {
    const h = await harness();
    const before = credits(h);
    h.sandbox.faults.failNext("generate", { status: 500, code: "internal_error" });
    const { result, text } = await h.call("generate_video", {
      prompt: "server error",
      duration: 2,
      wait: false,
    });
    expect(result.isError).toBe(true);
    expect(text).toMatch(/^internal_error/);
    expect(text).toMatch(/charge is possible/i);
    expect(text).toMatch(/list_videos/);
    expect(credits(h)).toBe(before);
    expect(byRoute(h.sandbox.requests, "generate")).toHaveLength(1);
    // The history was consulted before giving up.
    expect(byRoute(h.sandbox.requests, "videos").length).toBeGreaterThanOrEqual(1);
  });
});
