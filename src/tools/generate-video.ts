import * as z from "zod";
import { isFinalStatus, type GenerateVideoBody } from "../api/types.js";
import {
  DEFAULT_ASPECT_RATIO_VIDEO,
  DEFAULT_DURATION_S,
  DEFAULT_VIDEO_MODEL,
  GENERATION_TYPES,
  MAX_DURATION_S,
  RESOLUTION_MODEL,
  VIDEO_MODELS,
  VIDEO_RESOLUTIONS,
} from "../models.js";
import { estimateVideo } from "../spend/estimate.js";
import { defineTool, fields, startFields, videoResultFields, waitWindowMs } from "./define-tool.js";
import {
  costLine,
  dryRunText,
  keepWaitingStep,
  startGeneration,
  summarizeVideo,
  waitForVideo,
} from "./steps.js";

const input = z
  .strictObject({
    prompt: fields.prompt("video"),
    model: z
      .enum(VIDEO_MODELS)
      .describe(
        `Video model (default ${DEFAULT_VIDEO_MODEL}, the lite model; the others need a paid plan). get_credits lists the models this account may use and their prices.`,
      )
      .optional(),
    generation_type: z
      .enum(GENERATION_TYPES)
      .describe(
        "text_to_video or image_to_video (default: image_to_video when an image is given, else text_to_video).",
      )
      .optional(),
    image_url: fields.httpUrl("Reference image as an http(s) URL, for image_to_video.").optional(),
    image_path: fields
      .localPath(
        "Reference image as an absolute local path (JPG, PNG or WebP, at most 10 MB, inside an allowed folder); uploaded first.",
      )
      .optional(),
    aspect_ratio: fields.aspectRatio(DEFAULT_ASPECT_RATIO_VIDEO).optional(),
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
    timeout_seconds: fields.timeout.optional(),
    download: fields.download("local_path").optional(),
    dry_run: fields.dryRun.optional(),
    allow_duplicate: fields.allowDuplicate.optional(),
  })
  .superRefine((args, ctx) => {
    const refuse = (path: string, message: string) => ctx.addIssue({ code: "custom", path: [path], message });
    const hasImage = args.image_url !== undefined || args.image_path !== undefined;
    if (args.resolution !== undefined && (args.model ?? DEFAULT_VIDEO_MODEL) !== RESOLUTION_MODEL) {
      refuse(
        "resolution",
        `is only accepted with model ${RESOLUTION_MODEL} (set it, or leave resolution out)`,
      );
    }
    if (args.image_url !== undefined && args.image_path !== undefined) {
      refuse("image_path", "give image_url or image_path, not both");
    }
    if (args.generation_type === "image_to_video" && !hasImage) {
      refuse("image_url", "image_to_video needs image_url or image_path");
    }
    if (args.generation_type === "text_to_video" && hasImage) {
      refuse(
        "generation_type",
        "is text_to_video but an image was given; use image_to_video or drop the image",
      );
    }
  })
  // The resolution rule as JSON Schema too, for clients that render or check forms: unless model is
  // vendor-video-2-0, no resolution. Said this way round because LangChain's MCP adapter folds a `then`'s
  // `required` into the whole schema: "then model is required" made model required on every call.
  .meta({
    if: { not: { properties: { model: { const: RESOLUTION_MODEL } }, required: ["model"] } },
    then: { not: { properties: { resolution: {} }, required: ["resolution"] } },
  });

const output = z.object({
  ...videoResultFields,
  estimated_credits: z.number().describe("Credits this request costs by the published price list."),
  reused: z
    .boolean()
    .optional()
    .describe("true when an identical recent task was returned instead of a new one."),
  dry_run: startFields.dry_run,
  request: startFields.request,
  warning: z.string().optional(),
  declined: startFields.declined,
});

type Args = z.output<typeof input>;
const estimate = (args: Args) =>
  estimateVideo(args.model ?? DEFAULT_VIDEO_MODEL, args.duration ?? DEFAULT_DURATION_S, args.resolution);

