import * as z from "zod";
import type { GenerateVideoBody } from "../api/types.js";
import { isFinalStatus } from "../api/types.js";
import {
  DEFAULT_ASPECT_RATIO_VIDEO,
  DEFAULT_DURATION_S,
  DEFAULT_VIDEO_MODEL,
  GENERATION_TYPES,
  MAX_DURATION_S,
  RESOLUTION_MODEL,
  VIDEO_1080P_CREDITS_PER_SECOND,
  VIDEO_CREDITS_PER_SECOND,
  VIDEO_MODELS,
  VIDEO_RESOLUTIONS,
  videoCredits,
} from "../models.js";
import { estimateVideo } from "../spend/estimate.js";
import { fingerprintRequest } from "../tasks/fingerprint.js";
import {
  allowDuplicateField,
  aspectRatioField,
  costLine,
  downloadField,
  dryRunField,
  httpUrlField,
  localPathField,
  promptField,
  refuseDownloadIfOff,
  timeoutField,
  videoResultFields,
} from "./common.js";
import { requestDeadline, waitWindowMs } from "./deadline.js";
import { defineTool } from "./define-tool.js";
import { closeAll, openLocalImages, uploadAll } from "./local-images.js";
import { keepWaitingStep, waitForVideo } from "./video-wait.js";

const rates = VIDEO_MODELS.map((model) => `${model} ${VIDEO_CREDITS_PER_SECOND[model]}/s`).join(", ");

const input = z
  .strictObject({
    prompt: promptField("video"),
    model: z
      .enum(VIDEO_MODELS)
      .describe(
        `Video model (default ${DEFAULT_VIDEO_MODEL}, the lite model; the others need a paid plan). Credits per second: ${rates}; ${RESOLUTION_MODEL} at 1080p ${VIDEO_1080P_CREDITS_PER_SECOND}/s.`,
      )
      .optional(),
    generation_type: z
      .enum(GENERATION_TYPES)
      .describe(
        "text_to_video or image_to_video (default: image_to_video when an image is given, else text_to_video).",
      )
      .optional(),
    image_url: httpUrlField("Reference image as an http(s) URL, for image_to_video.").optional(),
    image_path: localPathField(
      "Reference image as an absolute local path (JPG, PNG or WebP, at most 10 MB, inside an allowed folder); uploaded first.",
    ).optional(),
    aspect_ratio: aspectRatioField(DEFAULT_ASPECT_RATIO_VIDEO).optional(),
    duration: z
      .number()
      .positive("must be more than 0")
      .max(MAX_DURATION_S, `must be at most ${MAX_DURATION_S} seconds`)
      .describe(
        `Length of the video in seconds (more than 0, at most ${MAX_DURATION_S}; default ${DEFAULT_DURATION_S}).`,
      )
      .optional(),
    resolution: z
      .enum(VIDEO_RESOLUTIONS)
      .describe(`Output resolution, only for ${RESOLUTION_MODEL}; 1080p costs more.`)
      .optional(),
    wait: z.boolean().describe("Wait for the finished video in this call (default true).").optional(),
    timeout_seconds: timeoutField.optional(),
    download: downloadField("local_path").optional(),
    dry_run: dryRunField.optional(),
    allow_duplicate: allowDuplicateField.optional(),
  })
  .superRefine((args, ctx) => {
    if (args.resolution !== undefined && (args.model ?? DEFAULT_VIDEO_MODEL) !== RESOLUTION_MODEL) {
      ctx.addIssue({
        code: "custom",
        path: ["resolution"],
        message: `is only accepted with model ${RESOLUTION_MODEL}`,
      });
    }
    if (args.image_url !== undefined && args.image_path !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["image_path"],
        message: "give image_url or image_path, not both",
      });
    }
    const hasImage = args.image_url !== undefined || args.image_path !== undefined;
    if (args.generation_type === "image_to_video" && !hasImage) {
      ctx.addIssue({
        code: "custom",
        path: ["image_url"],
        message: "image_to_video needs image_url or image_path",
      });
    }
    if (args.generation_type === "text_to_video" && hasImage) {
      ctx.addIssue({
        code: "custom",
        path: ["generation_type"],
        message: "is text_to_video but an image was given; use image_to_video or drop the image",
      });
    }
  });

const output = z.object({
  ...videoResultFields,
  estimated_credits: z.number().describe("Credits this request costs by the published price list."),
  reused: z
    .boolean()
    .optional()
    .describe("true when an identical recent task was returned instead of a new one."),
  dry_run: z.boolean().optional(),
  request: z
    .record(z.string(), z.unknown())
    .optional()
    .describe("With dry_run: the request that would be sent."),
  warning: z.string().optional(),
  declined: z
    .boolean()
    .optional()
    .describe("true when the user declined to confirm the cost: nothing was started or charged."),
});

