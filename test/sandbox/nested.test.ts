import { describe, expect, it } from "vitest";
import { DEFAULT_SHAPES } from "../../src/sandbox/index.js";
import { SAMPLE_VIDEO_MP4 } from "../../src/sandbox/media/sample-video.js";
import { checkPng } from "./image-check.js";
import { expectError, expectOk, multipart, tinyPng, useSandbox } from "./support.js";

const T0_ISO = "2026-01-01T00:00:00.000Z";

function nestedSandbox(): ReturnType<typeof useSandbox> {
  return useSandbox({ shapes: { nesting: "nested" } });
}

describe("nesting", () => {
  it("is flat by default and switches at runtime", async () => {
    expect(DEFAULT_SHAPES.nesting).toBe("flat");
    const { api, sandbox } = await useSandbox();
    expect(sandbox.shapes.nesting).toBe("flat");
    expect((await api("/credits")).data.credits).toBe(10_000);
    sandbox.shapes.nesting = "nested";
    expect((await api("/credits")).data.account.balance.credits).toBe(10_000);
    sandbox.shapes.nesting = "flat";
    expect((await api("/credits")).data).not.toHaveProperty("account");
  });
});

describe("nested POST /generate", () => {
  it("answers task and billing", async () => {
    const { api } = await nestedSandbox();
    const answer = await api("/generate", { json: { prompt: "p" } });
    expectOk(answer);
    expect(answer.data).toEqual({
      task: { video_id: "vid_1", status: "queued", model: "vendor-video-1-5-pro" },
      billing: { credits_used: 25, credits_remaining: 9_975 },
    });
  });
});

describe("nested GET /videos/:id", () => {
  it("answers a running task without result or failure", async () => {
    const { api, advance } = await nestedSandbox();
    await api("/generate", { json: { prompt: "a cat", duration: 2, aspect_ratio: "9:16" } });
    expect((await api("/videos/vid_1")).data).toEqual({
      task: { video_id: "vid_1", status: "queued", created_at: T0_ISO, updated_at: T0_ISO },
      request: {
        prompt: "a cat",
        model: "vendor-video-1-5-pro",
        generation_type: "text_to_video",
        aspect_ratio: "9:16",
        duration: 2,
      },
      credits: { used: 10 },
    });
    advance(2_000);
    expect((await api("/videos/vid_1")).data.task).toEqual({
      video_id: "vid_1",
      status: "processing",
      created_at: T0_ISO,
      updated_at: "2026-01-01T00:00:01.000Z",
    });
  });

  it("puts the poster before the video in a completed task, and both URLs serve what they say", async () => {
    const { api, advance, sandbox } = await nestedSandbox();
    await api("/generate", {
      json: {
        prompt: "a cat",
        model: "vendor-video-2-0",
        resolution: "1080p",
        duration: 4,
        generation_type: "image_to_video",
        image_url: "https://example.com/cat.png",
      },
    });
    advance(5_000);
    const answer = await api("/videos/vid_1");
    const poster = `${sandbox.origin}/media/posters/vid_1.png`;
    const video = `${sandbox.origin}/media/videos/vid_1.mp4`;
    expect(answer.data).toEqual({
      task: {
        video_id: "vid_1",
        status: "completed",
        created_at: T0_ISO,
        updated_at: "2026-01-01T00:00:05.000Z",
      },
      request: {
        prompt: "a cat",
        model: "vendor-video-2-0",
        generation_type: "image_to_video",
        aspect_ratio: "16:9",
        duration: 4,
        resolution: "1080p",
        input: { image_url: "https://example.com/cat.png" },
      },
      result: { cover: { url: poster }, video_url: video },
      credits: { used: 40 },
    });
    // Key order is the trap: a client walking the answer meets the poster first.
    expect(Object.keys(answer.data.result)).toEqual(["cover", "video_url"]);
    expect(answer.text.indexOf(poster)).toBeLessThan(answer.text.indexOf(video));
    expect(answer.data).not.toHaveProperty("error");

    const still = await fetch(poster);
    expect(still.status).toBe(200);
    expect(still.headers.get("content-type")).toBe("image/png");
    const bytes = Buffer.from(await still.arrayBuffer());
    expect(checkPng(bytes)).toEqual({ width: 320, height: 180 });
    expect(still.headers.get("content-length")).toBe(String(bytes.length));
    const head = await fetch(poster, { method: "HEAD" });
    expect(head.headers.get("content-length")).toBe(String(bytes.length));
    expect((await head.arrayBuffer()).byteLength).toBe(0);
    const range = await fetch(poster, { headers: { Range: "bytes=0-7" } });
    expect(range.status).toBe(206);
    expect(Buffer.from(await range.arrayBuffer()).equals(bytes.subarray(0, 8))).toBe(true);

    const mp4 = await fetch(video);
    expect(mp4.headers.get("content-type")).toBe("video/mp4");
    expect(Buffer.from(await mp4.arrayBuffer()).equals(SAMPLE_VIDEO_MP4)).toBe(true);
  });

  it("carries the error and the refund for a failed task, and no result", async () => {
    const { api, sandbox } = await nestedSandbox();
    await api("/generate", { json: { prompt: "p" } });
    expect(sandbox.faults.failTask("vid_1", "The provider gave up")).toBe(true);
    const answer = await api("/videos/vid_1");
    expect(answer.data.task.status).toBe("failed");
    expect(answer.data.error).toEqual({ code: "generation_failed", message: "The provider gave up" });
    expect(answer.data.credits).toEqual({ used: 25, refunded: 25 });
    expect(answer.data).not.toHaveProperty("result");
    expect((await fetch(`${sandbox.origin}/media/posters/vid_1.png`)).status).toBe(404);
  });

  it("keeps errors in the normal envelope", async () => {
    const { api } = await nestedSandbox();
    expectError(await api("/videos/nope"), 404, "not_found");
    expectError(await api("/generate", { json: { prompt: "" } }), 400, "validation_error");
    expectError(await api("/credits", { key: null }), 401, "unauthorized");
  });
});

