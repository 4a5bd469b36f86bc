/**
 * shapes.ts on the nested answers the sandbox serves in its "nested" variant (the spec's field names, nested),
 * and what it says when something truly cannot be found: which fields came (paths, never values) and what
 * did happen.
 */
import { describe, expect, it } from "vitest";
import { GenerationError } from "../../src/api/errors.js";
import {
  toImageResult,
  toStartedVideo,
  toUploadResult,
  toVideoPage,
  toVideoStatus,
} from "../../src/api/shapes.js";
import { sanitizeValue } from "../../src/redact.js";

const ORIGIN = "http://127.0.0.1:4010";
const VIDEO = `${ORIGIN}/media/videos/vid_1.mp4`;
const POSTER = `${ORIGIN}/media/posters/vid_1.jpg`;
const REFERENCE = "https://cdn.test/ref.png";
const SECRET = "sk-live-9f8e7d6c5b4a3f2e1d0c";

function nestedStatus(state: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    task: {
      video_id: "vid_1",
      status: state,
      created_at: "2026-03-01T10:00:00.000Z",
      updated_at: "2026-03-01T10:00:42.000Z",
    },
    request: {
      prompt: "a lighthouse at dusk",
      model: "vendor-video-2-0",
      generation_type: "image_to_video",
      aspect_ratio: "16:9",
      duration: 5,
      resolution: "720p",
      input: { image_url: REFERENCE },
    },
    result: state === "completed" ? { cover: { url: POSTER }, video_url: VIDEO } : {},
    credits: { used: 38, refunded: 0 },
    ...extra,
  };
}

/** The error a call throws, or a failure when it does not throw one. */
function thrown(call: () => unknown): GenerationError {
  try {
    call();
  } catch (error) {
    if (error instanceof GenerationError) return error;
    throw error;
  }
  throw new Error("expected a GenerationError");
}

describe("nested answers", () => {
  it("start: { task: { video_id, status, model }, billing }", () => {
    // billing comes first: its `id` is not a `video_id`, whatever its place.
    const started = toStartedVideo({
      billing: { id: "bill_7", credits_used: 38, credits_remaining: 962 },
      task: { video_id: "vid_1", status: "Queued", model: "vendor-video-2-0" },
    });
    expect(started).toMatchObject({ video_id: "vid_1", status: "queued" });
    expect(started.warnings).toBeUndefined();
  });

  it("status: `video_url` is the video, never the cover before it or the input image", () => {
    const done = toVideoStatus(nestedStatus("completed"), "vid_1");
    expect(done).toMatchObject({
      video_id: "vid_1",
      status: "completed",
      video_url: VIDEO,
      still_url: POSTER,
    });
    expect(done.error).toBeUndefined();
    expect(done.warnings).toBeUndefined();

    const running = toVideoStatus(nestedStatus("processing"), "vid_1");
    expect(running).toMatchObject({ status: "processing", video_url: undefined });
    expect(running.still_url).toBeUndefined();
  });

  it("status: a failed task's nested error object is the error, as received", () => {
    const error = { code: "generation_failed", message: "The provider refused the prompt" };
    const failed = toVideoStatus(nestedStatus("failed", { error }), "vid_1");
    expect(failed).toMatchObject({ status: "failed", video_url: undefined, error });
  });

  it("list: { results: [nested records], meta: { pagination } }", () => {
    const page = toVideoPage(
      {
        results: [nestedStatus("completed"), nestedStatus("processing")],
        meta: { pagination: { page: 2, limit: 10, total: 12, total_pages: 2 } },
      },
      1,
      20,
    );
    expect(page.items).toHaveLength(2);
    expect(page.page).toBe(2);
    expect(page.limit).toBe(10);
    expect(page.totals).toEqual({ page: 2, limit: 10, total: 12, total_pages: 2 });
    // Sanitized items keep their nesting (depth 4 here) instead of being flattened to text.
    const item = sanitizeValue(page.items[0]) as Record<string, unknown>;
    expect(item).toEqual(page.items[0]);
  });

  it("upload: { asset: { id, content_type, size, links: { public } } }", () => {
    const upload = toUploadResult({
      asset: {
        id: "up_1",
        content_type: "image/png",
        size: 2048,
        links: { public: `${ORIGIN}/media/uploads/up_1.png` },
      },
    });
    expect(upload.url).toBe(`${ORIGIN}/media/uploads/up_1.png`);
  });

  it("image: { job: { id, state }, result: { output: [{ url, width, height, format }] }, billing }", () => {
    const image = toImageResult(
      {
        job: { id: "img_1", state: "completed" },
        request: { images: [REFERENCE] },
        result: {
          output: [{ url: `${ORIGIN}/media/images/img_1.png`, width: 1024, height: 1024, format: "png" }],
        },
        billing: { credits_used: 5, credits_remaining: 957 },
      },
      [REFERENCE],
    );
    expect(image.image_urls).toEqual([`${ORIGIN}/media/images/img_1.png`]);
  });

  it("credits: { account: { balance, access, subscription } } passes through sanitized, whole", () => {
    const credits = {
      account: {
        balance: { credits: 962 },
        access: { paid: true },
        subscription: { status: "active", plan: "pro" },
      },
    };
    expect(sanitizeValue(credits)).toEqual(credits);
  });
});

