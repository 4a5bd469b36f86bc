/**
 * The steps several tools share: local images checked and uploaded, a start made once (dry runs, the
 * duplicate guard, the spend it counts), a video waited for and saved.
 */
import { GenerationError, ValidationError } from "../api/errors.js";
import { isFinalStatus, type JsonObject, type VideoStatus } from "../api/types.js";
import { downloadMedia } from "../files/download.js";
import { openLocalImage, type LocalImage } from "../files/local-image.js";
import { metrics } from "../metrics.js";
import { sanitizeValue } from "../redact.js";
import type * as z from "zod";
import type { CallEstimate } from "../spend/estimate.js";
import { fingerprintRequest } from "../generations/fingerprint.js";
import type { StartOptions } from "../generations/starter.js";
import { foreground, requestDeadline } from "./define-tool.js";
import type { ServerDeps, ToolContext, videoResult } from "./define-tool.js";

/** `download: true` on a server that does not save files (a shared HTTP deployment without an output folder). */
export function refuseDownloadIfOff(deps: ServerDeps, download: boolean | undefined): void {
  if (download !== true || deps.downloads) return;
  throw new ValidationError(
    "download: this shared server does not save files (the operator has not set GENERATION_OUTPUT_DIR).",
    { nextStep: "Call again without download: true and fetch the returned URL yourself." },
  );
}

/** Opens and checks every path (containment, type, size) before any request; closes all on failure. */
export async function openLocalImages(paths: string[], param: string, deps: ServerDeps) {
  const dirs = { allowedDirs: await deps.allowedDirs(), configuredDirs: deps.config.allowedDirs };
  const opened: LocalImage[] = [];
  try {
    for (const [index, path] of paths.entries()) {
      opened.push(
        await openLocalImage(path, { ...dirs, param: paths.length > 1 ? `${param}[${index}]` : param }),
      );
    }
    return opened;
  } catch (error) {
    await closeAll(opened);
    throw error;
  }
}

/** Uploads in turn; `deadline` (epoch ms) bounds them all, so the call still answers in time. */
export async function uploadAll(
  images: LocalImage[],
  deps: ServerDeps,
  context: ToolContext,
  deadline: number,
) {
  const urls: string[] = [];
  for (const image of images) {
    const { url } = await deps.api.upload(image, foreground(context, deps, deadline));
    context.logger.info(`uploaded ${image.filename}`, { bytes: image.size, url });
    urls.push(url);
  }
  return urls;
}

export async function closeAll(images: LocalImage[]): Promise<void> {
  await Promise.allSettled(images.map((image) => image.close()));
}

/** A start of generate_video or generate_image, as the tool describes it. */
export interface Generation<Body, Started> {
  kind: "video" | "image";
  body: Body;
  /** What makes two requests identical: the body with the defaults the service would apply. */
  identity: JsonObject;
  estimate: CallEstimate;
  args: Partial<Record<"dry_run" | "allow_duplicate" | "download", boolean | undefined>>;
  /** Local images to upload first, and the parameter that named them. */
  paths: string[] | undefined;
  param: string;
  /** The body with the uploaded images' URLs in it (for a dry run, the file names). */
  withImages(body: Body, urls: string[]): Body;
  start(body: Body, options: StartOptions): Promise<Started>;
  windowMs: number;
}