describe("poster media", () => {
  it("answers 404 for unknown, unfinished and misnamed posters, in both nestings", async () => {
    const { api, advance, sandbox } = await useSandbox();
    await api("/generate", { json: { prompt: "p" } });
    const poster = `${sandbox.origin}/media/posters/vid_1.png`;
    expect((await fetch(poster)).status).toBe(404);
    advance(5_000);
    expect((await fetch(poster)).status).toBe(200);
    expect((await fetch(`${sandbox.origin}/media/posters/vid_1.jpg`)).status).toBe(404);
    expect((await fetch(`${sandbox.origin}/media/posters/vid_2.png`)).status).toBe(404);
    const head = await fetch(`${sandbox.origin}/media/posters/vid_2.png`, { method: "HEAD" });
    expect(head.status).toBe(404);
  });
});

describe("nested GET /videos", () => {
  it("answers results with pagination under meta", async () => {
    const { api } = await nestedSandbox();
    for (let i = 1; i <= 3; i++) await api("/generate", { json: { prompt: `video ${i}`, duration: 1 } });
    const answer = await api("/videos?page=2&limit=2");
    expect(Object.keys(answer.data)).toEqual(["results", "meta"]);
    expect(answer.data.meta).toEqual({ pagination: { page: 2, limit: 2, total: 3, total_pages: 2 } });
    expect(answer.data.results).toHaveLength(1);
    expect(answer.data.results[0]).toEqual({
      task: { video_id: "vid_1", status: "queued", created_at: T0_ISO, updated_at: T0_ISO },
      request: {
        prompt: "video 1",
        model: "vendor-video-1-5-pro",
        generation_type: "text_to_video",
        aspect_ratio: "16:9",
        duration: 1,
      },
      credits: { used: 5 },
    });
    expect(
      (await api("/videos")).data.results.map((r: { task: { video_id: string } }) => r.task.video_id),
    ).toEqual(["vid_3", "vid_2", "vid_1"]);
  });

  it("answers an empty history with zero pages", async () => {
    const { api } = await nestedSandbox();
    expect((await api("/videos")).data).toEqual({
      results: [],
      meta: { pagination: { page: 1, limit: 20, total: 0, total_pages: 0 } },
    });
  });

  it("answers the bare array of nested records with listShape array", async () => {
    const { api, advance, sandbox } = await nestedSandbox();
    sandbox.shapes.listShape = "array";
    await api("/generate", { json: { prompt: "p" } });
    advance(5_000);
    const answer = await api("/videos");
    expect(Array.isArray(answer.data)).toBe(true);
    expect(answer.data).toHaveLength(1);
    expect(answer.data[0].task).toMatchObject({ video_id: "vid_1", status: "completed" });
    expect(answer.data[0].result.video_url).toBe(`${sandbox.origin}/media/videos/vid_1.mp4`);
  });
});

describe("nested POST /generate-image", () => {
  it("answers job, result and billing, and the URL serves an image of that size", async () => {
    const { api, sandbox } = await nestedSandbox();
    const answer = await api("/generate-image", { json: { prompt: "p", aspect_ratio: "16:9" } });
    const url = `${sandbox.origin}/media/images/img_1.png`;
    expect(answer.data).toEqual({
      job: { id: "img_1", state: "completed" },
      result: { output: [{ url, width: 1024, height: 576, format: "png" }] },
      billing: { credits_used: 5, credits_remaining: 9_995 },
    });
    const image = await fetch(url);
    expect(checkPng(Buffer.from(await image.arrayBuffer()))).toEqual({ width: 1024, height: 576 });
  });

  it("answers only the job with imageShape task", async () => {
    const { api, sandbox } = await nestedSandbox();
    sandbox.shapes.imageShape = "task";
    expect((await api("/generate-image", { json: { prompt: "p" } })).data).toEqual({
      job: { id: "img_1", state: "processing" },
    });
  });
});

describe("nested POST /upload", () => {
  it("answers the asset with its public link, whatever uploadUrlField says", async () => {
    const { api, sandbox } = await nestedSandbox();
    sandbox.shapes.uploadUrlField = "file_url";
    const png = tinyPng();
    const answer = await api("/upload", { body: multipart("image", "a.png", png, "image/png") });
    const url = `${sandbox.origin}/media/uploads/upl_1.png`;
    expect(answer.data).toEqual({
      asset: { id: "upl_1", content_type: "image/png", size: png.length, links: { public: url } },
    });
    const served = await fetch(url);
    expect(Buffer.from(await served.arrayBuffer()).equals(png)).toBe(true);
  });
});

describe("nested GET /credits", () => {
  it("answers balance, access and subscription", async () => {
    const { api, sandbox } = await nestedSandbox();
    expect((await api("/credits")).data).toEqual({
      account: {
        balance: { credits: 10_000 },
        access: { paid: true },
        subscription: { status: "active", plan: "pro" },
      },
    });
    expect((await api("/credits", { key: sandbox.keys.free })).data).toEqual({
      account: {
        balance: { credits: 100 },
        access: { paid: false },
        subscription: { status: "none", plan: null },
      },
    });
  });
});
