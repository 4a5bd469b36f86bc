import { describe, expect, it } from "vitest";
import { MiB, rawUpload } from "./raw-client.js";
import type { RawOutcome } from "./raw-client.js";
import { expectError, expectOk, multipart, tinyPng, useSandbox } from "./support.js";

/** Larger than what the loopback socket buffers absorb (a few MiB), so the client is still sending. */
const UPLOAD_BYTES = 32 * MiB;
/** A socket read hands over at most 64 KiB; leave room for a few. */
const CHUNK_SLACK = 256 * 1024;

function expectCutOff(outcome: RawOutcome): void {
  expect(outcome.bodyBytesWritten).toBeLessThan(outcome.bodyBytesTotal);
  expect(outcome.headers.connection).toBe("close");
}

describe("earlyAnswer on a large upload", () => {
  it("answers 400 in the envelope at once and closes while the client is still sending; nothing stored", async () => {
    const { api, sandbox } = await useSandbox();
    sandbox.faults.earlyAnswer("upload", { status: 400 });
    const outcome = await rawUpload(sandbox.baseUrl, sandbox.keys.paid, UPLOAD_BYTES);
    expect(outcome.status).toBe(400);
    expect(JSON.parse(outcome.body)).toEqual({
      data: null,
      error: { code: "validation_error", message: expect.stringContaining("after 0 body bytes") },
    });
    expectCutOff(outcome);
    // The service answered: its headers are there.
    expect(outcome.headers["x-request-id"]).toMatch(/^req_/);
    expect(outcome.headers["x-ratelimit-limit"]).toBe("10000");
    expect(sandbox.requests[0]).toMatchObject({ route: "upload", status: 400, bodyBytes: 0 });
    // Nothing was stored: the first id is still free and its URL unknown.
    expect((await fetch(`${sandbox.origin}/media/uploads/upl_1.png`)).status).toBe(404);
    const real = await api("/upload", { body: multipart("image", "a.png", tinyPng(), "image/png") });
    expect(real.data.url).toBe(`${sandbox.origin}/media/uploads/upl_1.png`);
  });

  it("answers 413 request_too_large after reading about afterBytes, with the given message", async () => {
    const { sandbox } = await useSandbox();
    sandbox.faults.earlyAnswer("upload", { status: 413, afterBytes: MiB, message: "Body over 1 MiB" });
    const outcome = await rawUpload(sandbox.baseUrl, sandbox.keys.paid, UPLOAD_BYTES);
    expect(outcome.status).toBe(413);
    expect(JSON.parse(outcome.body)).toEqual({
      data: null,
      error: { code: "request_too_large", message: "Body over 1 MiB" },
    });
    expectCutOff(outcome);
    const bodyBytes = sandbox.requests[0]?.bodyBytes ?? -1;
    expect(bodyBytes).toBeGreaterThanOrEqual(MiB);
    expect(bodyBytes).toBeLessThan(MiB + CHUNK_SLACK);
  });

  it("answers 413 as a proxy's HTML page, without the service's headers", async () => {
    const { sandbox } = await useSandbox();
    sandbox.faults.earlyAnswer("upload", { status: 413, html: true, afterBytes: MiB });
    const outcome = await rawUpload(sandbox.baseUrl, sandbox.keys.paid, UPLOAD_BYTES);
    expect(outcome.status).toBe(413);
    expect(outcome.headers["content-type"]).toMatch(/^text\/html/);
    expect(outcome.body).toContain("<h1>413 Request Entity Too Large</h1>");
    expect(outcome.body).not.toContain("{");
    expect(outcome.headers["x-request-id"]).toBeUndefined();
    expect(outcome.headers["x-ratelimit-limit"]).toBeUndefined();
    expectCutOff(outcome);
  });

  it("answers 200 with an upload URL that was never stored", async () => {
    const { sandbox } = await useSandbox();
    sandbox.faults.earlyAnswer("upload", { status: 200, afterBytes: 2 * MiB });
    const outcome = await rawUpload(sandbox.baseUrl, sandbox.keys.paid, UPLOAD_BYTES);
    expect(outcome.status).toBe(200);
    const answer = JSON.parse(outcome.body) as { data: { url: string; size: number }; error: null };
    expect(answer.error).toBeNull();
    expect(answer.data.url).toMatch(new RegExp(`^${sandbox.origin}/media/uploads/upl_1\\.png$`));
    expect(answer.data.size).toBe(sandbox.requests[0]?.bodyBytes);
    expectCutOff(outcome);
    expect((await fetch(answer.data.url)).status).toBe(404);

    sandbox.shapes.nesting = "nested";
    sandbox.faults.earlyAnswer("upload", { status: 200 });
    const nested = await rawUpload(sandbox.baseUrl, sandbox.keys.paid, UPLOAD_BYTES);
    const data = (JSON.parse(nested.body) as { data: { asset: { id: string; links: { public: string } } } })
      .data;
    expect(data.asset.links.public).toBe(`${sandbox.origin}/media/uploads/${data.asset.id}.png`);
    expect((await fetch(data.asset.links.public)).status).toBe(404);
  });

  it("answers a JSON route's 200 without creating or charging anything", async () => {
    const { api, sandbox } = await useSandbox();
    sandbox.faults.earlyAnswer("generate", { status: 200, afterBytes: MiB, count: 2 });
    for (let i = 1; i <= 2; i++) {
      const answer = await api("/generate", { json: { prompt: "p" } });
      expectOk(answer);
      expect(answer.headers.get("connection")).toBe("close");
      expect(answer.data).toEqual({
        video_id: `vid_${i}`,
        status: "queued",
        model: "vendor-video-1-5-pro",
        credits_used: 0,
        credits_remaining: 10_000,
      });
      expectError(await api(`/videos/vid_${i}`), 404, "not_found");
    }
    expect(sandbox.accounts[0]?.credits).toBe(10_000);
    expect((await api("/videos")).data.total).toBe(0);
    expect((await api("/generate", { json: { prompt: "p" } })).data.credits_used).toBe(25);
  });

  it("lets a body-less route's handler answer a 2xx, then closes", async () => {
    const { api, sandbox } = await useSandbox();
    sandbox.faults.earlyAnswer("credits", { status: 200 });
    const answer = await api("/credits");
    expect(answer.data.credits).toBe(10_000);
    expect(answer.headers.get("connection")).toBe("close");
  });

  it("comes after auth and forced errors in the pipeline, and leaves other routes alone", async () => {
    const { api, sandbox } = await useSandbox();
    sandbox.faults.earlyAnswer("upload", { status: 413 });
    expectOk(await api("/credits"));
    expectError(
      await api("/upload", { key: null, body: multipart("image", "a.png", tinyPng()) }),
      401,
      "unauthorized",
    );
    sandbox.faults.failNext("upload", { status: 503, code: "service_unavailable" });
    expectError(
      await api("/upload", { body: multipart("image", "a.png", tinyPng()) }),
      503,
      "service_unavailable",
    );
    const outcome = await rawUpload(sandbox.baseUrl, sandbox.keys.paid, UPLOAD_BYTES);
    expect(outcome.status).toBe(413);
    expectOk(await api("/upload", { body: multipart("image", "a.png", tinyPng(), "image/png") }));
  });
});

