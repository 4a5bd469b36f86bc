/** The text mirror reads cleanly at the edges: an empty page, the last page, a reused task's cost. */
import { afterEach, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../helpers/harness.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("texts", () => {
  it("a reused task says nothing new was charged, never 'Estimated cost' as if it were", async () => {
    h = await startHarness();
    const first = await h.call("generate_video", { prompt: "a quiet harbour", wait: false });
    expect(first.text).toContain("Estimated cost 25 credits.");
    const again = await h.call("generate_video", { prompt: "a quiet harbour", wait: false });
    expect(again.structured).toMatchObject({ reused: true, estimated_credits: 25 });
    expect(again.text).not.toContain("Estimated cost");
    expect(again.text).toContain("No new credits were charged");
    expect(again.text).not.toMatch(/nothing new was charged.*\n.*Estimated cost/s);
  });

  it("an empty history, an empty page past the end, and the last page say so", async () => {
    h = await startHarness();
    const none = await h.call("list_videos", {});
    expect(none.text).toBe("No videos yet for this API key.");
    for (const prompt of ["one", "two", "three"]) await h.call("generate_video", { prompt, wait: false });

    const first = await h.call("list_videos", { limit: 2 });
    expect(first.text).toMatch(/^Page 1 of 2, 2 item\(s\) of 3:/);
    expect(first.text).toMatch(/More: call list_videos with page 2\.$/);
    const last = await h.call("list_videos", { page: 2, limit: 2 });
    expect(last.text).toMatch(/^Page 2 of 2, 1 item\(s\) of 3:/);
    expect(last.text).toMatch(/This is the last page\.$/);
    const past = await h.call("list_videos", { page: 5, limit: 2 });
    expect(past.result.isError).toBeFalsy();
    expect(past.text).toBe(
      "Page 5 is empty: it is past the last page (the history has 3 video(s) on 2 page(s)).",
    );
  });

  it("a bare-array history without totals still tells the last page from a short one", async () => {
    h = await startHarness({ sandbox: { shapes: { listShape: "array" } } });
    for (const prompt of ["one", "two", "three"]) await h.call("generate_video", { prompt, wait: false });
    const full = await h.call("list_videos", { limit: 3 });
    expect(full.text).toMatch(/There may be more: call list_videos with page 2 to see\.$/);
    const short = await h.call("list_videos", { page: 2, limit: 2 });
    expect(short.text).toMatch(/This is the last page\.$/);
  });
});
