/**
 * The waiting issue, end to end through the MCP layer against the sandbox: one poll loop per video id for
 * the whole process, and progress notifications (the first names the video_id, after the journal has it).
 */
import type { Progress } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../helpers/harness.js";
import { collectLogNotifications, journalText, statusPolls } from "./support.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("one poll engine per process", () => {
  it("three concurrent get_status wait: true on one video_id cost one status request per interval", async () => {
    const intervalMs = 100;
    h = await startHarness({
      // A roomy limit: the budget's spacing of background polls must not be what keeps the count low.
      sandbox: {
        timings: { queuedMs: 300, processingMs: 700 },
        rateLimit: { limit: 10_000, windowMs: 60_000 },
      },
      config: { pollIntervalMs: intervalMs },
    });
    const started = await h.call("generate_video", { prompt: "shared waiting", wait: false });
    const videoId = String(started.structured?.["video_id"]);
    const mark = h.sandbox.requests.length;
    const t0 = Date.now();
    const results = await Promise.all(
      [0, 1, 2].map(() => h!.call("get_status", { video_id: videoId, wait: true, timeout_seconds: 10 })),
    );
    const elapsed = Date.now() - t0;
    for (const { result, structured } of results) {
      expect(result.isError).toBeFalsy();
      expect(structured).toMatchObject({ video_id: videoId, status: "completed" });
    }
    const polls = statusPolls(h.requestsSince(mark), videoId);
    // One loop: each request goes out an interval after the answer to the one before, so no two reach the
    // service closer than that, however slow the machine (three loops would send their first three at once).
    // How fast the loop keeps up with the interval is the poll engine's own test, on a clock of its own.
    expect(polls.length).toBeGreaterThanOrEqual(2);
    const gaps = polls.slice(1).map((poll, index) => poll.at - polls[index]!.at);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(intervalMs - 2);
    // At most one request per interval over the wait (plus the first at once and some slack).
    expect(polls.length).toBeLessThanOrEqual(Math.floor(elapsed / intervalMs) + 2);
  });
});

describe("progress notifications", () => {
  it("the first names the video_id before any status poll answered, the journal already has it, then one per poll", async () => {
    h = await startHarness({
      sandbox: {
        timings: { queuedMs: 150, processingMs: 250 },
        rateLimit: { limit: 10_000, windowMs: 60_000 },
      },
      config: { pollIntervalMs: 60 },
    });
    const harness = h;
    const logNotes = collectLogNotifications(harness);
    // Info lines go to a client that asked for them (the default is warnings and above).
    await harness.client.setLoggingLevel("info");
    const mark = harness.sandbox.requests.length;
    const progress: Progress[] = [];
    let answeredPollsAtFirst = -1;
    let postsAtFirst = -1;
    let journalAtFirst = "";
    const { result, structured } = await harness.call(
      "generate_video",
      { prompt: "progress please", duration: 2 },
      {
        onProgress: (update) => {
          if (progress.length === 0) {
            const sofar = harness.requestsSince(mark);
            answeredPollsAtFirst = statusPolls(sofar).filter((r) => r.status !== 0).length;
            postsAtFirst = sofar.filter((r) => r.route === "generate" && r.status === 200).length;
            journalAtFirst = journalText(harness.config.stateDir);
          }
          progress.push(update);
        },
      },
    );
    expect(result.isError).toBeFalsy();
    expect(structured?.["status"]).toBe("completed");
    const videoId = String(structured?.["video_id"]);

    // First notification: names the id, goes out once the task exists and before any poll answered.
    expect(progress[0]?.message).toContain(videoId);
    expect(postsAtFirst).toBe(1);
    expect(answeredPollsAtFirst).toBe(0);
    // The journal was written and flushed before the first notification.
    expect(journalAtFirst).toContain(videoId);

    // Then one per poll, with the status and the elapsed time.
    const polls = statusPolls(harness.requestsSince(mark), videoId);
    const later = progress.slice(1);
    expect(later.length).toBe(polls.length);
    for (const update of later) {
      expect(update.message).toMatch(
        new RegExp(`video_id ${videoId}: (queued|processing|completed) after \\d+ s`),
      );
    }
    expect(later.at(-1)?.message).toContain("completed");
    const values = progress.map((update) => update.progress);
    for (let i = 1; i < values.length; i++) expect(values[i]).toBeGreaterThan(values[i - 1]!);

    // A log message records the id: on stderr and as an MCP logging notification.
    expect(harness.logs.some((line) => line.includes(videoId))).toBe(true);
    expect(logNotes.some((note) => note.includes(videoId))).toBe(true);
  });

  it("get_status wait: true names the video_id at once, before any poll answered, then one per poll", async () => {
    h = await startHarness({
      sandbox: {
        timings: { queuedMs: 100, processingMs: 200 },
        rateLimit: { limit: 10_000, windowMs: 60_000 },
      },
      config: { pollIntervalMs: 40 },
    });
    const harness = h;
    const started = await harness.call("generate_video", { prompt: "resume me", wait: false });
    const videoId = String(started.structured?.["video_id"]);
    const mark = harness.sandbox.requests.length;
    const progress: Progress[] = [];
    let answeredPollsAtFirst = -1;
    const { structured } = await harness.call(
      "get_status",
      { video_id: videoId, wait: true },
      {
        onProgress: (update) => {
          if (progress.length === 0) {
            answeredPollsAtFirst = statusPolls(harness.requestsSince(mark)).filter(
              (r) => r.status !== 0,
            ).length;
          }
          progress.push(update);
        },
      },
    );
    expect(structured?.["status"]).toBe("completed");
    expect(progress[0]?.message).toContain(videoId);
    expect(answeredPollsAtFirst).toBe(0);
    expect(progress.length - 1).toBe(statusPolls(harness.requestsSince(mark), videoId).length);
  });
});
