import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AbortedError } from "../../src/api/errors.js";
import { headerValue, type HeaderBag } from "../../src/api/rate-budget.js";
import { TokenBucketBudget, parseResetHeader, parseRetryAfter } from "../../src/api/rate-budget.js";
import type { RequestPriority } from "../../src/api/types.js";

const NOW = Date.parse("2026-11-22T10:00:00Z");
const nowS = NOW / 1000;

describe("parseResetHeader", () => {
  it.each([
    ["epoch seconds", String(nowS + 30), NOW + 30_000],
    ["epoch seconds as a number", nowS + 30, NOW + 30_000],
    ["epoch milliseconds", String(NOW + 12_345), NOW + 12_345],
    ["seconds from now", "30", NOW + 30_000],
    ["fractional seconds from now", "1.5", NOW + 1500],
    ["zero", "0", NOW],
    ["an array (first value wins)", ["30", "99"], NOW + 30_000],
    ["a folded duplicate", "30, 30", NOW + 30_000],
    ["padded", "  30 ", NOW + 30_000],
    ["an epoch slightly in the past", String(nowS - 10), NOW],
  ] as const)("reads %s", (_name, value, expected) => {
    expect(parseResetHeader(value, NOW)).toBe(expected);
  });

  it.each([
    ["an hour from now", "3600"],
    ["an epoch two hours ahead", String(nowS + 7200)],
    ["epoch milliseconds an hour ahead", String(NOW + 3_600_000)],
  ])("clamps %s to the longest wait", (_name, value) => {
    expect(parseResetHeader(value, NOW)).toBe(NOW + 65_000);
    expect(parseResetHeader(value, NOW, 10_000)).toBe(NOW + 10_000);
  });

  it.each([
    ["negative", "-5"],
    ["1e12 (neither a sane epoch nor a delay)", "1000000000000"],
    ["1e12 as a number", 1e12],
    ["an epoch in 2001", "1000000000"],
    ["a year of seconds", String(365 * 86_400)],
    ["text", "abc"],
    ["empty", ""],
    ["blank", "   "],
    ["missing", undefined],
    ["an empty array", []],
    ["exponent notation", "1e3"],
    ["NaN", "NaN"],
    ["a number followed by junk", "30abc"],
  ] as const)("rejects %s", (_name, value) => {
    expect(parseResetHeader(value, NOW)).toBeUndefined();
  });
});

describe("parseRetryAfter", () => {
  it.each([
    ["delta seconds", "5", 5000],
    ["fractional seconds", "1.5", 1500],
    ["zero", "0", 0],
    ["an HTTP-date", new Date(NOW + 10_000).toUTCString(), 10_000],
    ["an HTTP-date in the past", new Date(NOW - 10_000).toUTCString(), 0],
    ["an array", ["7", "1"], 7000],
    ["epoch seconds (non-standard)", String(nowS + 20), 20_000],
    ["a long delay, unclamped", "3600", 3_600_000],
  ] as const)("reads %s", (_name, value, expected) => {
    expect(parseRetryAfter(value, NOW)).toBe(expected);
  });

  it.each([
    ["negative", "-1"],
    ["text", "abc"],
    ["empty", ""],
    ["missing", undefined],
    ["a bad date", "Wed, 99 Foo 2026 99:99:99 GMT"],
    ["1e12", "1000000000000"],
  ] as const)("rejects %s", (_name, value) => {
    expect(parseRetryAfter(value, NOW)).toBeUndefined();
  });
});

describe("headerValue", () => {
  it("is case-insensitive and takes the first of repeated values", () => {
    const headers: HeaderBag = { "X-RateLimit-Remaining": ["3", "4"], other: "x" };
    expect(headerValue(headers, "x-ratelimit-remaining")).toBe("3");
    expect(headerValue(headers, "missing")).toBeUndefined();
  });
});

function seeded(limit: number, remaining: number, resetInS: number): HeaderBag {
  return {
    "X-RateLimit-Limit": String(limit),
    "X-RateLimit-Remaining": String(remaining),
    "X-RateLimit-Reset": String(Math.ceil(Date.now() / 1000) + resetInS),
  };
}

