/**
 * The key's rate limit, end to end: many waits at once stay inside it (no 429 at all) and keep a reserve
 * for the user's own calls; a 429 on a status read is ridden out.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../helpers/harness.js";
import { byRoute, delay, statusPolls, until } from "../generations/support.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("rate budget", () => {
  it("50 concurrent generate_video wait: true never earn a 429, and get_credits in the middle goes through", async () => {
    const K = 50;
    h = await startHarness({
      sandbox: { timings: { queuedMs: 30, processingMs: 120 }, rateLimit: { limit: 60, windowMs: 2500 } },
      config: { pollIntervalMs: 50, waitTimeoutS: 20 },
    });
    const harness = h;
    let finished = 0;
    const calls = Promise.all(
      Array.from({ length: K }, (_, i) =>
        harness.call("generate_video", { prompt: `crowd scene number ${i}`, duration: 1 }).then((call) => {
          finished += 1;
          return call;
        }),
      ),
    );
    // In the middle: once every start went out and polls are queued behind the reserve.
    await until(() => byRoute(harness.sandbox.requests, "generate").length >= K, 10_000, "all starts");
    await delay(200);
    const askedAt = Date.now();
    const credits = await harness.call("get_credits", {});
    // Served from the reserve at once, not after the background queue or the window's reset.
    expect(Date.now() - askedAt).toBeLessThan(1000);
    expect(finished).toBeLessThan(K);
    const results = await calls;

    expect(credits.result.isError).toBeFalsy();
    for (const { result, structured, text } of results) {
      expect(result.isError, text).toBeFalsy();
      expect(structured?.["video_id"]).toEqual(expect.any(String));
      if (structured?.["status"] !== "completed") expect(text).toMatch(/get_status[\s\S]*wait: true/);
    }
    const ids = new Set(results.map(({ structured }) => structured?.["video_id"]));
    expect(ids.size).toBe(K);
    const log = harness.sandbox.requests;
    expect(log.filter((request) => request.status === 429)).toEqual([]);
    expect(byRoute(log, "generate").length).toBe(K);
    expect(byRoute(log, "credits").map((request) => request.status)).toEqual([200]);
    const completed = results.filter(({ structured }) => structured?.["status"] === "completed").length;
    expect(completed).toBe(K);
  }, 30_000);

  it("a 429 on a status read is waited out until the named reset and the wait completes", async () => {
    h = await startHarness({
      sandbox: {
        timings: { queuedMs: 50, processingMs: 150 },
        rateLimit: { limit: 10_000, windowMs: 60_000 },
      },
      config: { pollIntervalMs: 40 },
    });
    const started = await h.call("generate_video", { prompt: "rate limited read", wait: false });
    const videoId = String(started.structured?.["video_id"]);
    const mark = h.sandbox.requests.length;
    const resetS = Math.ceil(Date.now() / 1000) + 1;
    h.sandbox.faults.failNext("video-status", { status: 429, code: "rate_limit_exceeded" });
    h.sandbox.faults.headersNext("video-status", {
      "X-RateLimit-Reset": String(resetS),
      "X-RateLimit-Remaining": "0",
    });
    const { result, structured, text } = await h.call("get_status", { video_id: videoId, wait: true });
    expect(result.isError, text).toBeFalsy();
    expect(structured).toMatchObject({ video_id: videoId, status: "completed" });
    const polls = statusPolls(h.requestsSince(mark), videoId);
    expect(polls[0]?.status).toBe(429);
    expect(polls.at(-1)?.status).toBe(200);
    // Nothing was sent again before the reset the 429 named.
    expect(polls[1]?.at ?? 0).toBeGreaterThanOrEqual(resetS * 1000 - 1000);
    expect(polls.filter((request) => request.status === 429)).toHaveLength(1);
  });
});
