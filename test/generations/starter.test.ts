import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  AbortedError,
  GenerationError,
  InsufficientCreditsError,
  NetworkError,
  PaidAccessRequiredError,
  RateLimitError,
  TimeoutError,
  UnauthorizedError,
  UpstreamError,
  ValidationError,
} from "../../src/api/errors.js";
import { TokenBucketBudget } from "../../src/api/rate-budget.js";
import type { GenerateVideoBody } from "../../src/api/types.js";
import { fingerprintRequest } from "../../src/generations/fingerprint.js";
import { ALONE_CLAIMS } from "../../src/state/local/index.js";
import { JOURNAL_FILE, Journal } from "../../src/state/local/journal.js";
import { LocalOwners } from "../../src/state/local/owners.js";
import { StateFileError } from "../../src/state/local/store.js";
import { IMAGE_CHARGE_POSSIBLE, TaskStarter, VIDEO_CHARGE_POSSIBLE } from "../../src/generations/starter.js";
import { FakeApi } from "./fake-api.js";

const TEN_MIN = 10 * 60 * 1000;
const body: GenerateVideoBody = {
  prompt: "a cat on a skateboard",
  model: "vendor-video-1-5-pro",
  duration: 5,
};
const fingerprint = fingerprintRequest("video", { ...body }, []);

