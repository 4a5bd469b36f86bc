/**
 * Waiting ends well: a cancelled call stops polling at once while the task goes on and stays recoverable;
 * the end of the wait window is a normal answer; transient failures of the status call are ridden out.
 */
import type { Progress } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../helpers/harness.js";
import { credits, delay, journalEntries, journalText, statusPolls, until } from "./support.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const roomy = { limit: 10_000, windowMs: 60_000 };

describe("cancellation", () => {
  it("aborting the call stops the polls within an interval; the task finishes upstream and stays recoverable", async () => {
    const intervalMs = 60;
    h = await startHarness({
      sandbox: { timings: { queuedMs: 400, processingMs: 600 }, rateLimit: roomy },
      config: { pollIntervalMs: intervalMs },
    });
    const harness = h;
    const mark = harness.sandbox.requests.length;
    const controller = new AbortController();
    const progress: Progress[] = [];
    const call = harness.call(
      "generate_video",
      { prompt: "cancel me midway" },
      { signal: controller.signal, onProgress: (update) => progress.push(update) },
    );
    const settled = call.then(
      (value) => ({ ok: true as const, value }),
      (error: unknown) => ({ ok: false as const, error }),
    );
    await until(() => progress.length >= 3, 5000, "two polls");
    const videoId = /video_id (\S+):/.exec(progress[0]?.message ?? "")?.[1] ?? "";
    expect(videoId).not.toBe("");
    controller.abort();
    const abortedAt = Date.now();
    const outcome = await settled;
    expect(outcome.ok).toBe(false);

    // Give a lingering poll time to show up, then check nothing was sent after the first interval.
    await delay(intervalMs * 5);
    const after = statusPolls(harness.requestsSince(mark), videoId).filter(
      (r) => r.at > abortedAt + intervalMs,
    );
    expect(after).toEqual([]);

    // The task keeps running upstream and can be found again three ways.
    expect(journalText(harness.config.stateDir)).toContain(videoId);
    const listed = await harness.call("list_videos", {});
    expect(JSON.stringify(listed.structured?.["items"])).toContain(videoId);
    const resumed = await harness.call("get_status", { video_id: videoId, wait: true });
    expect(resumed.result.isError).toBeFalsy();
    expect(resumed.structured).toMatchObject({ video_id: videoId, status: "completed" });
  });
  it("cancelling one of two waiters on the same id leaves the other waiting until the task completes", async () => {
    h = await startHarness({
      sandbox: { timings: { queuedMs: 200, processingMs: 400 }, rateLimit: roomy },
      config: { pollIntervalMs: 40 },
    });
    const harness = h;
    const started = await harness.call("generate_video", { prompt: "two watchers", wait: false });
    const videoId = String(started.structured?.["video_id"]);
    const controller = new AbortController();
    const progress: Progress[] = [];
    const cancelled = harness
      .call(
        "get_status",
        { video_id: videoId, wait: true },
        { signal: controller.signal, onProgress: (u) => progress.push(u) },
      )
      .then(
        () => "answered",
        () => "rejected",
      );
    const other = harness.call("get_status", { video_id: videoId, wait: true });
    await until(() => progress.length >= 2, 5000, "two polls");
    controller.abort();
    expect(await cancelled).toBe("rejected");
    const { result, structured } = await other;
    expect(result.isError).toBeFalsy();
    expect(structured).toMatchObject({ video_id: videoId, status: "completed" });
  });

  it("cancelling while the start is in flight still journals the paid task, charges once and polls nothing", async () => {
    h = await startHarness({
      sandbox: { timings: { queuedMs: 100, processingMs: 100 }, rateLimit: roomy },
      config: { pollIntervalMs: 40 },
    });
    const harness = h;
    const before = credits(harness);
    harness.sandbox.faults.latency("generate", 300);
    const controller = new AbortController();
    const call = harness
      .call("generate_video", { prompt: "cancel during start", duration: 2 }, { signal: controller.signal })
      .then(
        () => "answered",
        () => "rejected",
      );
    await until(() => harness.sandbox.requests.some((r) => r.route === "generate"), 5000, "the start");
    controller.abort();
    expect(await call).toBe("rejected");
    // The start's answer comes in after the cancellation; its bookkeeping still finishes.
    await until(
      () => journalText(harness.config.stateDir).includes('"phase":"started"'),
      5000,
      "the journal entry",
    );
    harness.sandbox.faults.latency("generate", 0);
    await delay(200);
    const entries = journalEntries(harness.config.stateDir);
    // The intent went to disk before the start was sent; the task after its answer, under the same key.
    expect(entries.map((entry) => entry.phase)).toEqual(["intent", "started"]);
    expect(entries[1]!.key).toBe(entries[0]!.key);
    const videoId = entries[1]!.id;
    expect(before - credits(harness)).toBe(10);
    expect(statusPolls(harness.sandbox.requests, videoId)).toEqual([]);
    const listed = await harness.call("list_videos", {});
    expect(JSON.stringify(listed.structured?.["items"])).toContain(videoId);
    // And an identical request afterwards returns it instead of paying again.
    const again = await harness.call("generate_video", { prompt: "cancel during start", duration: 2 });
    expect(again.structured).toMatchObject({ video_id: videoId, reused: true, status: "completed" });
    expect(before - credits(harness)).toBe(10);
  });
});