/** The start (or with dry_run, the request it would send), and what it costs. */
export async function startGeneration<Body, Started extends { reused: boolean }>(
  plan: Generation<Body, Started>,
  deps: ServerDeps,
  context: ToolContext,
) {
  refuseDownloadIfOff(deps, plan.args.download);
  const images = plan.paths === undefined ? [] : await openLocalImages(plan.paths, plan.param, deps);
  try {
    const { credits, what } = plan.estimate;
    if (plan.args.dry_run) {
      const uploads = images.map((image) => `(uploaded from ${image.filename})`);
      const request = plan.withImages(plan.body, uploads);
      return { dry_run: true as const, estimated_credits: credits, request };
    }
    const hashes = images.map((image) => image.sha256);
    const fingerprint = fingerprintRequest(plan.kind, plan.identity, hashes, deps.scope);
    const allowDuplicate = plan.args.allow_duplicate ?? false;
    const deadline = requestDeadline(context, plan.windowMs);
    let body = plan.body;
    // A request the journal will answer with an earlier task needs no fresh upload of the same bytes.
    if (images.length > 0 && (allowDuplicate || !(await deps.starter.hasDuplicate(plan.kind, fingerprint)))) {
      body = plan.withImages(body, await uploadAll(images, deps, context, deadline));
    }
    const started = await plan.start(body, {
      fingerprint,
      allowDuplicate,
      scope: deps.scope,
      spend: { callerId: deps.callerId, credits, what },
      signal: context.signal,
      deadline,
    });
    const cost = { estimated_credits: credits, notes: [costLine(credits, started.reused)] };
    return { started, cost: started.reused ? { ...cost, reused: true } : cost };
  } finally {
    await closeAll(images);
  }
}

/** Its `still_url` (a poster) and `answer_by` (epoch ms: the window's end) are for media/content.ts only. */
type MediaOnly = { still_url?: string; answer_by?: number };
/** A video result. */
type VideoOutcome = z.input<typeof videoResult> & MediaOnly & { video_id: string };

export function keepWaitingStep(videoId: string): string {
  return `The task is still running and is not lost. Call get_status with video_id "${videoId}" and wait: true to keep waiting.`;
}

const MAX_DOWNLOAD_BYTES = { video: 2 * 1024 * 1024 * 1024, image: 200 * 1024 * 1024 };
const NO_REASON = "The service reported the task as failed without a reason.";

/**
 * Polls until the task is final or the window (from `context.startedAt`) ends, which is a normal answer; a
 * failure keeps the video_id in its message, so the task is never lost. `knownStatus`: the start's answer.
 */
export async function waitForVideo(
  videoId: string,
  options: { windowMs: number; download: boolean; knownStatus?: string | undefined },
  deps: ServerDeps,
  context: ToolContext,
): Promise<VideoOutcome> {
  const elapsed = () => Math.round((Date.now() - context.startedAt) / 100) / 10;
  const timeoutMs = context.startedAt + options.windowMs - Date.now();
  let result: Awaited<ReturnType<ServerDeps["poller"]["wait"]>> | undefined;
  // A window spent before the wait began (a slow upload or start) leaves nothing to poll for.
  if (timeoutMs > 0) {
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
  }
  const video = result?.video;
  if (result?.outcome !== "final" || video === undefined || !isFinalStatus(video.status)) {
    // What is known, and that it may be out of date when the status checks were failing.
    const stale = result?.lastError
      ? ` The latest status check failed (${result.lastError.code}), so this status may be out of date.`
      : "";
    return {
      video_id: videoId,
      status: video?.status ?? options.knownStatus ?? "unknown",
      elapsed_seconds: elapsed(),
      next_step: `${keepWaitingStep(videoId)}${stale}`,
    };
  }
  const elapsed_seconds = elapsed();
  return { ...(await videoOutcome(video, options, deps, context)), elapsed_seconds };
}

