import * as z from "zod";
import { mustOwn } from "../state/records.js";
import { defineTool, fields, foreground, videoResult, waitWindowMs } from "./define-tool.js";
import { refuseDownloadIfOff, summarizeVideo, videoOutcome, waitForVideo } from "./steps.js";

const input = z.strictObject({
  video_id: fields.videoId,
  wait: z
    .boolean()
    .describe("Keep polling until the task is completed or failed, or the wait window ends (default false).")
    .optional(),
  timeout_seconds: fields.timeout.optional(),
  download: fields.download("local_path").optional(),
});

export const getStatus = defineTool({
  name: "get_status",
  title: "Get video status",
  description:
    "Check a video task started by generate_video: its status, and video_url once completed (or error once failed). " +
    "Free: costs no credits. With wait: true it keeps polling (progress notifications included) until the task ends or the wait window closes, " +
    "which is the way to resume waiting after generate_video answered 'still processing'.",
  input,
  output: videoResult,
  // download: true writes a file, but saving the same video again returns the file already saved.
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
  viewer: true,
  async handler(args, deps, context) {
    refuseDownloadIfOff(deps, args.download);
    // Where one key serves several callers, a caller sees only the videos it started.
    if (deps.scope !== undefined) await mustOwn(deps.ownership, args.video_id, deps.scope);
    const options = { windowMs: waitWindowMs(deps, args.timeout_seconds), download: args.download ?? false };
    if (args.wait) {
      // At once, as generate_video does: the first poll may sit in the rate budget's queue for a while.
      await context.progress(`video_id ${args.video_id}: waiting`);
      return waitForVideo(args.video_id, options, deps, context);
    }
    const video = await deps.api.getVideo(args.video_id, foreground(context, deps));
    return videoOutcome(video, options, deps, context);
  },
  summarize: (result) => summarizeVideo(result),
});
