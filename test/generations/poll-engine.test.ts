import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { GenerationError, NotFoundError, RateLimitError, UpstreamError } from "../../src/api/errors.js";
import { TokenBucketBudget } from "../../src/api/rate-budget.js";
import { ALONE_POLLS } from "../../src/state/local/index.js";
import type { PollUpdate } from "../../src/generations/poll-engine.js";
import { PollEngine } from "../../src/generations/poll-engine.js";
import { FakeApi } from "./fake-api.js";

const INTERVAL = 5000;

describe("PollEngine", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(Date.parse("2026-11-22T10:00:00Z"));
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function engineFor(api: FakeApi, extra: Partial<ConstructorParameters<typeof PollEngine>[0]> = {}) {
    return new PollEngine({ api, intervalMs: INTERVAL, random: () => 0, coordinator: ALONE_POLLS, ...extra });
  }

  it("polls at once, then every interval, until the task is final", async () => {
    const api = new FakeApi({ renderMs: 12_000 });
    api.addVideo("v1");
    const engine = engineFor(api);
    const updates: PollUpdate[] = [];
    const done = engine.wait("v1", { timeoutMs: 45_000, onUpdate: (update) => updates.push(update) });
    await vi.advanceTimersByTimeAsync(15_000);
    const result = await done;
    expect(result.outcome).toBe("final");
    expect(result.video?.status).toBe("completed");
    expect(api.getCalls.map((call) => call.at - api.getCalls[0]!.at)).toEqual([0, 5000, 10_000, 15_000]);
    expect(api.getCalls.every((call) => call.priority === "background")).toBe(true);
    expect(updates.map((update) => update.status)).toEqual([
      "processing",
      "processing",
      "processing",
      "completed",
    ]);
    expect(engine.activeIds).toEqual([]);
  });

  it("reports progress with strictly increasing poll counts and elapsed time", async () => {
    const api = new FakeApi({ renderMs: 60_000 });
    api.addVideo("v1");
    const updates: PollUpdate[] = [];
    const engine = engineFor(api);
    const done = engine.wait("v1", { timeoutMs: 30_000, onUpdate: (update) => updates.push(update) });
    await vi.advanceTimersByTimeAsync(30_000);
    await done;
    expect(updates.length).toBeGreaterThanOrEqual(6);
    for (let i = 1; i < updates.length; i++) {
      expect(updates[i]!.polls).toBe(updates[i - 1]!.polls + 1);
      expect(updates[i]!.elapsedMs).toBeGreaterThan(updates[i - 1]!.elapsedMs);
    }
    expect(updates[0]).toMatchObject({ video_id: "v1", status: "processing", polls: 1, elapsedMs: 0 });
  });

  it("shares one request per interval among every waiter of an id", async () => {
    const api = new FakeApi({ renderMs: 600_000 });
    api.addVideo("v1");
    const engine = engineFor(api);
    const counts = [0, 0, 0];
    const waits = counts.map((_, i) =>
      engine.wait("v1", { timeoutMs: 40_000, onUpdate: () => void (counts[i] = (counts[i] ?? 0) + 1) }),
    );
    await vi.advanceTimersByTimeAsync(40_000);
    const results = await Promise.all(waits);
    // t = 0, 5 ... 35 s: one per interval for the three of them (the deadline at 40 s comes first).
    expect(api.getCount("v1")).toBe(8);
    expect(counts).toEqual([8, 8, 8]);
    expect(results.map((result) => result.outcome)).toEqual(["timeout", "timeout", "timeout"]);
  });

  it("gives a late joiner the fresh shared status at once, without a request", async () => {
    const api = new FakeApi({ renderMs: 600_000 });
    api.addVideo("v1");
    const engine = engineFor(api);
    void engine.wait("v1", { timeoutMs: 20_000 });
    await vi.advanceTimersByTimeAsync(1000);
    const updates: PollUpdate[] = [];
    void engine.wait("v1", { timeoutMs: 20_000, onUpdate: (update) => updates.push(update) });
    expect(updates).toHaveLength(1);
    expect(updates[0]).toMatchObject({ status: "processing", polls: 1 });
    expect(api.getCount("v1")).toBe(1);
    engine.close();
  });

  it("ends a wait at its deadline with the last status, and leaves the other waiters alone", async () => {
    const api = new FakeApi({ renderMs: 600_000 });
    api.addVideo("v1");
    const engine = engineFor(api);
    const short = engine.wait("v1", { timeoutMs: 12_000 });
    const long = engine.wait("v1", { timeoutMs: 30_000 });
    await vi.advanceTimersByTimeAsync(12_000);
    const shortResult = await short;
    expect(shortResult).toMatchObject({ outcome: "timeout", elapsedMs: 12_000 });
    expect(shortResult.video?.status).toBe("processing");
    const before = api.getCount("v1");
    await vi.advanceTimersByTimeAsync(18_000);
    expect((await long).outcome).toBe("timeout");
    expect(api.getCount("v1")).toBeGreaterThan(before);
  });

  it("stops polling an id at once when its only waiter cancels", async () => {
    const api = new FakeApi({ renderMs: 600_000 });
    api.addVideo("v1");
    const engine = engineFor(api);
    const controller = new AbortController();
    const done = engine.wait("v1", { timeoutMs: 45_000, signal: controller.signal });
    await vi.advanceTimersByTimeAsync(7000);
    expect(api.getCount("v1")).toBe(2);
    controller.abort();
    const result = await done;
    expect(result.outcome).toBe("cancelled");
    expect(result.video?.status).toBe("processing");
    await vi.advanceTimersByTimeAsync(60_000);
    expect(api.getCount("v1")).toBe(2);
    expect(engine.activeIds).toEqual([]);
  });

  it("aborts the request in flight when the last waiter leaves", async () => {
    const api = new FakeApi({ renderMs: 600_000, latencyMs: 3000 });
    api.addVideo("v1");
    const engine = engineFor(api);
    const controller = new AbortController();
    const done = engine.wait("v1", { timeoutMs: 45_000, signal: controller.signal });
    await vi.advanceTimersByTimeAsync(1000);
    controller.abort();
    expect((await done).outcome).toBe("cancelled");
    await vi.advanceTimersByTimeAsync(30_000);
    expect(api.getCount("v1")).toBe(1);
  });

  it("keeps polling for the waiters left when one of several cancels", async () => {
    const api = new FakeApi({ renderMs: 600_000 });
    api.addVideo("v1");
    const engine = engineFor(api);
    const controller = new AbortController();
    const cancelled = engine.wait("v1", { timeoutMs: 45_000, signal: controller.signal });
    const staying = engine.wait("v1", { timeoutMs: 20_000 });
    await vi.advanceTimersByTimeAsync(100);
    controller.abort();
    expect((await cancelled).outcome).toBe("cancelled");
    await vi.advanceTimersByTimeAsync(20_000);
    expect((await staying).outcome).toBe("timeout");
    expect(api.getCount("v1")).toBe(4);
  });

  it("answers a wait whose signal is already aborted without a request", async () => {
    const api = new FakeApi();
    const engine = engineFor(api);
    const result = await engine.wait("v1", { timeoutMs: 45_000, signal: AbortSignal.abort() });
    expect(result.outcome).toBe("cancelled");
    expect(api.getCalls).toHaveLength(0);
  });

  it("rides out transient failures with exponential backoff and reports them", async () => {
    const api = new FakeApi({ renderMs: 600_000 });
    api.addVideo("v1");
    api.getFailures.push(
      new UpstreamError("provider down"),
      new GenerationError("internal_error", "boom", { status: 500 }),
      new GenerationError("network_error", "reset"),
      new GenerationError("timeout", "slow"),
    );
    const updates: PollUpdate[] = [];
    const engine = engineFor(api, { maxBackoffMs: 30_000 });
    const done = engine.wait("v1", { timeoutMs: 120_000, onUpdate: (update) => updates.push(update) });
    await vi.advanceTimersByTimeAsync(120_000);
    const result = await done;
    const times = api.getCalls.map((call) => call.at - api.getCalls[0]!.at);
    // Failures at 0, 5, 15, 35 s (backoff 5, 10, 20, 30 s), then success at 65 s and every 5 s after.
    expect(times.slice(0, 6)).toEqual([0, 5000, 15_000, 35_000, 65_000, 70_000]);
    expect(updates.slice(0, 4).map((update) => update.error?.code)).toEqual([
      "upstream_error",
      "internal_error",
      "network_error",
      "timeout",
    ]);
    expect(updates[4]).toMatchObject({ status: "processing" });
    expect(updates[4]!.error).toBeUndefined();
    expect(result.outcome).toBe("timeout");
    expect(result.lastError).toBeUndefined();
  });

  it("caps the backoff and still ends the wait at its deadline while failing", async () => {
    const api = new FakeApi();
    api.addVideo("v1");
    for (let i = 0; i < 50; i++) api.getFailures.push(new UpstreamError("down"));
    const engine = engineFor(api, { maxBackoffMs: 12_000 });
    const done = engine.wait("v1", { timeoutMs: 45_000 });
    await vi.advanceTimersByTimeAsync(45_000);
    const result = await done;
    expect(result).toMatchObject({ outcome: "timeout", video: undefined, elapsedMs: 45_000 });
    expect(result.lastError?.code).toBe("upstream_error");
    const times = api.getCalls.map((call) => call.at - api.getCalls[0]!.at);
    expect(times).toEqual([0, 5000, 15_000, 27_000, 39_000]);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(api.getCalls).toHaveLength(5);
  });

  it("waits for the reset named by a 429 on a read, then goes on", async () => {
    const api = new FakeApi({ renderMs: 600_000 });
    api.addVideo("v1");
    api.getFailures.push(() => new RateLimitError("slow down", { retryAtMs: Date.now() + 40_000 }));
    const engine = engineFor(api);
    const done = engine.wait("v1", { timeoutMs: 50_000 });
    await vi.advanceTimersByTimeAsync(50_000);
    await done;
    const times = api.getCalls.map((call) => call.at - api.getCalls[0]!.at);
    expect(times.slice(0, 3)).toEqual([0, 40_000, 45_000]);
  });

  it("rejects every waiter of an id on a permanent error, and stops", async () => {
    const api = new FakeApi();
    const engine = engineFor(api);
    const first = engine.wait("missing", { timeoutMs: 45_000 });
    const second = engine.wait("missing", { timeoutMs: 45_000 });
    const assertions = [
      expect(first).rejects.toBeInstanceOf(GenerationError),
      expect(second).rejects.toMatchObject({ code: "not_found" }),
    ];
    await vi.advanceTimersByTimeAsync(10);
    await Promise.all(assertions);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(api.getCalls).toHaveLength(1);
  });

  it.each([
    ["unauthorized", new GenerationError("unauthorized", "bad key", { status: 401 })],
    [
      "validation_error (an unknown id answered 400)",
      new GenerationError("validation_error", "bad", { status: 400 }),
    ],
    ["paid_access_required", new GenerationError("paid_access_required", "pay", { status: 403 })],
    ["not_found", new NotFoundError("gone")],
  ])("treats %s as permanent", async (_name, error) => {
    const api = new FakeApi();
    api.addVideo("v1");
    api.getFailures.push(error);
    const engine = engineFor(api);
    const done = engine.wait("v1", { timeoutMs: 45_000 });
    const assertion = expect(done).rejects.toBe(error);
    await vi.advanceTimersByTimeAsync(10);
    await assertion;
  });

  it("close() resolves every wait as cancelled and stops all polling", async () => {
    const api = new FakeApi({ renderMs: 600_000 });
    api.addVideo("a");
    api.addVideo("b");
    const engine = engineFor(api);
    const waits = [engine.wait("a", { timeoutMs: 45_000 }), engine.wait("b", { timeoutMs: 45_000 })];
    await vi.advanceTimersByTimeAsync(100);
    engine.close();
    expect((await Promise.all(waits)).map((result) => result.outcome)).toEqual(["cancelled", "cancelled"]);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(api.getCalls).toHaveLength(2);
    expect((await engine.wait("a", { timeoutMs: 1000 })).outcome).toBe("cancelled");
  });

  it("a throwing progress callback does not break the wait", async () => {
    const api = new FakeApi({ renderMs: 7000 });
    api.addVideo("v1");
    const logs: string[] = [];
    const engine = engineFor(api, { logger: (level, message) => logs.push(`${level}: ${message}`) });
    const done = engine.wait("v1", {
      timeoutMs: 45_000,
      onUpdate: () => {
        throw new Error("client gone");
      },
    });
    await vi.advanceTimersByTimeAsync(10_000);
    expect((await done).outcome).toBe("final");
    expect(logs.some((line) => line.startsWith("warning: A progress callback failed"))).toBe(true);
    expect(logs.some((line) => line.includes("Stopped waiting"))).toBe(true);
  });

  it("keeps 50 concurrent waits inside 60 requests a minute with no 429, and leaves room for the user", async () => {
    const budget = new TokenBucketBudget();
    const api = new FakeApi({ budget, limit: 60, latencyMs: 200, renderMs: 10 * 60_000 });
    const engine = engineFor(api);
    const waits = [];
    for (let i = 0; i < 50; i++) {
      api.addVideo(`v${i}`);
      waits.push(engine.wait(`v${i}`, { timeoutMs: 45_000 }));
    }
    // The user's own call in the middle of it all goes through promptly.
    await vi.advanceTimersByTimeAsync(20_000);
    const askedAt = Date.now();
    let creditsAt = 0;
    void budget.acquire("foreground").then(() => {
      creditsAt = Date.now();
      budget.observe(0, {});
    });
    await vi.advanceTimersByTimeAsync(25_000);
    const results = await Promise.all(waits);
    expect(results.every((result) => result.outcome === "timeout")).toBe(true);
    expect(creditsAt - askedAt).toBeLessThan(1000);

    // Then five minutes of rolling 45 s waits on the same tasks.
    for (let round = 0; round < 7; round++) {
      const again = Array.from({ length: 50 }, (_, i) => engine.wait(`v${i}`, { timeoutMs: 45_000 }));
      await vi.advanceTimersByTimeAsync(45_000);
      await Promise.all(again);
    }
    expect(api.rateLimited).toBe(0);
    // No sliding minute saw more than the limit either.
    const served = api.served;
    for (let i = 0; i < served.length; i++) {
      const inMinute = served.filter((at) => at >= served[i]! && at < served[i]! + 60_000).length;
      expect(inMinute).toBeLessThanOrEqual(60);
    }
    // And the budget was actually used: most of each window went to polls.
    expect(served.length).toBeGreaterThan((6 * 60 * 0.6) | 0);
    // Every task got polled: nobody starves.
    for (let i = 0; i < 50; i++) expect(api.getCount(`v${i}`)).toBeGreaterThan(0);
  });
});
