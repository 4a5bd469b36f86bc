/**
 * The frame sheet lives inside the call's window: a video that finishes late in it, served by a slow CDN
 * (the sandbox's media answers held back), is answered when the window ends, with a note instead of the
 * sheet, which goes on being made and comes with the next get_status, from the one fetch. In-process server,
 * real sandbox over HTTP, real ffmpeg.
 */
import type { ImageContent } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness, type ToolCall } from "../helpers/harness.js";

let h: Harness;

beforeAll(async () => {
  h = await startHarness({ config: { waitTimeoutS: 3 } });
});
afterAll(async () => {
  await h?.close();
});

const sheetOf = ({ result }: ToolCall) =>
  result.content.filter((item): item is ImageContent => item.type === "image");
const videoFetches = (mark: number) =>
  h.requestsSince(mark).filter((request) => request.path.startsWith("/media/videos/"));

describe("the frame sheet and the call's window", () => {
  it("answers at the end of the window with a note, and the next get_status carries the sheet", async () => {
    const mark = h.sandbox.requests.length;
    // The CDN takes 4.5 s to start answering: the sheet cannot be made in the 3 s window.
    h.sandbox.faults.latency("media", 4500);
    const made = await h.call("generate_video", { prompt: "a late kite", duration: 2 });
    expect(made.structured?.["status"]).toBe("completed");
    expect(sheetOf(made)).toEqual([]);
    expect(made.structured).not.toHaveProperty("frames");
    expect(made.structured?.["notes"]).toContainEqual(
      expect.stringMatching(
        /^No frame preview yet: .* still being made, and get_status of this video shows it\.$/,
      ),
    );
    // The answer went out while the video was still on its way to the sheet.
    expect(videoFetches(mark).map((request) => request.status)).toEqual([0]);

    h.sandbox.faults.latency("media", 0);
    const again = await h.call("get_status", {
      video_id: made.structured?.["video_id"],
      timeout_seconds: 10,
    });
    expect(sheetOf(again)).toHaveLength(1);
    expect(again.structured?.["frames"]).toMatchObject({ frames: 6, layout: "3x2" });
    // The sheet the first call started: the video was fetched once.
    expect(videoFetches(mark)).toHaveLength(1);
  }, 30_000);

  it("gives a call that does not wait (get_status of a finished video) its sheet within its window", async () => {
    const started = await h.call("generate_video", { prompt: "an early kite", duration: 2, wait: false });
    // The sandbox finishes it in 0.2 s; no call has seen it completed yet.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const status = await h.call("get_status", { video_id: started.structured?.["video_id"] });
    expect(status.structured?.["status"]).toBe("completed");
    expect(sheetOf(status)).toHaveLength(1);
  }, 30_000);
});