describe("TokenBucketBudget", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(NOW);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** Starts acquires and records when each is granted, relative to the start. */
  function track(budget: TokenBucketBudget, priorities: RequestPriority[], answer = false) {
    const start = Date.now();
    const granted: (number | undefined)[] = priorities.map(() => undefined);
    const order: number[] = [];
    const promises = priorities.map((priority, index) =>
      budget.acquire(priority).then(() => {
        // An answer without rate headers only frees the in-flight slot.
        if (answer) budget.observe(0, {});
        granted[index] = Date.now() - start;
        order.push(index);
      }),
    );
    return { granted, order, promises };
  }

  it("before any header, spaces requests evenly at the assumed limit, the first at once", async () => {
    const budget = new TokenBucketBudget();
    const { granted } = track(budget, ["background", "background", "background"]);
    await vi.advanceTimersByTimeAsync(0);
    expect(granted).toEqual([0, undefined, undefined]);
    await vi.advanceTimersByTimeAsync(2000);
    expect(granted).toEqual([0, 1000, 2000]);
  });

  it("serves foreground before queued background while unseeded", async () => {
    const budget = new TokenBucketBudget();
    const { order } = track(budget, ["background", "background", "foreground"]);
    await vi.advanceTimersByTimeAsync(2000);
    expect(order).toEqual([0, 2, 1]);
  });

  it("once seeded, lets foreground spend the whole window and then waits for the reset", async () => {
    const budget = new TokenBucketBudget();
    await budget.acquire("foreground");
    budget.observe(200, seeded(5, 4, 30));
    const { granted } = track(budget, ["foreground", "foreground", "foreground", "foreground", "foreground"]);
    await vi.advanceTimersByTimeAsync(0);
    expect(granted.slice(0, 4)).toEqual([0, 0, 0, 0]);
    expect(granted[4]).toBeUndefined();
    await vi.advanceTimersByTimeAsync(30_000);
    expect(granted[4]).toBeGreaterThan(29_000);
    expect(granted[4]).toBeLessThanOrEqual(30_000);
  });

  it("keeps the reserve for foreground: background stops above it, foreground still goes at once", async () => {
    const budget = new TokenBucketBudget();
    await budget.acquire("foreground");
    budget.observe(200, seeded(10, 10, 60)); // reserve = 2, so 8 for background
    const background = track(budget, Array<RequestPriority>(10).fill("background"), true);
    await vi.advanceTimersByTimeAsync(59_000);
    const grantedBefore = background.granted.filter((at) => at !== undefined).length;
    expect(grantedBefore).toBeGreaterThanOrEqual(7);
    expect(grantedBefore).toBeLessThanOrEqual(8);
    expect(budget.snapshot().remaining).toBeGreaterThanOrEqual(2);
    const foreground = track(budget, ["foreground", "foreground"], true);
    await vi.advanceTimersByTimeAsync(0);
    expect(foreground.granted).toEqual([0, 0]);
    // The window resets at 60 s: the rest of the background goes in the next window, spread over it.
    await vi.advanceTimersByTimeAsync(20_000);
    expect(background.granted.filter((at) => at !== undefined)).toHaveLength(10);
    expect(Math.min(...background.granted.slice(grantedBefore).map((at) => at ?? 0))).toBeGreaterThanOrEqual(
      59_000,
    );
  });

  it("spreads background over the window and serves it first in, first out", async () => {
    const budget = new TokenBucketBudget();
    await budget.acquire("foreground");
    budget.observe(200, seeded(60, 60, 60)); // 48 for background over 60 s
    const { granted, order } = track(budget, Array<RequestPriority>(6).fill("background"));
    await vi.advanceTimersByTimeAsync(10_000);
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
    const gaps = granted.slice(1).map((at, i) => (at ?? 0) - (granted[i] ?? 0));
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(1000);
    expect(gaps.every((gap) => gap < 1500)).toBe(true);
  });

  it("never trusts a header above its own count (answers arriving out of order)", async () => {
    const budget = new TokenBucketBudget();
    await budget.acquire("foreground");
    budget.observe(200, seeded(10, 9, 60));
    await budget.acquire("foreground");
    await budget.acquire("foreground");
    // The newer answer comes first; while the other is out it may be uncounted: 7 - 1.
    budget.observe(200, seeded(10, 7, 60));
    expect(budget.snapshot().remaining).toBe(6);
    // The older answer still says 8: stale, ignored.
    budget.observe(200, seeded(10, 8, 60));
    expect(budget.snapshot().remaining).toBe(6);
  });

  it("counts requests still in flight against a fresh header", async () => {
    const budget = new TokenBucketBudget();
    const { promises } = track(budget, ["foreground", "foreground", "foreground"]);
    await vi.advanceTimersByTimeAsync(2000);
    await Promise.all(promises);
    budget.observe(200, seeded(10, 9, 60));
    // Two more are out and may not have been counted by the service yet.
    expect(budget.snapshot().remaining).toBe(7);
  });

  it("after a 429, holds every request until the reset", async () => {
    const budget = new TokenBucketBudget({ random: () => 0 });
    await budget.acquire("foreground");
    budget.observe(429, { ...seeded(60, 0, 20), "Retry-After": "20" });
    const { granted } = track(budget, ["foreground", "background"]);
    await vi.advanceTimersByTimeAsync(19_000);
    expect(granted).toEqual([undefined, undefined]);
    expect(budget.retryDelayMs()).toBe(1000);
    await vi.advanceTimersByTimeAsync(2000);
    expect(granted[0]).toBe(20_000);
    expect(granted[1]).toBeGreaterThanOrEqual(20_000);
  });

  it.each([
    ["an absurd Reset", { "X-RateLimit-Reset": "99999999" }],
    ["a Reset an hour away", { "X-RateLimit-Reset": "3600" }],
    ["an hour of Retry-After", { "Retry-After": "3600" }],
    ["garbage", { "X-RateLimit-Reset": "abc", "Retry-After": "soon" }],
    ["nothing", {}],
  ] as const)("never waits past the clamp after a 429 with %s", async (_name, headers) => {
    const budget = new TokenBucketBudget();
    await budget.acquire("foreground");
    budget.observe(429, headers);
    const { granted } = track(budget, ["foreground"]);
    await vi.advanceTimersByTimeAsync(65_000);
    expect(granted[0]).toBeDefined();
    expect(granted[0]).toBeLessThanOrEqual(65_000);
  });

  it("ignores malformed limit and remaining headers", async () => {
    const budget = new TokenBucketBudget();
    await budget.acquire("foreground");
    budget.observe(200, { "x-ratelimit-limit": "lots", "x-ratelimit-remaining": "-3" });
    expect(budget.snapshot()).toMatchObject({ seeded: false, limit: 60 });
  });

  it("reads headers whatever their case and when repeated", async () => {
    const budget = new TokenBucketBudget();
    await budget.acquire("foreground");
    budget.observe(200, {
      "x-ratelimit-limit": ["20", "20"],
      "X-RATELIMIT-REMAINING": ["12"],
      "X-RateLimit-Reset": String(nowS + 40),
    });
    expect(budget.snapshot()).toMatchObject({
      seeded: true,
      limit: 20,
      remaining: 12,
      resetAt: NOW + 40_000,
    });
  });

  it("refills to the limit when the window resets", async () => {
    const budget = new TokenBucketBudget();
    await budget.acquire("foreground");
    budget.observe(200, seeded(10, 0, 10));
    expect(budget.snapshot().remaining).toBe(0);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(budget.snapshot().remaining).toBe(10);
  });

  it("status 0 (no answer) frees the in-flight slot", async () => {
    const budget = new TokenBucketBudget();
    await budget.acquire("foreground");
    budget.observe(200, seeded(10, 9, 60));
    await budget.acquire("foreground");
    budget.observe(0, {});
    budget.observe(200, seeded(10, 8, 60)); // nothing in flight any more: the header holds as is
    expect(budget.snapshot().remaining).toBe(8);
  });

  it("rejects an aborted acquire without spending a token, and unblocks the queue behind it", async () => {
    const budget = new TokenBucketBudget();
    const aborted = new AbortController();
    aborted.abort();
    await expect(budget.acquire("foreground", aborted.signal)).rejects.toBeInstanceOf(AbortedError);

    await budget.acquire("foreground");
    budget.observe(200, seeded(10, 0, 30));
    const controller = new AbortController();
    const waiting = budget.acquire("background", controller.signal);
    controller.abort();
    await expect(waiting).rejects.toBeInstanceOf(AbortedError);
    expect(budget.snapshot().queued).toBe(0);
  });

  describe("retryDelayMs", () => {
    it.each([
      ["Retry-After seconds", { "Retry-After": "7" }, 7000],
      ["an HTTP-date", { "retry-after": new Date(NOW + 9000).toUTCString() }, 9000],
      ["the Reset header", { "x-ratelimit-reset": String(nowS + 12) }, 12_000],
      ["a tiny delay, raised to the floor", { "Retry-After": "0" }, 250],
      ["an hour, clamped", { "Retry-After": "3600" }, 65_000],
      ["garbage, the default", { "Retry-After": "abc" }, 1000],
    ] as const)("reads %s", (_name, headers, expected) => {
      const budget = new TokenBucketBudget({ random: () => 0 });
      expect(budget.retryDelayMs(headers)).toBe(expected);
    });

    it("adds a little jitter but stays within the clamp", () => {
      const budget = new TokenBucketBudget({ random: () => 0.999 });
      expect(budget.retryDelayMs({ "Retry-After": "7" })).toBeGreaterThan(7000);
      expect(budget.retryDelayMs({ "Retry-After": "7" })).toBeLessThanOrEqual(7250);
      expect(budget.retryDelayMs({ "Retry-After": "3600" })).toBe(65_000);
    });
  });
});

describe("X-RateLimit-Remaining: 0 with a reset nobody can read", () => {
  it.each([
    ["absent", undefined],
    ["unparsable", "soon"],
    ["absurdly far", "99999999999999999"],
  ])("a %s reset holds calls for a short, growing back-off instead of a whole window", (_name, reset) => {
    let now = NOW;
    const budget = new TokenBucketBudget({ now: () => now, random: () => 0 });
    const headers = (): HeaderBag => ({
      "x-ratelimit-limit": "60",
      "x-ratelimit-remaining": "0",
      ...(reset === undefined ? {} : { "x-ratelimit-reset": reset }),
    });
    budget.observe(200, headers());
    expect(budget.expectedWaitMs("foreground")).toBe(1000);
    now += 1000;
    budget.observe(200, headers());
    expect(budget.expectedWaitMs("foreground")).toBe(2000);
    // A readable reset is believed again, and the back-off starts over.
    now += 2000;
    budget.observe(200, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(nowS + 3 + 20) });
    expect(budget.expectedWaitMs("foreground")).toBe(20_000);
    now += 20_000;
    budget.observe(200, headers());
    expect(budget.expectedWaitMs("foreground")).toBe(1000);
  });
});