export const generateVideo = defineTool({
  name: "generate_video",
  title: "Generate video",
  description:
    "Start an AI video from a text prompt (text_to_video) or a reference image plus prompt (image_to_video) and, by default, wait for it and return video_url. " +
    "Costs credits per second of video, by model (get_credits lists the models this account may use and their prices); the estimate comes back as estimated_credits, and dry_run: true shows it without spending anything. " +
    "Videos take minutes: if the wait window ends first the answer is not an error; it carries video_id and the current status, and the task keeps running: call get_status with wait: true to keep waiting. " +
    "Never call this again to 'retry' a task that is still processing; an identical request within 10 minutes returns the same task (reused: true) unless allow_duplicate is true. " +
    "For a reference picture this server cannot read (the person's own file, or one shown in the chat), first call upload_image with from_user: true and pass its url as image_url.",
  input,
  output,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  viewer: true,
  async handler(args, deps, context) {
    const hasImage = args.image_url !== undefined || args.image_path !== undefined;
    const model = args.model ?? DEFAULT_VIDEO_MODEL;
    const body: GenerateVideoBody = {
      prompt: args.prompt,
      ...(args.model !== undefined && { model: args.model }),
      generation_type: args.generation_type ?? (hasImage ? "image_to_video" : "text_to_video"),
      ...(args.image_url !== undefined && { image_url: args.image_url }),
      aspect_ratio: args.aspect_ratio ?? DEFAULT_ASPECT_RATIO_VIDEO,
      duration: args.duration ?? DEFAULT_DURATION_S,
      ...(args.resolution !== undefined && { resolution: args.resolution }),
    };
    const windowMs = waitWindowMs(deps, args.timeout_seconds);
    const start = await startGeneration(
      {
        kind: "video",
        body,
        identity: { ...body, model },
        estimate: estimate(args),
        args,
        paths: args.image_path === undefined ? undefined : [args.image_path],
        param: "image_path",
        withImages: (request, [url]) => (url === undefined ? request : { ...request, image_url: url }),
        start: (request, options) => deps.starter.startVideo(request, options),
        windowMs,
      },
      deps,
      context,
    );
    if (start.dry_run) return start;
    const { started, cost } = start;
    const videoId = started.video_id;
    const logged = { video_id: videoId, model, estimated_credits: cost.estimated_credits };
    context.logger.info(`video task ${started.reused ? "reused" : "started"}: video_id ${videoId}`, logged);
    await context.progress(
      `video_id ${videoId}: ${started.reused ? "reusing identical recent task" : "started"}`,
    );
    const common = {
      ...cost,
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
    const knownStatus = started.reused ? undefined : started.status;
    const options = { windowMs, download: args.download ?? false, knownStatus };
    return { ...(await waitForVideo(videoId, options, deps, context)), ...common };
  },
  task: {
    // The task's wait goes on until the video is final or the task's ttl is spent, not a call's window.
    prepare: (args, ttlMs) => ({ ...args, timeout_seconds: Math.max(1, Math.floor(ttlMs / 1000) - 5) }),
    save: (args) => ({ download: args.download ?? false, estimated_credits: estimate(args).credits }),
    async resume({ videoId, saved, windowMs }, deps, context) {
      const download = saved["download"] === true;
      const outcome = await waitForVideo(videoId, { windowMs, download }, deps, context);
      const estimated = typeof saved["estimated_credits"] === "number" ? saved["estimated_credits"] : 0;
      return { ...outcome, estimated_credits: estimated, notes: [costLine(estimated, false)] };
    },
  },
  summarize(result) {
    if (result.dry_run) return dryRunText(result);
    const warning = result.warning ? ` Warning: ${result.warning}` : "";
    return summarizeVideo(result, `${(result.notes ?? []).join(" ")}${warning}`);
  },
});
