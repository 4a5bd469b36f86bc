/**
 * Every tool against a service that nests the spec's fields (the sandbox's "nested" variant: `task.status`,
 * `result.video_url` after a poster in `result.cover`, `error` beside them, `asset.links.public`,
 * `meta.pagination` ...): the same results as with the flat answers, through a real MCP client.
 */
import { readFile } from "node:fs/promises";
import { afterEach, describe, expect, it } from "vitest";
import { startHarness, writeImage, type Harness } from "../helpers/harness.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const nested = (timings?: { queuedMs: number; processingMs: number }) =>
  startHarness({ sandbox: { shapes: { nesting: "nested" }, ...(timings && { timings }) } });

describe("every tool against nested answers", () => {
  it("generate_video waits to the video's URL (not the poster beside it), get_status and download agree", async () => {
    h = await nested();
    const made = await h.call("generate_video", { prompt: "a nested boat", duration: 2, download: true });
    expect(made.result.isError, made.text).toBeFalsy();
    const videoId = String(made.structured?.["video_id"]);
    expect(videoId).toMatch(/^vid_/);
    expect(made.structured).toMatchObject({ status: "completed" });
    expect(String(made.structured?.["video_url"])).toMatch(/\/media\/videos\/.+\.mp4$/);
    const saved = await readFile(String(made.structured?.["local_path"]));
    expect(saved.subarray(4, 8).toString("ascii")).toBe("ftyp");

    const status = await h.call("get_status", { video_id: videoId });
    expect(status.structured).toMatchObject({ video_id: videoId, status: "completed" });
    expect(status.structured?.["video_url"]).toBe(made.structured?.["video_url"]);
  });

  it("a failed task reports the service's reason from a nested `error`", async () => {
    h = await nested();
    h.sandbox.faults.failNextTask("the provider melted");
    const failed = await h.call("generate_video", { prompt: "doomed", duration: 1 });
    expect(failed.structured).toMatchObject({ status: "failed" });
    expect(JSON.stringify(failed.structured?.["error"])).toContain("the provider melted");
    expect(failed.text).toContain("the provider melted");
  });

  it("upload_image finds asset.links.public; generate_video with image_path uses it", async () => {
    h = await nested();
    const file = await writeImage(h.imagesDir, "ref.png");
    const uploaded = await h.call("upload_image", { path: file });
    expect(uploaded.result.isError, uploaded.text).toBeFalsy();
    expect(String(uploaded.structured?.["url"])).toMatch(/\/media\/uploads\/.+\.png$/);
    const started = await h.call("generate_video", { prompt: "animate it", image_path: file, wait: false });
    expect(started.result.isError, started.text).toBeFalsy();
    const record = await fetch(`${h.sandbox.baseUrl}/videos/${String(started.structured?.["video_id"])}`, {
      headers: { authorization: `Bearer ${h.sandbox.keys.paid}` },
    });
    const data = ((await record.json()) as { data: { request: { input?: { image_url: string } } } }).data;
    expect(data.request.input?.image_url).toMatch(/\/media\/uploads\//);
  });

  it("generate_image finds result.output[*].url, and list_videos reads results + meta.pagination", async () => {
    // The videos listed are still under way however slowly the machine starts them (images answer at once).
    h = await nested({ queuedMs: 60_000, processingMs: 60_000 });
    const image = await h.call("generate_image", { prompt: "a nested fox" });
    expect(image.result.isError, image.text).toBeFalsy();
    const urls = image.structured?.["image_urls"] as string[];
    expect(urls).toHaveLength(1);
    expect(urls[0]).toMatch(/\/media\/images\/.+\.png$/);

    for (const prompt of ["one", "two", "three"]) await h.call("generate_video", { prompt, wait: false });
    const page = await h.call("list_videos", { limit: 2 });
    expect(page.result.isError, page.text).toBeFalsy();
    expect(page.structured).toMatchObject({ page: 1, limit: 2, total: 3, total_pages: 2 });
    expect(page.structured?.["items"]).toHaveLength(2);
    expect(page.text).toMatch(
      /^Page 1 of 2, 2 item\(s\) of 3:\n- vid_\S+ (queued|processing)\n- vid_\S+ (queued|processing)\nMore:/,
    );
  });

  it("get_credits passes the nested account through", async () => {
    h = await nested();
    const credits = await h.call("get_credits", {});
    expect(credits.structured).toMatchObject({
      account: { balance: { credits: 10_000 }, access: { paid: true } },
    });
  });

  it("an identical start after a lost answer is settled from a nested history", async () => {
    h = await nested();
    h.sandbox.faults.dropNext("generate", { phase: "after" });
    const adopted = await h.call("generate_video", { prompt: "a lost answer", wait: false });
    expect(adopted.result.isError, adopted.text).toBeFalsy();
    expect(adopted.structured).toMatchObject({ warning: expect.stringContaining("adopted") });
  });
});