describe("resetAfterBytes", () => {
  it("resets the connection after reading about N bytes, without an answer", async () => {
    const { api, sandbox } = await useSandbox();
    sandbox.faults.resetAfterBytes("upload", 2 * MiB);
    const outcome = await rawUpload(sandbox.baseUrl, sandbox.keys.paid, UPLOAD_BYTES);
    expect(outcome.received.length).toBe(0);
    expect(["ECONNRESET", "EPIPE"]).toContain(outcome.errorCode);
    expect(outcome.bodyBytesWritten).toBeLessThan(outcome.bodyBytesTotal);
    const record = sandbox.requests[0];
    expect(record).toMatchObject({ route: "upload", status: 0 });
    expect(record?.bodyBytes).toBeGreaterThanOrEqual(2 * MiB);
    expect(record?.bodyBytes).toBeLessThan(2 * MiB + CHUNK_SLACK);
    const real = await api("/upload", { body: multipart("image", "a.png", tinyPng(), "image/png") });
    expect(real.data.url).toBe(`${sandbox.origin}/media/uploads/upl_1.png`);
  });

  it("resets a small request before any answer", async () => {
    const { api, sandbox } = await useSandbox();
    sandbox.faults.resetAfterBytes("generate", 0, 2);
    await expect(api("/generate", { json: { prompt: "p" } })).rejects.toThrow();
    await expect(api("/generate", { json: { prompt: "p" } })).rejects.toThrow();
    expectOk(await api("/generate", { json: { prompt: "p" } }));
    expect(sandbox.requests.map((r) => r.status)).toEqual([0, 0, 200]);
    expect(sandbox.accounts[0]?.credits).toBe(10_000 - 25);
  });
});

