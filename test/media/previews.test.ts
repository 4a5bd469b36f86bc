/**
 * Image previews and media links through a real MCP client (the in-process harness) against the sandbox:
 * the previews are decoded and measured, every failure keeps the call successful with a reason, and the
 * settings switch previews and resource links on and off.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { ContentBlock, ImageContent, ResourceLink } from "@modelcontextprotocol/sdk/types.js";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_RESULT_BYTES } from "../../src/media/content.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { ffmpegWrapper } from "../helpers/videos.js";

const images = (content: ContentBlock[]) =>
  content.filter((item): item is ImageContent => item.type === "image");
const links = (content: ContentBlock[]) =>
  content.filter((item): item is ResourceLink => item.type === "resource_link");

async function decoded(item: ImageContent) {
  const metadata = await sharp(Buffer.from(item.data, "base64")).metadata();
  return { format: metadata.format, width: metadata.width, height: metadata.height };
}

describe("image previews with the defaults (previews on, links off)", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.close());

  it("previews a 4k image as a JPEG of at most 1024 px, the whole result under 1 MB", async () => {
    const { result, structured } = await h.call("generate_image", {
      prompt: "a lighthouse at dusk",
      resolution: "4k",
      aspect_ratio: "16:9",
    });
    expect(result.isError).toBeFalsy();
    const [preview, ...more] = images(result.content);
    expect(more).toEqual([]);
    expect(preview?.mimeType).toBe("image/jpeg");
    expect(await decoded(preview as ImageContent)).toEqual({ format: "jpeg", width: 1024, height: 576 });
    expect(Buffer.byteLength(JSON.stringify(result))).toBeLessThan(MAX_RESULT_BYTES);
    // The text and structuredContent stay as they were (the cost told in both); links are off by default.
    expect(result.content[0]).toMatchObject({
      type: "text",
      text: expect.stringMatching(/^Generated 1 image/),
    });
    expect(Object.keys(structured ?? {}).sort()).toEqual([
      "estimated_credits",
      "image_urls",
      "notes",
      "result",
    ]);
    expect(structured?.["notes"]).toEqual(["Estimated cost 5 credits."]);
    expect(links(result.content)).toEqual([]);
  });

  it("never enlarges: a 1k portrait image keeps its size", async () => {
    const { result } = await h.call("generate_image", {
      prompt: "a tall tree",
      resolution: "1k",
      aspect_ratio: "9:16",
    });
    const [preview] = images(result.content);
    expect(await decoded(preview as ImageContent)).toEqual({ format: "jpeg", width: 576, height: 1024 });
  });

  it("keeps the call successful and says why when the image answers 404", async () => {
    h.sandbox.faults.failNext("media", { status: 404, code: "not_found" });
    const { result, text, structured } = await h.call("generate_image", { prompt: "a missing image" });
    expect(result.isError).toBeFalsy();
    expect(structured?.["image_urls"]).toHaveLength(1);
    expect(images(result.content)).toEqual([]);
    expect(text).toMatch(/No preview of the image: .*HTTP 404/);
  });

  it("keeps the call successful and says why when the image URL serves something that is no image", async () => {
    h.sandbox.faults.malformedNext("media", "html");
    const { result, text } = await h.call("generate_image", { prompt: "garbage bytes" });
    expect(result.isError).toBeFalsy();
    expect(images(result.content)).toEqual([]);
    expect(text).toMatch(/No preview of the image: the file is not a PNG, JPEG, WebP or GIF image\./);
  });

  it("makes no preview for a dry run", async () => {
    const mark = h.sandbox.requests.length;
    const { result } = await h.call("generate_image", { prompt: "only the price", dry_run: true });
    expect(result.content).toHaveLength(1);
    expect(h.requestsSince(mark)).toEqual([]);
  });
});

describe("previews off", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ config: { previews: false } });
  });
  afterAll(() => h.close());

  it("fetches nothing and says that previews are off", async () => {
    const mark = h.sandbox.requests.length;
    const { result, text } = await h.call("generate_image", { prompt: "no preview please" });
    expect(result.isError).toBeFalsy();
    expect(images(result.content)).toEqual([]);
    expect(text).toContain("No preview: previews are off (GENERATION_PREVIEWS=off).");
    expect(h.requestsSince(mark).filter((request) => request.route === "media")).toEqual([]);
  });
});

describe("resource links on, a smaller preview side, a service that nests its answers", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      sandbox: { shapes: { nesting: "nested" } },
      config: { resourceLinks: true, previewMaxSide: 256 },
    });
  });
  afterAll(() => h.close());

  it("links the finished image with its MIME type and a name from its id, and scales to the set side", async () => {
    const { result, structured } = await h.call("generate_image", {
      prompt: "a linked image",
      aspect_ratio: "1:1",
    });
    const urls = structured?.["image_urls"] as string[];
    expect(links(result.content)).toEqual([
      {
        type: "resource_link",
        uri: urls[0],
        name: expect.stringMatching(/^image-[A-Za-z0-9._-]+\.png$/),
        title: "Generated image",
        mimeType: "image/png",
      },
    ]);
    const [preview] = images(result.content);
    expect(await decoded(preview as ImageContent)).toEqual({ format: "jpeg", width: 256, height: 256 });
  });

  it("links the finished video and shows the sheet of its frames, not also the still the answer carries", async () => {
    const mark = h.sandbox.requests.length;
    const { result, structured } = await h.call("generate_video", {
      prompt: "a boat with a poster",
      duration: 2,
    });
    expect(result.isError).toBeFalsy();
    expect(structured?.["status"]).toBe("completed");
    expect(structured).not.toHaveProperty("still_url");
    expect(links(result.content)).toEqual([
      {
        type: "resource_link",
        uri: structured?.["video_url"],
        name: `video-${String(structured?.["video_id"])}.mp4`,
        title: "Generated video",
        mimeType: "video/mp4",
      },
    ]);
    // One image per video: the sheet of its frames (at the set side), not also the poster still.
    const shown = images(result.content);
    expect(shown).toHaveLength(1);
    const sheet = await decoded(shown[0] as ImageContent);
    expect(sheet.format).toBe("jpeg");
    expect(Math.max(sheet.width ?? 0, sheet.height ?? 0)).toBeLessThanOrEqual(256);
    expect(structured?.["frames"]).toMatchObject({ frames: 6 });
    // A sheet that comes quickly spares the still: its poster is never fetched.
    expect(h.requestsSince(mark).filter((request) => request.path.includes("/posters/"))).toEqual([]);
  });

  it("previews the still instead when no sheet of the frames can be made (no ffmpeg)", async () => {
    const without = await startHarness({
      sandbox: { shapes: { nesting: "nested" } },
      config: { resourceLinks: true, previewMaxSide: 256, ffmpegPath: "/nonexistent/ffmpeg" },
    });
    try {
      const { result, text } = await without.call("generate_video", { prompt: "a poster only", duration: 2 });
      // The sandbox's poster is 320x180: scaled to the set side, re-encoded as JPEG.
      const shown = images(result.content);
      expect(shown).toHaveLength(1);
      expect(await decoded(shown[0] as ImageContent)).toEqual({ format: "jpeg", width: 256, height: 144 });
      expect(text).toMatch(/No frame preview: ffmpeg was not found/);
    } finally {
      await without.close();
    }
  });

  it("previews the still beside a sheet that hangs: the call answers at the end of its window, with the still", async () => {
    // Passes the binary check, then hangs on the video; the real ffprobe is beside it.
    const hung = ffmpegWrapper(
      await mkdtemp(path.join(tmpdir(), "generation-mcp-hung-ffmpeg-")),
      '[ "$1" = -version ] && exec ffmpeg "$@"\nexec sleep 60',
    );
    const slow = await startHarness({
      sandbox: { shapes: { nesting: "nested" } },
      config: { previewMaxSide: 256, ffmpegPath: hung },
    });
    try {
      // Each media fetch (the video for the sheet, the poster for the still) waits 2 s for its answer.
      slow.sandbox.faults.latency("media", 2000);
      const started = Date.now();
      const { result, text } = await slow.call("generate_video", {
        prompt: "a hung decoder",
        duration: 2,
        timeout_seconds: 8,
      });
      const answered = Date.now();
      const shown = images(result.content);
      expect(shown).toHaveLength(1);
      expect(await decoded(shown[0] as ImageContent)).toEqual({ format: "jpeg", width: 256, height: 144 });
      expect(text).toMatch(/No frame preview yet: the sheet .* was not ready when this call had to answer/);
      const media = slow.requestsSince(0).filter((request) => request.route === "media");
      expect(media.map((request) => request.path.split("/")[2])).toEqual(["videos", "posters"]);
      const [video, poster] = media.map((request) => request.at) as [number, number];
      // The poster is asked for while the sheet still runs (when half of the 8 s window is left, 4 s in), not
      // after the sheet gave up (8 s in), and the answer keeps to the window (not 30 s of sheet, then 2 s of
      // poster).
      expect(poster - video).toBeLessThan(6_000);
      expect(answered - started).toBeLessThan(16_000);
    } finally {
      await slow.close();
      await rm(path.dirname(hung), { recursive: true, force: true });
    }
  }, 60_000);

  it("links nothing while the video is still running", async () => {
    const { result, structured } = await h.call("generate_video", {
      prompt: "a slow boat",
      duration: 2,
      wait: false,
    });
    expect(structured?.["status"]).not.toBe("completed");
    expect(links(result.content)).toEqual([]);
    expect(images(result.content)).toEqual([]);
  });
});
