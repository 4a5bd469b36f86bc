/** Tolerance of the shapes the spec leaves open, on the normalizers alone. */
import { describe, expect, it } from "vitest";
import {
  toImageResult,
  toStartedVideo,
  toUploadResult,
  toVideoPage,
  toVideoStatus,
} from "../../src/api/normalize.js";

describe("normalizers", () => {
  it("reads a start answer's id under common names and refuses one without any", () => {
    expect(toStartedVideo({ video_id: "a" }).video_id).toBe("a");
    expect(toStartedVideo({ id: 42 }).video_id).toBe("42");
    expect(toStartedVideo({ task: { task_id: "t" } }).video_id).toBe("t");
    expect(() => toStartedVideo({ status: "queued" })).toThrow(/no usable video_id/);
  });

  it("never takes a reference image URL for the video URL", () => {
    const running = toVideoStatus({ status: "Processing", image_url: "https://x.test/ref.png" }, "v");
    expect(running).toMatchObject({ video_id: "v", status: "processing", video_url: undefined });
    const done = toVideoStatus(
      { status: "completed", thumbnail_url: "https://x.test/t.jpg", output: "https://x.test/v.mp4" },
      "v",
    );
    expect(done.video_url).toBe("https://x.test/v.mp4");
    expect(toVideoStatus({ state: "completed", video: { url: "https://x.test/n.mp4" } }, "v").video_url).toBe(
      "https://x.test/n.mp4",
    );
  });

  it("reads history as a bare array or inside an object with totals", () => {
    expect(toVideoPage([{ id: 1 }, "junk"], 2, 5)).toEqual({
      items: [{ id: 1 }],
      page: 2,
      limit: 5,
      totals: {},
    });
    const page = toVideoPage(
      { videos: [{ id: 1 }], total: 9, has_more: true, pagination: { pages: 3 } },
      1,
      20,
    );
    expect(page.items).toEqual([{ id: 1 }]);
    // Totals are flattened: the numbers of a pagination object join the top level's.
    expect(page.totals).toEqual({ total: 9, has_more: true, pages: 3 });
  });

  it("finds the upload URL under any field name, or as the bare data", () => {
    expect(toUploadResult({ url: "https://x.test/a" }).url).toBe("https://x.test/a");
    expect(toUploadResult({ image_url: "https://x.test/b" }).url).toBe("https://x.test/b");
    expect(toUploadResult({ id: "u1", location: "https://x.test/c" }).url).toBe("https://x.test/c");
    expect(toUploadResult("https://x.test/d").url).toBe("https://x.test/d");
    expect(() => toUploadResult({ id: "u1" })).toThrow(/no usable image URL/);
  });

  it("collects image URLs from any field, leaving out the references that were sent", () => {
    const result = toImageResult(
      {
        images: [{ url: "https://x.test/1.png" }, "https://x.test/2.png"],
        input: ["https://x.test/ref.png"],
      },
      ["https://x.test/ref.png"],
    );
    expect(result.image_urls).toEqual(["https://x.test/1.png", "https://x.test/2.png"]);
    expect(toImageResult({ image_id: "i", status: "processing" }).image_urls).toEqual([]);
  });
});