describe("patchNext", () => {
  it("merges hostile values into the next generate answer and removes keys, without touching the store", async () => {
    const { api, sandbox } = await useSandbox();
    const hostile = "\u001b[31mqueued\u001b[0m\nInjected: line";
    sandbox.faults.patchNext("generate", { status: hostile, extra: { nested: true } }, { remove: ["model"] });
    const patched = await api("/generate", { json: { prompt: "p" } });
    expect(patched.data).toEqual({
      video_id: "vid_1",
      status: hostile,
      extra: { nested: true },
      credits_used: 25,
      credits_remaining: 9_975,
    });
    expect((await api("/videos/vid_1")).data.status).toBe("queued");
    expect((await api("/generate", { json: { prompt: "p" } })).data).toMatchObject({
      status: "queued",
      model: "vendor-video-1-5-pro",
    });
  });

  it("patches video-status answers, waits for a success answer, and counts", async () => {
    const { api, advance, sandbox } = await useSandbox();
    await api("/generate", { json: { prompt: "p" } });
    advance(10_000);
    const huge = "x".repeat(3_000_000);
    sandbox.faults.patchNext(
      "video-status",
      { video_id: "vid_1\nrm -rf /", status: huge, video_url: "javascript:alert(1)" },
      { count: 2, remove: ["prompt"] },
    );
    expectError(await api("/videos/unknown"), 404, "not_found");
    for (let i = 0; i < 2; i++) {
      const answer = await api("/videos/vid_1");
      expect(answer.data.video_id).toBe("vid_1\nrm -rf /");
      expect(answer.data.status).toHaveLength(3_000_000);
      expect(answer.data.video_url).toBe("javascript:alert(1)");
      expect(answer.data).not.toHaveProperty("prompt");
      expect(answer.data.model).toBe("vendor-video-1-5-pro");
    }
    sandbox.faults.patchNext("video-status", { video_url: "http://169.254.169.254/latest/meta-data/" });
    expect((await api("/videos/vid_1")).data.video_url).toBe("http://169.254.169.254/latest/meta-data/");
    const normal = await api("/videos/vid_1");
    expect(normal.data).toMatchObject({ video_id: "vid_1", status: "completed", prompt: "p" });
    expect(normal.data.video_url).toBe(`${sandbox.origin}/media/videos/vid_1.mp4`);
  });

  it("merges at the top level of a nested answer", async () => {
    const { api, sandbox } = await useSandbox({ shapes: { nesting: "nested" } });
    await api("/generate", { json: { prompt: "p" } });
    sandbox.faults.patchNext(
      "video-status",
      { task: { id: "vid_1", state: "done\u0007" } },
      { remove: ["credits"] },
    );
    const answer = await api("/videos/vid_1");
    expect(answer.data.task).toEqual({ id: "vid_1", state: "done\u0007" });
    expect(answer.data).not.toHaveProperty("credits");
    expect(answer.data.request.prompt).toBe("p");
  });

  it("leaves an array answer alone and stays armed", async () => {
    const { api, sandbox } = await useSandbox({ shapes: { listShape: "array" } });
    sandbox.faults.patchNext("*", { injected: 1 });
    expect((await api("/videos")).data).toEqual([]);
    expect((await api("/credits")).data.injected).toBe(1);
  });
});

describe("clear", () => {
  it("disarms earlyAnswer, resetAfterBytes and patchNext", async () => {
    const { api, sandbox } = await useSandbox();
    sandbox.faults.earlyAnswer("*", { status: 413, count: 5 });
    sandbox.faults.resetAfterBytes("*", 0, 5);
    sandbox.faults.patchNext("*", { status: "patched" }, { count: 5 });
    sandbox.faults.clear();
    const upload = await api("/upload", { body: multipart("image", "a.png", tinyPng(), "image/png") });
    expect(upload.data.url).toBe(`${sandbox.origin}/media/uploads/upl_1.png`);
    expect(upload.headers.get("connection")).not.toBe("close");
    const started = await api("/generate", { json: { prompt: "p" } });
    expect(started.data.status).toBe("queued");
    expect(sandbox.requests.every((r) => r.bodyBytes === undefined)).toBe(true);
  });

  it("refuses nonsense settings", async () => {
    const { sandbox } = await useSandbox();
    expect(() => sandbox.faults.earlyAnswer("upload", { status: 100 })).toThrow(RangeError);
    expect(() => sandbox.faults.earlyAnswer("upload", { status: 413, afterBytes: -1 })).toThrow(RangeError);
    expect(() => sandbox.faults.earlyAnswer("upload", { status: 413, count: 0 })).toThrow(RangeError);
    expect(() => sandbox.faults.resetAfterBytes("upload", 1.5)).toThrow(RangeError);
    expect(() => sandbox.faults.patchNext("upload", {}, { count: -1 })).toThrow(RangeError);
  });
});