describe("wait window", () => {
  it("a short timeout_seconds answers 'still processing' without an error; get_status wait: true finishes it", async () => {
    h = await startHarness({
      sandbox: { timings: { queuedMs: 300, processingMs: 700 }, rateLimit: roomy },
      config: { pollIntervalMs: 50 },
    });
    const first = await h.call("generate_video", { prompt: "a long render", timeout_seconds: 0.2 });
    expect(first.result.isError).toBeFalsy();
    const videoId = String(first.structured?.["video_id"]);
    expect(videoId).not.toBe("undefined");
    expect(["queued", "processing"]).toContain(first.structured?.["status"]);
    expect(first.text).toContain(videoId);
    expect(first.text).toMatch(/get_status/);
    expect(first.text).toMatch(/wait: true/);
    expect(first.structured?.["next_step"]).toMatch(/get_status[\s\S]*wait: true/);

    const later = await h.call("get_status", { video_id: videoId, wait: true, timeout_seconds: 10 });
    expect(later.result.isError).toBeFalsy();
    expect(later.structured).toMatchObject({ video_id: videoId, status: "completed" });
    expect(later.structured?.["video_url"]).toEqual(expect.any(String));
  });
  it("a window that ends before any poll answered reports the start's status, not 'unknown'", async () => {
    h = await startHarness({
      sandbox: { timings: { queuedMs: 3000, processingMs: 3000 }, rateLimit: roomy },
      config: { pollIntervalMs: 50 },
    });
    const { result, structured, text } = await h.call("generate_video", {
      prompt: "no time at all",
      timeout_seconds: 0,
    });
    expect(result.isError).toBeFalsy();
    expect(structured).toMatchObject({ status: "queued" });
    expect(text).toMatch(/get_status[\s\S]*wait: true/);
  });

  it("a window spent in failing status checks says the status may be out of date", async () => {
    h = await startHarness({
      sandbox: { timings: { queuedMs: 3000, processingMs: 3000 }, rateLimit: roomy },
      config: { pollIntervalMs: 50 },
    });
    h.sandbox.faults.providerOutage(true);
    const { result, structured, text } = await h.call("generate_video", {
      prompt: "dark window",
      timeout_seconds: 0.4,
    });
    expect(result.isError).toBeFalsy();
    expect(structured).toMatchObject({ status: "queued" });
    expect(text).toMatch(/upstream_error/);
    expect(text).toMatch(/get_status[\s\S]*wait: true/);
    h.sandbox.faults.providerOutage(false);
  });
});

describe("transient failures of the status call are ridden out", () => {
  it("a provider outage during the wait", async () => {
    h = await startHarness({
      sandbox: { timings: { queuedMs: 50, processingMs: 150 }, rateLimit: roomy },
      config: { pollIntervalMs: 40 },
    });
    const started = await h.call("generate_video", { prompt: "outage", wait: false });
    const videoId = String(started.structured?.["video_id"]);
    const mark = h.sandbox.requests.length;
    h.sandbox.faults.providerOutage(true);
    const waiting = h.call("get_status", { video_id: videoId, wait: true });
    const harness = h;
    await until(
      () => statusPolls(harness.requestsSince(mark), videoId).some((r) => r.status === 502),
      5000,
      "a 502",
    );
    await delay(300);
    harness.sandbox.faults.providerOutage(false);
    const { result, structured, text } = await waiting;
    expect(result.isError, text).toBeFalsy();
    expect(structured).toMatchObject({ video_id: videoId, status: "completed" });
    const statuses = statusPolls(harness.requestsSince(mark), videoId).map((r) => r.status);
    expect(statuses).toContain(502);
    expect(statuses.at(-1)).toBe(200);
  });

  it.each([500, 502, 503])("three %d answers in a row", async (status) => {
    h = await startHarness({
      sandbox: { timings: { queuedMs: 50, processingMs: 100 }, rateLimit: roomy },
      config: { pollIntervalMs: 30 },
    });
    const started = await h.call("generate_video", { prompt: `flaky ${status}`, wait: false });
    const videoId = String(started.structured?.["video_id"]);
    const mark = h.sandbox.requests.length;
    const code = status === 500 ? "internal_error" : "upstream_error";
    h.sandbox.faults.failNext("video-status", { status, code, count: 3 });
    const { result, structured, text } = await h.call("get_status", { video_id: videoId, wait: true });
    expect(result.isError, text).toBeFalsy();
    expect(structured).toMatchObject({ video_id: videoId, status: "completed" });
    const statuses = statusPolls(h.requestsSince(mark), videoId).map((r) => r.status);
    expect(statuses.slice(0, 3)).toEqual([status, status, status]);
    expect(statuses.at(-1)).toBe(200);
  });

  it("a status request slower than the per-attempt timeout", async () => {
    h = await startHarness({
      sandbox: { timings: { queuedMs: 50, processingMs: 100 }, rateLimit: roomy },
      config: { pollIntervalMs: 30 },
      client: { timeoutMs: 250 },
    });
    const harness = h;
    const started = await harness.call("generate_video", { prompt: "slow status", wait: false });
    const videoId = String(started.structured?.["video_id"]);
    const mark = harness.sandbox.requests.length;
    harness.sandbox.faults.latency("video-status", 600);
    const progress: Progress[] = [];
    const waiting = harness.call(
      "get_status",
      { video_id: videoId, wait: true },
      { onProgress: (update) => progress.push(update) },
    );
    await until(() => statusPolls(harness.requestsSince(mark), videoId).length >= 1, 5000, "the slow poll");
    harness.sandbox.faults.latency("video-status", 0);
    const { result, structured, text } = await waiting;
    expect(result.isError, text).toBeFalsy();
    expect(structured).toMatchObject({ video_id: videoId, status: "completed" });
    expect(progress.some((update) => /timeout/.test(update.message ?? ""))).toBe(true);
  });
});
