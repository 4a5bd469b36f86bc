import { describe, expect, it } from "vitest";
import { Account, RateLimiter, parseBearer } from "../../src/sandbox/auth.js";
import { sniffImage } from "../../src/sandbox/body.js";
import { imageSize } from "../../src/sandbox/media/images.js";
import { parseRange } from "../../src/sandbox/media/serve.js";
import { Store } from "../../src/sandbox/store.js";

describe("parseBearer", () => {
  it("tells missing, malformed and token apart", () => {
    expect(parseBearer(undefined)).toEqual({ kind: "missing" });
    expect(parseBearer("  ")).toEqual({ kind: "missing" });
    expect(parseBearer("Bearer abc")).toEqual({ kind: "token", token: "abc" });
    expect(parseBearer("BEARER   abc ")).toEqual({ kind: "token", token: "abc" });
    expect(parseBearer("Basic abc")).toEqual({ kind: "malformed", token: "abc" });
    expect(parseBearer("Bearer a b")).toEqual({ kind: "malformed", token: undefined });
    expect(parseBearer("abc")).toEqual({ kind: "malformed", token: undefined });
  });
});

describe("RateLimiter", () => {
  it("peeks without counting and opens a fresh window after windowMs", () => {
    let now = 1_000_000;
    const limiter = new RateLimiter({ limit: 2, windowMs: 1000 }, () => now);
    expect(limiter.peek("a")).toMatchObject({ remaining: 2, resetS: 1001 });
    expect(limiter.consume("a")).toMatchObject({ allowed: true, remaining: 1 });
    expect(limiter.peek("a")).toMatchObject({ remaining: 1 });
    expect(limiter.consume("a")).toMatchObject({ allowed: true, remaining: 0 });
    expect(limiter.consume("a")).toMatchObject({ allowed: false, remaining: 0, retryAfterS: 1 });
    now += 1000;
    expect(limiter.consume("a")).toMatchObject({ allowed: true, remaining: 1, resetS: 1002 });
  });

  it("rounds the reset up to whole seconds", () => {
    const limiter = new RateLimiter({ limit: 1, windowMs: 1500 }, () => 1_000_200);
    expect(limiter.consume("a").resetS).toBe(1002);
  });
});

describe("parseRange", () => {
  it("reads single ranges and refuses the unsatisfiable", () => {
    expect(parseRange("bytes=0-0", 10)).toEqual([0, 0]);
    expect(parseRange("bytes=5-", 10)).toEqual([5, 9]);
    expect(parseRange("bytes=-3", 10)).toEqual([7, 9]);
    expect(parseRange("bytes=-30", 10)).toEqual([0, 9]);
    expect(parseRange("bytes=10-", 10)).toBe("unsatisfiable");
    expect(parseRange("bytes=-0", 10)).toBe("unsatisfiable");
    expect(parseRange("bytes=0-", 0)).toBe("unsatisfiable");
    expect(parseRange("bytes=1-2,4-5", 10)).toBeUndefined();
    expect(parseRange("lines=1-2", 10)).toBeUndefined();
  });
});

describe("imageSize", () => {
  it("puts the resolution on the long side", () => {
    expect(imageSize("1k", "1:1")).toEqual({ width: 1024, height: 1024 });
    expect(imageSize("2k", "16:9")).toEqual({ width: 2048, height: 1152 });
    expect(imageSize("4k", "9:16")).toEqual({ width: 2304, height: 4096 });
    expect(imageSize("1k", "64:1")).toEqual({ width: 1024, height: 16 });
  });
});

describe("sniffImage", () => {
  it("needs the whole signature", () => {
    expect(sniffImage(Buffer.from([0xff, 0xd8]))).toBeUndefined();
    expect(sniffImage(Buffer.from([0xff, 0xd8, 0xff]))?.contentType).toBe("image/jpeg");
    expect(sniffImage(Buffer.from("RIFF\0\0\0\0WEBP"))?.extension).toBe("webp");
  });
});

describe("Account", () => {
  it("never sells below zero and keeps hundredths exact", () => {
    const account = new Account({ key: "k", name: "n", credits: 0.3, paidAccess: true, subscription: null });
    expect(account.tryCharge(0.1)).toBe(true);
    expect(account.tryCharge(0.2)).toBe(true);
    expect(account.credits).toBe(0);
    expect(account.tryCharge(0.01)).toBe(false);
    account.refund(7.5);
    expect(account.credits).toBe(7.5);
  });
});

describe("Store", () => {
  const account = (): Account =>
    new Account({ key: "k", name: "n", credits: 100, paidAccess: true, subscription: null });

  it("evicts the oldest uploads past its byte budget", () => {
    const store = new Store(
      () => 0,
      { queuedMs: 0, processingMs: 0 },
      () => ["queued"],
      10,
    );
    const upload = (id: string, size: number) =>
      store.addUpload(id, { contentType: "image/png", extension: "png", bytes: Buffer.alloc(size) });
    upload("a", 4);
    upload("b", 4);
    expect(store.uploads.get("a")).toBeDefined();
    upload("c", 4);
    expect(store.uploads.get("a")).toBeUndefined();
    expect(store.uploads.get("b")).toBeDefined();
    upload("d", 20);
    expect(store.uploads.get("b")).toBeUndefined();
    expect(store.uploads.get("c")).toBeUndefined();
    expect(store.uploads.get("d")).toBeDefined();
  });

  it("refunds a failed task once, however often it is read", () => {
    let now = 0;
    const store = new Store(
      () => now,
      { queuedMs: 10, processingMs: 10 },
      () => ["queued", "processing"],
    );
    const owner = account();
    owner.tryCharge(25);
    store.failNextTask("no");
    const request = {
      prompt: "p",
      model: "vendor-video-1-5-pro",
      generationType: "text_to_video",
      imageUrl: undefined,
      aspectRatio: "16:9",
      duration: 5,
      resolution: undefined,
    } as const;
    const task = store.addVideo("v", owner, request, 25);
    now = 20;
    for (let i = 0; i < 3; i++) {
      store.settle(task);
      store.settleOwner(owner);
    }
    expect(store.view(task)).toMatchObject({ status: "failed", final: true, message: "no" });
    expect(owner.credits).toBe(100);
    expect(() => store.addVideo("v", owner, request, 0)).toThrow(/duplicate/);
  });
});
