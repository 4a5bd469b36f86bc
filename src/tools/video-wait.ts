/** Waiting for a video task inside one tool call, shared by generate_video and get_status. */
import { GenerationError } from "../api/errors.js";
import type { VideoStatus } from "../api/types.js";
import { isFinalStatus } from "../api/types.js";
import { downloadMedia } from "../files/download.js";
import { metrics } from "../metrics.js";
import { sanitizeValue } from "../redact.js";
import { downloadTimeoutMs } from "./deadline.js";
import type { ServerDeps, ToolContext } from "./define-tool.js";

const MAX_VIDEO_DOWNLOAD_BYTES = 2 * 1024 * 1024 * 1024;

export interface VideoOutcome {
  video_id: string;
  status?: string;
  video_url?: string;
  error?: unknown;
  local_path?: string;
  elapsed_seconds?: number;
  next_step?: string;
  /**
   * A still of the result (thumbnail, poster ...) for the preview: not in the output schema, so it never
   * reaches structuredContent; media/finished.ts reads it from the handler's return value.
   */
  still_url?: string;
}

export function keepWaitingStep(videoId: string): string {
  return `The task is still running and is not lost. Call get_status with video_id "${videoId}" and wait: true to keep waiting.`;
}

/**
 * Polls until the task is final or the window ends. The window ending is a normal answer, not an error;
 * a permanent failure keeps the video_id in its message so the task is never lost.
 */
export async function waitForVideo(
  videoId: string,
  /**
   * `windowMs`: the call's wait window, counted from `context.startedAt` (time spent starting the task
   * counts too). `knownStatus`: what the start answered, reported until a poll succeeds.
   */
  options: { windowMs: number; download: boolean; knownStatus?: string | undefined },
  deps: ServerDeps,
  context: ToolContext,
): Promise<VideoOutcome> {
  const timeoutMs = context.startedAt + options.windowMs - Date.now();
  if (timeoutMs <= 0) {
    // The window was spent before the wait began (a slow upload or start): a poll now would be wasted.
    return {
      video_id: videoId,
      status: options.knownStatus ?? "unknown",
      elapsed_seconds: Math.round((Date.now() - context.startedAt) / 100) / 10,
      next_step: keepWaitingStep(videoId),
    };
  }
  let result;
  const waitEnded = metrics().waitStarted();
  try {
    result = await deps.poller.wait(videoId, {
      timeoutMs,
      signal: context.signal,
      onUpdate: (update) => {
        const seconds = Math.round(update.elapsedMs / 1000);
        const state = update.status ?? options.knownStatus ?? "unknown";
        const note = update.error ? ` (status check failed: ${update.error.code}, retrying)` : "";
        void context.progress(`video_id ${videoId}: ${state} after ${seconds} s${note}`);
      },
    });
  } catch (error) {
    throw withTaskContext(error, videoId);
  } finally {
    waitEnded();
  }
  // Since the call arrived: the time the caller actually spent, start and upload included.
  const elapsed = Math.round((Date.now() - context.startedAt) / 100) / 10;
  const video = result.video;
  if (result.outcome !== "final" || video === undefined || !isFinalStatus(video.status)) {
    // A window that ended before any poll answered still reports what is known (the start's status), and
    // says so when the status checks were failing rather than passing it off as a normal wait.
    const stale = result.lastError
      ? ` The latest status check failed (${result.lastError.code}), so this status may be out of date.`
      : "";
    return {
      video_id: videoId,
      status: video?.status ?? options.knownStatus ?? "unknown",
      elapsed_seconds: elapsed,
      next_step: `${keepWaitingStep(videoId)}${stale}`,
    };
  }
  const outcome = describeVideo(video);
  outcome.elapsed_seconds = elapsed;
  if (options.download && video.status === "completed" && video.video_url !== undefined) {
    outcome.local_path = await saveVideo(video, deps, context, options.windowMs);
  }
  return outcome;
}

export function describeVideo(video: VideoStatus): VideoOutcome {
  return {
    video_id: video.video_id,
    status: video.status,
    ...(video.video_url !== undefined && { video_url: video.video_url }),
    ...(video.still_url !== undefined && { still_url: video.still_url }),
    ...(video.status === "failed" && { error: describeTaskError(video.error) }),
    ...(!isFinalStatus(video.status) && { next_step: keepWaitingStep(video.video_id) }),
  };
}

function describeTaskError(error: unknown): unknown {
  if (error === undefined || error === null)
    return "The service reported the task as failed without a reason.";
  return sanitizeValue(error);
}

export async function saveVideo(
  video: VideoStatus,
  deps: ServerDeps,
  context: ToolContext,
  windowMs: number,
): Promise<string> {
  try {
    const saved = await downloadMedia({
      url: video.video_url ?? "",
      dir: deps.config.outputDir,
      baseName: video.video_id,
      maxBytes: MAX_VIDEO_DOWNLOAD_BYTES,
      signal: context.signal,
      timeoutMs: downloadTimeoutMs(context, windowMs),
      expected: "video",
      allowHosts: deps.mediaAllowHosts,
    });
    context.logger.info(`saved video ${video.video_id}`, { path: saved.path, bytes: saved.bytes });
    return saved.path;
  } catch (error) {
    if (!(error instanceof GenerationError)) throw error;
    throw new GenerationError(
      error.code,
      `The video is ready (video_id ${video.video_id}, video_url ${video.video_url}) but saving it failed: ${error.message}`,
      {
        status: error.status,
        nextStep: "Fetch video_url directly, or call get_status with download: true to try again.",
      },
    );
  }
}

/** Adds the task id to an error raised while waiting, so the assistant can still recover the task. */
function withTaskContext(error: unknown, videoId: string): unknown {
  if (!(error instanceof GenerationError)) return error;
  if (error.code === "not_found") {
    // The id may be one the service itself just handed out (a task already paid for): keep it in view.
    return new GenerationError(error.code, `${error.message} (while waiting for video_id ${videoId})`, {
      status: error.status,
      nextStep:
        `If video_id ${videoId} came from generate_video, the task was started: call get_status with it again ` +
        "in a moment. Otherwise call list_videos to find the right id.",
    });
  }
  return new GenerationError(error.code, `${error.message} (while waiting for video_id ${videoId})`, {
    status: error.status,
    nextStep: `${error.nextStep} The task video_id ${videoId} may still finish: call get_status with that id later.`,
  });
}