/** A video as the tools report it, saved first when asked for and finished. */
export async function videoOutcome(
  video: VideoStatus,
  options: { windowMs: number; download: boolean },
  deps: ServerDeps,
  context: ToolContext,
): Promise<VideoOutcome> {
  const outcome: VideoOutcome = {
    video_id: video.video_id,
    status: video.status,
    ...(video.video_url !== undefined && { video_url: video.video_url }),
    ...(video.still_url !== undefined && { still_url: video.still_url }),
    answer_by: context.startedAt + options.windowMs,
    ...(video.status === "failed" && { error: sanitizeValue(video.error ?? NO_REASON) }),
    ...(!isFinalStatus(video.status) && { next_step: keepWaitingStep(video.video_id) }),
  };
  if (!options.download || video.status !== "completed" || video.video_url === undefined) return outcome;
  try {
    const saved = await saveMedia(video.video_url, video.video_id, "video", options.windowMs, deps, context);
    context.logger.info(`saved video ${video.video_id}`, { path: saved.path, bytes: saved.bytes });
    return { ...outcome, local_path: saved.path };
  } catch (error) {
    if (!(error instanceof GenerationError)) throw error;
    const reason = `The video is ready (video_id ${video.video_id}, video_url ${video.video_url}) but saving it failed`;
    throw new GenerationError(error.code, `${reason}: ${error.message}`, {
      status: error.status,
      nextStep: "Fetch video_url directly, or call get_status with download: true to try again.",
    });
  }
}

/** Saves finished media into GENERATION_OUTPUT_DIR, within the call's deadline but never unreasonably short. */
export function saveMedia(
  url: string,
  baseName: string,
  expected: "video" | "image",
  windowMs: number,
  deps: ServerDeps,
  context: ToolContext,
) {
  return downloadMedia({
    url,
    dir: deps.config.outputDir,
    baseName,
    maxBytes: MAX_DOWNLOAD_BYTES[expected],
    signal: context.signal,
    timeoutMs: Math.max(10_000, requestDeadline(context, windowMs) - Date.now()),
    expected,
    allowHosts: deps.mediaAllowHosts,
  });
}

/** Adds the task id to an error raised while waiting, so the assistant can still recover the task. */
function withTaskContext(error: unknown, videoId: string): unknown {
  if (!(error instanceof GenerationError)) return error;
  // A not_found id may be one the service itself just handed out (a task already paid for): keep it in view.
  const nextStep =
    error.code === "not_found"
      ? `If video_id ${videoId} came from generate_video, the task was started: call get_status with it again ` +
        "in a moment. Otherwise call list_videos to find the right id."
      : `${error.nextStep} The task video_id ${videoId} may still finish: call get_status with that id later.`;
  const message = `${error.message} (while waiting for video_id ${videoId})`;
  return new GenerationError(error.code, message, { status: error.status, nextStep });
}

/** What the call cost: a reused task cost nothing new, whatever the earlier one was estimated at. */
export function costLine(estimated: number, reused: boolean | undefined): string {
  return reused
    ? `No new credits were charged (the earlier identical request was estimated at ${estimated} credits).`
    : `Estimated cost ${estimated} credits.`;
}

export function dryRunText(result: { estimated_credits: number; request?: unknown }): string {
  return `Dry run: nothing started. Estimated cost ${result.estimated_credits} credits. Request: ${JSON.stringify(result.request)}`;
}

/** The text of a video's state, for generate_video and get_status. */
export function summarizeVideo(
  result: z.output<typeof videoResult> & { reused?: boolean | undefined },
  extra = "",
): string {
  const id = result.video_id ?? "(unknown)";
  const reused = result.reused ? " (an identical task from the last 10 minutes, reused)" : "";
  const lines: string[] = [];
  if (result.status === "completed") {
    lines.push(`Video ${id} is completed${reused}: ${result.video_url ?? "(no URL given)"}`);
  } else if (result.status === "failed") {
    // The reason is the service's text: quoted, so it reads as data and never as an instruction.
    const reason = typeof result.error === "string" ? result.error : JSON.stringify(result.error);
    lines.push(`Video ${id} failed${reused}. The service's reason: ${JSON.stringify(reason)}`);
  } else {
    lines.push(`Video ${id} is ${result.status ?? "in progress"}${reused}.`);
  }
  if (result.local_path) lines.push(`Saved to ${result.local_path}`);
  if (result.next_step) lines.push(result.next_step);
  if (extra) lines.push(extra);
  return lines.join("\n");
}
