import * as z from "zod";
import {
  downloadField,
  refuseDownloadIfOff,
  timeoutField,
  videoIdField,
  videoResultFields,
} from "./common.js";
import { readDeadline, waitWindowMs } from "./deadline.js";
import { defineTool } from "./define-tool.js";
import { summarizeVideo } from "./generate-video.js";
import { describeVideo, saveVideo, waitForVideo } from "./video-wait.js";

const input = z.strictObject({
  video_id: videoIdField,
  wait: z
    .boolean()
    .describe("Keep polling until the task is completed or failed, or the wait window ends (default false).")
    .optional(),
  timeout_seconds: timeoutField.optional(),
  download: downloadField("local_path").optional(),
});

export const getStatus = defineTool({
  name: "get_status",
  title: "Get video status",
  description:
    "Check a video task started by generate_video: its status, and video_url once completed (or error once failed). " +
    "Free: costs no credits. With wait: true it keeps polling (progress notifications included) until the task ends or the wait window closes, " +
    "which is the way to resume waiting after generate_video answered 'still processing'.",
  input,
  output: z.object(videoResultFields),
  // Not read-only: with download: true it writes a file. Idempotent all the same: saving the same video again
  // returns the file already saved with those bytes instead of writing a copy. Never destructive: nothing is
  // overwritten.
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
  viewer: true,
  async handler(args, deps, context) {
    refuseDownloadIfOff(deps, args.download);
    // Where one key serves several callers, a caller sees only the videos it started.
    if (deps.scope !== undefined) await deps.ownership.mustOwn(args.video_id, deps.scope);
    const download = args.download ?? false;
    const windowMs = waitWindowMs(deps, args.timeout_seconds);
    if (args.wait) {
      // At once, as generate_video does: the first poll may sit in the rate budget's queue for a while.
      await context.progress(`video_id ${args.video_id}: waiting`);
      return waitForVideo(args.video_id, { windowMs, download }, deps, context);
    }
    const video = await deps.api.getVideo(args.video_id, {
      signal: context.signal,
      priority: "foreground",
      deadline: readDeadline(context, deps),
    });
    const outcome = describeVideo(video);
    if (download && video.status === "completed" && video.video_url !== undefined) {
      outcome.local_path = await saveVideo(video, deps, context, windowMs);
    }
    return outcome;
  },
  summarize: (result) => summarizeVideo(result),
});