export const generateVideo = defineTool({
  name: "generate_video",
  title: "Generate video",
  description:
    "Start an AI video from a text prompt (text_to_video) or a reference image plus prompt (image_to_video) and, by default, wait for it and return video_url. " +
    `Costs credits per second of video (${rates}); the estimate comes back as estimated_credits, and dry_run: true shows it without spending anything. ` +
    "Videos take minutes: if the wait window ends first the answer is not an error; it carries video_id and the current status, and the task keeps running: call get_status with wait: true to keep waiting. " +
    "Never call this again to 'retry' a task that is still processing; an identical request within 10 minutes returns the same task (reused: true) unless allow_duplicate is true.",
  input,
  output,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  viewer: true,
  async handler(args, deps, context) {
    const model = args.model ?? DEFAULT_VIDEO_MODEL;
    const duration = args.duration ?? DEFAULT_DURATION_S;
    const hasImage = args.image_url !== undefined || args.image_path !== undefined;
    const body: GenerateVideoBody = {
      prompt: args.prompt,
      ...(args.model !== undefined && { model: args.model }),
      generation_type: args.generation_type ?? (hasImage ? "image_to_video" : "text_to_video"),
      ...(args.image_url !== undefined && { image_url: args.image_url }),
      aspect_ratio: args.aspect_ratio ?? DEFAULT_ASPECT_RATIO_VIDEO,
      duration,
      ...(args.resolution !== undefined && { resolution: args.resolution }),
    };
    refuseDownloadIfOff(deps, args.download);
    const estimate = estimateVideo(model, duration, args.resolution);
    const estimated_credits = estimate.credits;
    const windowMs = waitWindowMs(deps, args.timeout_seconds);
    const images =
      args.image_path === undefined ? [] : await openLocalImages([args.image_path], "image_path", deps);
    try {
      if (args.dry_run) {
        const request = images[0] ? { ...body, image_url: `(uploaded from ${images[0].filename})` } : body;
        return { dry_run: true, estimated_credits, request };
      }
      const fingerprint = fingerprintRequest(
        "video",
        { ...body, model },
        images.map((image) => image.sha256),
        deps.scope,
      );
      const allowDuplicate = args.allow_duplicate ?? false;
      // A request the journal will answer with an earlier task needs no fresh upload of the same bytes.
      if (images.length > 0 && (allowDuplicate || !(await deps.starter.hasDuplicate("video", fingerprint)))) {
        const [uploadedUrl] = await uploadAll(images, deps, context, requestDeadline(context, windowMs));
        if (uploadedUrl !== undefined) body.image_url = uploadedUrl;
      }
      const started = await deps.starter.startVideo(body, {
        fingerprint,
        allowDuplicate,
        scope: deps.scope,
        spend: { callerId: deps.callerId, credits: estimated_credits, what: estimate.what },
        signal: context.signal,
        deadline: requestDeadline(context, windowMs),
      });
      const videoId = started.video_id;
      context.logger.info(`video task ${started.reused ? "reused" : "started"}: video_id ${videoId}`, {
        video_id: videoId,
        model,
        estimated_credits,
      });
      await context.progress(
        `video_id ${videoId}: ${started.reused ? "reusing identical recent task" : "started"}`,
      );
      const common = {
        estimated_credits,
        notes: [costLine(estimated_credits, started.reused)],
        ...(started.reused && { reused: true }),
        ...(started.reconciled && {
          warning: "The start request failed ambiguously; this task was found in history and adopted.",
        }),
      };
      // A task adopted from the history may already be final: one status call then gives its video_url.
      if (args.wait === false && !isFinalStatus(started.status ?? "")) {
        return {
          video_id: videoId,
          status: started.status ?? "started",
          next_step: keepWaitingStep(videoId),
          ...common,
        };
      }
      const outcome = await waitForVideo(
        videoId,
        {
          windowMs,
          download: args.download ?? false,
          knownStatus: started.reused ? undefined : started.status,
        },
        deps,
        context,
      );
      return { ...outcome, ...common };
    } finally {
      await closeAll(images);
    }
  },
  task: {
    // The task's wait goes on until the video is final or the task's ttl is spent, not a call's window.
    prepare: (args, ttlMs) => ({ ...args, timeout_seconds: Math.max(1, Math.floor(ttlMs / 1000) - 5) }),
    save: (args) =>
      args === undefined
        ? undefined
        : {
            download: args.download ?? false,
            estimated_credits: videoCredits(
              args.model ?? DEFAULT_VIDEO_MODEL,
              args.duration ?? DEFAULT_DURATION_S,
              args.resolution,
            ),
          },
    async resume({ videoId, saved, windowMs }, deps, context) {
      const download = saved["download"] === true;
      const outcome = await waitForVideo(videoId, { windowMs, download }, deps, context);
      const estimate = typeof saved["estimated_credits"] === "number" ? saved["estimated_credits"] : 0;
      return { ...outcome, estimated_credits: estimate, notes: [costLine(estimate, false)] };
    },
  },
  summarize(result) {
    if (result.dry_run) {
      return `Dry run: nothing started. Estimated cost ${result.estimated_credits} credits. Request: ${JSON.stringify(result.request)}`;
    }
    const warning = result.warning ? ` Warning: ${result.warning}` : "";
    return summarizeVideo(result, `${(result.notes ?? []).join(" ")}${warning}`);
  },
});

export function summarizeVideo(
  result: {
    video_id?: string | undefined;
    status?: string | undefined;
    video_url?: string | undefined;
    error?: unknown;
    local_path?: string | undefined;
    next_step?: string | undefined;
    reused?: boolean | undefined;
  },
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