describe("TaskStarter", () => {
  let dir: string;
  let clock: number;
  let journal: Journal;
  let api: FakeApi;
  let sleeps: number[];
  let starter: TaskStarter;
  let stopping: AbortController;

  beforeEach(async () => {
    stopping = new AbortController();
    dir = await mkdtemp(join(tmpdir(), "starter-"));
    clock = Date.now();
    journal = await Journal.open(dir, { now: () => clock });
    api = new FakeApi();
    sleeps = [];
    starter = new TaskStarter({
      api,
      journal,
      claims: ALONE_CLAIMS,
      ownership: await LocalOwners.open(undefined, () => {}),
      budget: new TokenBucketBudget({ random: () => 0 }),
      now: () => clock,
      sleep: async (ms, signal) => {
        if (signal?.aborted) throw new AbortedError();
        sleeps.push(ms);
        clock += ms;
      },
      stopping: stopping.signal,
    });
  });
  afterEach(async () => {
    // The background search for a lost start ends with the runtime; a write it had begun may still land.
    stopping.abort();
    await journal.close();
    await rm(dir, { recursive: true, force: true, maxRetries: 5 });
  });

  async function journalOnDisk(): Promise<Record<string, unknown>[]> {
    return JSON.parse(await readFile(join(dir, JOURNAL_FILE), "utf8")) as Record<string, unknown>[];
  }

  it("starts a video with one idempotency key and journals it on disk before returning", async () => {
    const outcome = await starter.startVideo(body, { fingerprint, allowDuplicate: false });
    expect(outcome).toMatchObject({ video_id: "vid_1", status: "queued", reused: false, reconciled: false });
    expect(api.generateCalls).toHaveLength(1);
    expect(api.generateCalls[0]!.options).toMatchObject({ priority: "foreground" });
    expect(api.generateCalls[0]!.options?.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    // Once sent, a start is not aborted by the caller: a paid task must never be lost to a cancel.
    expect(api.generateCalls[0]!.options?.signal).toBeUndefined();
    // The intent is on disk before the POST (with the key it carries), the task after the answer.
    const key = api.generateCalls[0]!.options?.idempotencyKey;
    const lines = await journalOnDisk();
    expect(lines).toEqual([
      { kind: "video", phase: "intent", key, fingerprint, started_at: clock, request: body },
      {
        kind: "video",
        phase: "started",
        key,
        id: "vid_1",
        fingerprint,
        started_at: clock,
        request: body,
        status: "queued",
      },
    ]);
  });

  it("refuses a start whose intent cannot be written: nothing is sent, and the error names the folder", async () => {
    // The journal's folder is a file now: nothing can be written there, as on a full or broken disk.
    await rm(dir, { recursive: true, force: true });
    await writeFile(dir, "not a folder");
    const refused = await starter
      .startVideo(body, { fingerprint, allowDuplicate: false })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(StateFileError);
    expect(refused).toMatchObject({ code: "internal_error", maybeProcessed: false });
    expect((refused as Error).message).toContain(dir);
    expect((refused as Error).message).toContain("GENERATION_STATE_DIR");
    expect((refused as Error).message).toContain("nothing reached the service and nothing was charged");
    expect(api.generateCalls).toHaveLength(0);
    await rm(dir, { force: true });
  });

  it("returns the identical task started within ten minutes, without a request", async () => {
    const first = await starter.startVideo(body, { fingerprint, allowDuplicate: false });
    clock += TEN_MIN;
    const again = await starter.startVideo(body, { fingerprint, allowDuplicate: false });
    expect(again).toMatchObject({ video_id: first.video_id, reused: true, reconciled: false });
    expect(api.generateCalls).toHaveLength(1);
    clock += 1;
    const later = await starter.startVideo(body, { fingerprint, allowDuplicate: false });
    expect(later).toMatchObject({ video_id: "vid_2", reused: false });
  });

  it("finds an identical task journaled by an earlier run", async () => {
    await starter.startVideo(body, { fingerprint, allowDuplicate: false });
    const reopened = await Journal.open(dir, { now: () => clock });
    const fresh = new TaskStarter({
      api,
      journal: reopened,
      claims: ALONE_CLAIMS,
      ownership: await LocalOwners.open(undefined, () => {}),
      budget: new TokenBucketBudget(),
      now: () => clock,
    });
    expect(await fresh.startVideo(body, { fingerprint, allowDuplicate: false })).toMatchObject({
      video_id: "vid_1",
      reused: true,
    });
    await reopened.close();
  });

  it("starts a new task when allow_duplicate is set, with a new key", async () => {
    await starter.startVideo(body, { fingerprint, allowDuplicate: false });
    const again = await starter.startVideo(body, { fingerprint, allowDuplicate: true });
    expect(again).toMatchObject({ video_id: "vid_2", reused: false });
    const keys = api.generateCalls.map((call) => call.options?.idempotencyKey);
    expect(new Set(keys).size).toBe(2);
  });

  it("lets an identical call that arrives while the first is under way join it", async () => {
    const [a, b] = await Promise.all([
      starter.startVideo(body, { fingerprint, allowDuplicate: false }),
      starter.startVideo(body, { fingerprint, allowDuplicate: false }),
    ]);
    expect(api.generateCalls).toHaveLength(1);
    expect(a).toMatchObject({ video_id: "vid_1", reused: false });
    expect(b).toMatchObject({ video_id: "vid_1", reused: true });
  });

  it("retries a 429 once, after the reset, with the same idempotency key", async () => {
    api.generateFailures.push(new RateLimitError("slow down", { retryAtMs: clock + 10_000 }));
    const outcome = await starter.startVideo(body, { fingerprint, allowDuplicate: false });
    expect(outcome.reused).toBe(false);
    expect(sleeps).toEqual([10_000]);
    const [first, second] = api.generateCalls;
    expect(api.generateCalls).toHaveLength(2);
    expect(second!.options?.idempotencyKey).toBe(first!.options?.idempotencyKey);
  });

  it("answers at once when the reset is further than a tool call can wait, and asks the budget when the error names no reset", async () => {
    api.generateFailures.push(new RateLimitError("slow down", { retryAtMs: clock + 3_600_000 }));
    await expect(starter.startVideo(body, { fingerprint, allowDuplicate: true })).rejects.toMatchObject({
      code: "rate_limit_exceeded",
      maybeProcessed: false,
    });
    expect(api.generateCalls).toHaveLength(1);
    api.generateFailures.push(new RateLimitError("slow down"));
    await starter.startVideo(body, { fingerprint, allowDuplicate: true });
    expect(sleeps).toEqual([1000]);
  });

  it("gives up after the second 429, nothing charged and nothing journaled", async () => {
    api.generateFailures.push(new RateLimitError("slow down"), new RateLimitError("still slow"));
    await expect(starter.startVideo(body, { fingerprint, allowDuplicate: false })).rejects.toMatchObject({
      code: "rate_limit_exceeded",
      maybeProcessed: false,
    });
    expect(api.generateCalls).toHaveLength(2);
    expect(api.listCalls).toHaveLength(0);
    expect(journal.recent()).toHaveLength(0);
  });

  it("stops waiting for the 429 retry when cancelled", async () => {
    api.generateFailures.push(new RateLimitError("slow down"));
    const controller = new AbortController();
    controller.abort();
    await expect(
      starter.startVideo(body, { fingerprint, allowDuplicate: false, signal: controller.signal }),
    ).rejects.toBeInstanceOf(AbortedError);
    expect(api.generateCalls).toHaveLength(0);
  });

  it.each([
    ["a reset after sending", new NetworkError("socket hang up", { maybeProcessed: true })],
    ["a timeout after sending", new TimeoutError("slow", { maybeProcessed: true })],
    ["a 500", new GenerationError("internal_error", "boom", { status: 500, maybeProcessed: true })],
    ["a 502 upstream_error (even unmarked)", new UpstreamError("provider")],
  ])("reconciles %s from the history and adopts the task", async (_name, error) => {
    api.generateFailures.push(error);
    const outcome = await starter.startVideo(body, { fingerprint, allowDuplicate: false });
    expect(outcome).toMatchObject({ video_id: "vid_1", reused: false, reconciled: true });
    expect(api.generateCalls).toHaveLength(1);
    expect(api.listCalls).toHaveLength(1);
    expect(await journalOnDisk()).toMatchObject([
      { phase: "intent", fingerprint },
      { phase: "started", id: "vid_1", fingerprint },
    ]);
    // The next identical call gets it back instead of paying again.
    expect(await starter.startVideo(body, { fingerprint, allowDuplicate: false })).toMatchObject({
      video_id: "vid_1",
      reused: true,
    });
  });

  function historyOf(items: Record<string, unknown>[]): void {
    api.listVideos = async (query) => {
      api.listCalls.push(clock);
      return { items, page: query.page ?? 1, limit: query.limit ?? 20, totals: {} };
    };
  }

  it("does not adopt a task we already know, another prompt, another model, or an old one", async () => {
    await starter.startVideo(body, { fingerprint: "earlier", allowDuplicate: true }); // vid_1, journaled
    historyOf([
      {
        video_id: "vid_1",
        prompt: body.prompt,
        model: body.model,
        created_at: new Date(clock).toISOString(),
      },
      {
        video_id: "other-prompt",
        prompt: "a dog",
        model: body.model,
        created_at: new Date(clock).toISOString(),
      },
      { id: "other-model", prompt: body.prompt, model: "vendor-video-2-0", createdAt: clock },
      { video_id: "other-duration", prompt: body.prompt, duration: 10 },
      {
        video_id: "too-old",
        prompt: body.prompt,
        created_at: new Date(clock - 2 * 60_000 - 1).toISOString(),
      },
      { video_id: "no-prompt", created_at: new Date(clock).toISOString() },
    ]);
    api.generateFailures.push(new TimeoutError("slow", { maybeProcessed: true }));
    await expect(starter.startVideo(body, { fingerprint, allowDuplicate: false })).rejects.toMatchObject({
      maybeProcessed: true,
    });
    expect(journal.recent().map((entry) => entry.id)).toEqual(["vid_1"]);
  });

  it("adopts a history item that nests the spec's fields when prompt, model and time fit (newest wins)", async () => {
    historyOf([
      {
        task: { video_id: 41, created_at: Math.floor(clock / 1000) - 60 },
        input: { prompt: body.prompt },
        model: "video-1-5-pro",
      },
      {
        task: { video_id: 42, created_at: Math.floor(clock / 1000), status: "processing" },
        input: { prompt: `  ${body.prompt} ` },
        model: "video-1-5-pro",
      },
    ]);
    api.generateFailures.push(new NetworkError("reset", { maybeProcessed: true }));
    const outcome = await starter.startVideo(
      { prompt: body.prompt, duration: 5 },
      { fingerprint, allowDuplicate: false },
    );
    expect(outcome).toMatchObject({ video_id: "42", status: "processing", reconciled: true, reused: false });
  });

  it("says plainly that a charge is possible when the history shows nothing", async () => {
    api.generateFailures.push(
      new GenerationError("internal_error", "boom", { status: 500, maybeProcessed: true }),
    );
    historyOf([]);
    const sentAt = clock;
    const failure = starter.startVideo(body, { fingerprint, allowDuplicate: false });
    await expect(failure).rejects.toMatchObject({
      code: "internal_error",
      status: 500,
      maybeProcessed: true,
      nextStep: VIDEO_CHARGE_POSSIBLE,
    });
    await failure.catch((error: GenerationError) => {
      expect(error.nextStep).toContain("a charge is possible");
      expect(error.nextStep).toContain("list_videos");
      expect(error.message).toContain("may have been processed");
    });
    expect(api.generateCalls).toHaveLength(1);
    expect(journal.recent()).toHaveLength(0);
    // Looked twice, a moment apart, before answering; then in the background, further and further apart,
    // until the duplicate window ended: the start is then settled as never processed.
    await vi.waitFor(() => expect(journal.pendingIntents()).toHaveLength(0));
    const looks = api.listCalls.map((at) => at - sentAt);
    expect(looks.length).toBeGreaterThan(4);
    expect(looks.at(-1)).toBeLessThan(TEN_MIN);
    for (let i = 3; i < looks.length; i++) expect(looks[i]! - looks[i - 1]!).toBeGreaterThanOrEqual(5000);
    expect(api.generateCalls).toHaveLength(1);
    expect((await journalOnDisk()).at(-1)).toMatchObject({ phase: "void", fingerprint });
  });

  it("treats a failing history call as not found", async () => {
    api.generateFailures.push(new TimeoutError("slow", { maybeProcessed: true }));
    api.listFailures.push(new UpstreamError("down"), new UpstreamError("down"));
    await expect(starter.startVideo(body, { fingerprint, allowDuplicate: false })).rejects.toMatchObject({
      code: "timeout",
      maybeProcessed: true,
    });
    expect(api.generateCalls).toHaveLength(1);
  });

  it.each([
    ["validation_error", new ValidationError("bad duration")],
    ["insufficient_credits", new InsufficientCreditsError("broke")],
    ["paid_access_required", new PaidAccessRequiredError("pay")],
    ["unauthorized", new UnauthorizedError("bad key")],
    ["a connection never opened", new NetworkError("ECONNREFUSED")],
  ])("rethrows %s as is: no retry, no history call", async (_name, error) => {
    api.generateFailures.push(error);
    await expect(starter.startVideo(body, { fingerprint, allowDuplicate: false })).rejects.toBe(error);
    expect(api.generateCalls).toHaveLength(1);
    expect(api.listCalls).toHaveLength(0);
    expect(sleeps).toEqual([]);
    expect(journal.recent()).toHaveLength(0);
  });

  describe("images", () => {
    const imageBody = { prompt: "a red fox", model: "image-2", output_format: "png" };
    const imagePrint = fingerprintRequest("image", imageBody, ["digest-1"]);

    it("starts, journals the URLs, and returns the result", async () => {
      const outcome = await starter.startImage(imageBody, { fingerprint: imagePrint, allowDuplicate: false });
      expect(outcome.reused).toBe(false);
      expect(outcome.image_urls).toEqual(["https://cdn.example/img_1.png"]);
      expect(outcome.raw).toMatchObject({ image_id: "img_1" });
      expect(await journalOnDisk()).toMatchObject([
        { kind: "image", phase: "intent" },
        {
          kind: "image",
          phase: "started",
          id: "img_1",
          result: { image_urls: ["https://cdn.example/img_1.png"] },
        },
      ]);
    });

    it("returns the stored URLs for an identical request within the window", async () => {
      await starter.startImage(imageBody, { fingerprint: imagePrint, allowDuplicate: false });
      const again = await starter.startImage(imageBody, { fingerprint: imagePrint, allowDuplicate: false });
      expect(again).toEqual({
        result: undefined,
        image_urls: ["https://cdn.example/img_1.png"],
        image_id: "img_1",
        reused: true,
        raw: { image_urls: ["https://cdn.example/img_1.png"] },
      });
      expect(api.generateCalls).toHaveLength(1);
      const forced = await starter.startImage(imageBody, { fingerprint: imagePrint, allowDuplicate: true });
      expect(forced.reused).toBe(false);
      expect(api.generateCalls).toHaveLength(2);
    });

    it("retries a 429 once with the same key", async () => {
      api.generateFailures.push(new RateLimitError("slow", { retryAtMs: clock + 2000 }));
      await starter.startImage(imageBody, { fingerprint: imagePrint, allowDuplicate: false });
      expect(sleeps).toEqual([2000]);
      expect(api.generateCalls[0]!.options?.idempotencyKey).toBe(
        api.generateCalls[1]!.options?.idempotencyKey,
      );
    });

    it("says a charge is possible on an ambiguous failure, with no history to look in", async () => {
      api.generateFailures.push(new NetworkError("reset", { maybeProcessed: true }));
      await expect(
        starter.startImage(imageBody, { fingerprint: imagePrint, allowDuplicate: false }),
      ).rejects.toMatchObject({
        code: "network_error",
        maybeProcessed: true,
        nextStep: IMAGE_CHARGE_POSSIBLE,
      });
      expect(api.listCalls).toHaveLength(0);
      expect(api.generateCalls).toHaveLength(1);
    });

    it("rethrows paid_access_required as is", async () => {
      const error = new PaidAccessRequiredError("pay");
      api.generateFailures.push(error);
      await expect(
        starter.startImage(imageBody, { fingerprint: imagePrint, allowDuplicate: false }),
      ).rejects.toBe(error);
    });
  });
});
