import { describe, expect, it } from "vitest";
import { SAMPLE_VIDEO_MP4 } from "../../src/sandbox/media/sample-video.js";
import { checkJpeg, checkPng, checkWebp } from "./image-check.js";
import { expectOk, useSandbox } from "./support.js";

async function completedVideoUrl(): Promise<{ url: string; origin: string; id: string }> {
  const { api, advance, sandbox } = await useSandbox();
  const started = await api("/generate", { json: { prompt: "p" } });
  advance(10_000);
  const done = await api(`/videos/${started.data.video_id}`);
  return { url: done.data.video_url, origin: sandbox.origin, id: started.data.video_id };
}

describe("video media", () => {
  it("serves a real MP4 of a completed task with Content-Type video/mp4", async () => {
    const { url } = await completedVideoUrl();
    const response = await fetch(url);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("video/mp4");
    expect(response.headers.get("accept-ranges")).toBe("bytes");
    const bytes = Buffer.from(await response.arrayBuffer());
    expect(response.headers.get("content-length")).toBe(String(bytes.length));
    expect(bytes.equals(SAMPLE_VIDEO_MP4)).toBe(true);
    // An ISO BMFF file: ftyp first, and the moov atom before mdat (fast start) so players begin at once.
    expect(bytes.toString("latin1", 4, 8)).toBe("ftyp");
    const text = bytes.toString("latin1");
    expect(text.indexOf("moov")).toBeGreaterThan(0);
    expect(text.indexOf("moov")).toBeLessThan(text.indexOf("mdat"));
    expect(text).toContain("avc1");
    expect(bytes.length).toBeLessThan(40_000);
  });

  it("answers byte ranges with 206 and Content-Range", async () => {
    const { url } = await completedVideoUrl();
    const size = SAMPLE_VIDEO_MP4.length;
    const cases: [string, number, number][] = [
      ["bytes=0-99", 0, 99],
      ["bytes=100-", 100, size - 1],
      ["bytes=-500", size - 500, size - 1],
      [`bytes=10-${size + 1000}`, 10, size - 1],
      [`bytes=${size - 1}-${size - 1}`, size - 1, size - 1],
    ];
    for (const [range, start, end] of cases) {
      const response = await fetch(url, { headers: { Range: range } });
      expect(response.status).toBe(206);
      expect(response.headers.get("content-range")).toBe(`bytes ${start}-${end}/${size}`);
      expect(response.headers.get("content-length")).toBe(String(end - start + 1));
      expect(
        Buffer.from(await response.arrayBuffer()).equals(SAMPLE_VIDEO_MP4.subarray(start, end + 1)),
      ).toBe(true);
    }
  });

  it("answers 416 with bytes */size for a range past the end", async () => {
    const { url } = await completedVideoUrl();
    const size = SAMPLE_VIDEO_MP4.length;
    for (const range of [`bytes=${size}-`, `bytes=${size + 10}-${size + 20}`, "bytes=-0"]) {
      const response = await fetch(url, { headers: { Range: range } });
      expect(response.status).toBe(416);
      expect(response.headers.get("content-range")).toBe(`bytes */${size}`);
      await response.arrayBuffer();
    }
  });

  it("ignores ranges it does not serve and sends the whole file", async () => {
    const { url } = await completedVideoUrl();
    for (const range of ["bytes=0-1,5-6", "items=0-5", "bytes=9-3", "bytes=-"]) {
      const response = await fetch(url, { headers: { Range: range } });
      expect(response.status).toBe(200);
      expect((await response.arrayBuffer()).byteLength).toBe(SAMPLE_VIDEO_MP4.length);
    }
  });

  it("answers HEAD with the headers and no body", async () => {
    const { url } = await completedVideoUrl();
    const response = await fetch(url, { method: "HEAD" });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-length")).toBe(String(SAMPLE_VIDEO_MP4.length));
    expect(response.headers.get("content-type")).toBe("video/mp4");
    expect((await response.arrayBuffer()).byteLength).toBe(0);
  });

  it("has no video for a running, failed or unknown task, and refuses other methods", async () => {
    const { api, advance, sandbox } = await useSandbox();
    await api("/generate", { json: { prompt: "running" } });
    expect((await fetch(`${sandbox.origin}/media/videos/vid_1.mp4`)).status).toBe(404);
    sandbox.faults.failNextTask();
    await api("/generate", { json: { prompt: "failing" } });
    advance(10_000);
    expect((await fetch(`${sandbox.origin}/media/videos/vid_2.mp4`)).status).toBe(404);
    expect((await fetch(`${sandbox.origin}/media/videos/vid_1.mp4`)).status).toBe(200);
    expect((await fetch(`${sandbox.origin}/media/videos/vid_1.webm`)).status).toBe(404);
    expect((await fetch(`${sandbox.origin}/media/videos/nothing.mp4`)).status).toBe(404);
    const post = await fetch(`${sandbox.origin}/media/videos/vid_1.mp4`, { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
  });

  it("needs no key, like a CDN", async () => {
    const { url } = await completedVideoUrl();
    expect((await fetch(url, { headers: { Authorization: "Bearer nonsense" } })).status).toBe(200);
  });
});

describe("image media", () => {
  const sizes: [resolution: string | undefined, ratio: string | undefined, width: number, height: number][] =
    [
      [undefined, undefined, 1024, 1024],
      ["1k", "16:9", 1024, 576],
      ["2k", "9:16", 1152, 2048],
      ["1k", "4:3", 1024, 768],
      ["2k", "21:9", 2048, 878],
      ["4k", "1:1", 4096, 4096],
    ];
  const checks = { png: checkPng, jpg: checkJpeg, webp: checkWebp } as const;
  const types = { png: "image/png", jpg: "image/jpeg", webp: "image/webp" } as const;

  for (const format of ["png", "jpg", "webp"] as const) {
    it(`makes decodable ${format} images sized by resolution and aspect ratio`, async () => {
      const { api } = await useSandbox();
      for (const [resolution, ratio, width, height] of sizes) {
        if (format === "png" && resolution === "4k") continue; // covered once below, it is the slow one
        const answer = await api("/generate-image", {
          json: {
            prompt: "a lighthouse",
            output_format: format,
            ...(resolution ? { resolution } : {}),
            ...(ratio ? { aspect_ratio: ratio } : {}),
          },
        });
        expectOk(answer);
        expect(answer.data).toMatchObject({
          status: "completed",
          output_format: format,
          width,
          height,
          model: "image-2",
        });
        expect(answer.data.image_urls).toHaveLength(1);
        const url: string = answer.data.image_urls[0];
        expect(url.endsWith(`.${format}`)).toBe(true);
        const response = await fetch(url);
        expect(response.status).toBe(200);
        expect(response.headers.get("content-type")).toBe(types[format]);
        const bytes = Buffer.from(await response.arrayBuffer());
        expect(checks[format](bytes)).toEqual({ width, height });
      }
    });
  }

  it("makes a 4k PNG", async () => {
    const { api } = await useSandbox();
    const answer = await api("/generate-image", {
      json: { prompt: "p", resolution: "4k", aspect_ratio: "16:9" },
    });
    const bytes = Buffer.from(await (await fetch(answer.data.image_urls[0])).arrayBuffer());
    expect(checkPng(bytes)).toEqual({ width: 4096, height: 2304 });
  });

  it("serves image ranges and the same bytes each time", async () => {
    const { api } = await useSandbox();
    const answer = await api("/generate-image", { json: { prompt: "p", output_format: "jpg" } });
    const url = answer.data.image_urls[0];
    const whole = Buffer.from(await (await fetch(url)).arrayBuffer());
    const part = await fetch(url, { headers: { Range: "bytes=0-1" } });
    expect(part.status).toBe(206);
    expect(Buffer.from(await part.arrayBuffer())).toEqual(whole.subarray(0, 2));
    expect(Buffer.from(await (await fetch(url)).arrayBuffer()).equals(whole)).toBe(true);
  });

  it("answers the task shape without URLs when asked", async () => {
    const { api, sandbox } = await useSandbox({ shapes: { imageShape: "task" } });
    const answer = await api("/generate-image", { json: { prompt: "p" } });
    expect(answer.data).toEqual({ image_id: "img_1", status: "processing" });
    expect(sandbox.accounts[0]?.credits).toBe(9_995);
  });

  it("404s an unknown image or a wrong extension", async () => {
    const { api, sandbox } = await useSandbox();
    await api("/generate-image", { json: { prompt: "p", output_format: "webp" } });
    expect((await fetch(`${sandbox.origin}/media/images/img_1.webp`)).status).toBe(200);
    expect((await fetch(`${sandbox.origin}/media/images/img_1.png`)).status).toBe(404);
    const missing = await fetch(`${sandbox.origin}/media/images/img_9.png`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ data: null, error: { code: "not_found" } });
  });

  it("accepts edit mode with reference images", async () => {
    const { api } = await useSandbox();
    expectOk(await api("/generate-image", { json: { prompt: "p", images: ["https://cdn.test/a.png"] } }));
  });
});