describe("when something truly cannot be found", () => {
  it("an upload answer without a usable URL names its fields, not their values", () => {
    const error = thrown(() =>
      toUploadResult({ asset: { id: SECRET, size: 2048, links: { private: `uploads/${SECRET}.png` } } }),
    );
    expect(error.code).toBe("internal_error");
    expect(error.message).toBe(
      "The service accepted the upload, but its answer carried no usable image URL " +
        "(fields received: asset.id, asset.size, asset.links.private).",
    );
    expect(`${error.message} ${error.nextStep}`).not.toContain(SECRET);
    expect(error.nextStep).toMatch(/uploaded/);
    expect(error.nextStep).toMatch(/no credits/);
    expect(error.nextStep).toMatch(/again uploads it again/);
    expect(error.nextStep).toMatch(/http\(s\) image_url/);
    expect(error.nextStep).toMatch(/maintainers/);
    expect(error.maybeProcessed).toBe(false);
  });

  it("an upload answer whose URL is hostile says a URL field was there", () => {
    const error = thrown(() => toUploadResult({ url: "javascript:alert(1)" }));
    expect(error.message).toContain("fields received: url");
    expect(error.message).toContain("A URL field was present but was not a usable http(s) URL.");
    expect(error.message).not.toContain("javascript");
  });

  it("a start answer without a usable video_id is marked maybe-processed and says not to start again", () => {
    const error = thrown(() =>
      toStartedVideo({ accepted: true, billing: { credits_used: 25, card: SECRET } }),
    );
    expect(error.code).toBe("internal_error");
    expect(error.maybeProcessed).toBe(true);
    expect(error.message).toBe(
      "The service accepted the start request (credits were probably charged), but its answer carried no " +
        "usable video_id (fields received: accepted, billing.credits_used, billing.card).",
    );
    expect(error.message).not.toContain(SECRET);
    expect(error.nextStep).toMatch(/^Do not start the video again/);
    expect(error.nextStep).toMatch(/list_videos/);
    expect(error.nextStep).toMatch(/get_status/);
  });

  it("a start answer whose id cannot be relayed says so, without the id", () => {
    const error = thrown(() => toStartedVideo({ video_id: "vid_1\n2026-03-01 INFO forged log line" }));
    expect(error.maybeProcessed).toBe(true);
    expect(error.message).toContain("(fields received: video_id)");
    expect(error.message).toContain("An id was present but contained characters that cannot be relayed.");
    expect(error.message).not.toContain("forged");
  });

  it("a status answer without a status keeps the requested id and names the fields", () => {
    const error = thrown(() =>
      toVideoStatus({ task: { video_id: "vid_1", state: "done" }, result: { output: [] } }, "vid_1"),
    );
    expect(error.code).toBe("internal_error");
    expect(error.message).toBe(
      "The service's status answer for video_id vid_1 carried no status (fields received: task.video_id, task.state, result.output).",
    );
    expect(error.nextStep).toMatch(/vid_1 is not lost/);
    expect(error.nextStep).not.toMatch(/failed internally/);
  });

  it("a non-object answer is described by its kind", () => {
    expect(thrown(() => toStartedVideo(null)).message).toContain(
      "fields received: none (the answer was null)",
    );
    expect(thrown(() => toUploadResult("not a url")).message).toContain(
      "none (the answer was a bare string)",
    );
  });
});
