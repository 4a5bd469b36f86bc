import * as z from "zod";
import type { GenerateImageBody } from "../api/types.js";
import {
  DEFAULT_ASPECT_RATIO_IMAGE,
  DEFAULT_IMAGE_MODEL,
  IMAGE_CREDITS_PER_IMAGE,
  IMAGE_MODELS,
  IMAGE_RESOLUTIONS,
  MAX_REFERENCE_IMAGES,
  OUTPUT_FORMATS,
} from "../models.js";
import { sanitizeValue } from "../redact.js";
import { estimateImage } from "../spend/estimate.js";
import { defineTool, fields, guidanceFields, startFields, waitWindowMs } from "./define-tool.js";
import { dryRunText, saveMedia, startGeneration } from "./steps.js";

const input = z
  .strictObject({
    prompt: fields.prompt("image"),
    model: z
      .enum(IMAGE_MODELS)
      .describe(`Image model (default ${DEFAULT_IMAGE_MODEL}; needs a paid plan).`)
      .optional(),
    resolution: z
      .enum(IMAGE_RESOLUTIONS)
      .describe("Output size: 1k, 2k or 4k (the service's default when omitted).")
      .optional(),
    aspect_ratio: fields.aspectRatio(DEFAULT_ASPECT_RATIO_IMAGE).optional(),
    output_format: z.enum(OUTPUT_FORMATS).describe("png, jpg or webp (default png).").optional(),
    images: z
      .array(fields.httpUrl("A reference image URL."))
      .max(MAX_REFERENCE_IMAGES, `must hold at most ${MAX_REFERENCE_IMAGES} URLs`)
      .describe("Reference image URLs for edit mode (http(s)).")
      .optional(),
    image_paths: z
      .array(fields.localPath("An absolute local path."))
      .max(MAX_REFERENCE_IMAGES, `must hold at most ${MAX_REFERENCE_IMAGES} paths`)
      .describe(
        "Reference images as absolute local paths (JPG, PNG or WebP, at most 10 MB each, inside an allowed folder); uploaded first.",
      )
      .optional(),
    download: fields.download("local_paths").optional(),
    dry_run: fields.dryRun.optional(),
    allow_duplicate: fields.allowDuplicate.optional(),
  })
  .superRefine((args, ctx) => {
    if ((args.images?.length ?? 0) + (args.image_paths?.length ?? 0) <= MAX_REFERENCE_IMAGES) return;
    const message = `images and image_paths together must hold at most ${MAX_REFERENCE_IMAGES}`;
    ctx.addIssue({ code: "custom", path: ["image_paths"], message });
  });

const output = z.object({
  ...guidanceFields,
  image_urls: z
    .array(z.string())
    .describe("Finished image URLs; empty when the service answered with a task to follow up."),
  estimated_credits: z
    .number()
    .describe(`Credits this request costs (${IMAGE_CREDITS_PER_IMAGE} per image).`),
  local_paths: z
    .array(z.string())
    .optional()
    .describe("Where the images were saved (when download was requested)."),
  reused: z
    .boolean()
    .optional()
    .describe("true when an identical recent request was returned instead of a new one."),
  result: z.unknown().optional().describe("The service's data as received."),
  ...startFields,
});

export const generateImage = defineTool({
  name: "generate_image",
  title: "Generate image",
  description:
    `Generate an image from a prompt with ${DEFAULT_IMAGE_MODEL}, optionally editing reference images (images URLs or image_paths). ` +
    `Needs a paid plan; costs ${IMAGE_CREDITS_PER_IMAGE} credits per image (estimated_credits; dry_run: true shows it without spending). ` +
    "Returns image_urls (and local_paths with download: true), plus a small preview of each image that you can look at to check the result. An identical request within 10 minutes returns the earlier result (reused: true) unless allow_duplicate is true. " +
    "For a reference picture this server cannot read (the person's own file, or one shown in the chat), first call upload_image with from_user: true and put its url in images.",
  input,
  output,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  viewer: true,
  async handler(args, deps, context) {
    const body: GenerateImageBody = {
      prompt: args.prompt,
      model: args.model ?? DEFAULT_IMAGE_MODEL,
      ...(args.resolution !== undefined && { resolution: args.resolution }),
      aspect_ratio: args.aspect_ratio ?? DEFAULT_ASPECT_RATIO_IMAGE,
      output_format: args.output_format ?? "png",
      ...(args.images !== undefined && { images: [...args.images] }),
    };
    const windowMs = waitWindowMs(deps);
    const start = await startGeneration(
      {
        kind: "image",
        body,
        identity: body,
        estimate: estimateImage(body.model),
        args,
        paths: args.image_paths,
        param: "image_paths",
        withImages: (request, urls) =>
          urls.length === 0 ? request : { ...request, images: [...(request.images ?? []), ...urls] },
        start: (request, options) => deps.starter.startImage(request, options),
        windowMs,
      },
      deps,
      context,
    );
    if (start.dry_run) return { image_urls: [], ...start };
    const { started, cost } = start;
    const image_urls = started.image_urls;
    const result = {
      image_urls,
      ...cost,
      result: sanitizeValue(started.raw),
      ...(image_urls.length === 0 && {
        next_step:
          "The service answered with a task instead of finished images: its answer is in result. Look there for an id or a status to follow up.",
      }),
    };
    if (!args.download || image_urls.length === 0) return result;
    // Named after the service's id when it gave one (sanitized again by downloadMedia).
    const baseName = `image-${started.image_id ?? Date.now()}`;
    const local_paths: string[] = [];
    for (const [index, url] of image_urls.entries()) {
      const name = image_urls.length > 1 ? `${baseName}-${index + 1}` : baseName;
      local_paths.push((await saveMedia(url, name, "image", windowMs, deps, context)).path);
    }
    return { ...result, local_paths };
  },
  // An image is made within the start request: a restart while it runs leaves nothing to follow (advice).
  task: {},
  summarize(result) {
    if (result.dry_run) return dryRunText(result);
    const reused = result.reused ? " (an identical request from the last 10 minutes, reused)" : "";
    const lines =
      result.image_urls.length > 0
        ? [`Generated ${result.image_urls.length} image(s)${reused}:`, ...result.image_urls]
        : [
            `The service accepted the request but returned no image URL yet${reused}. Its answer: ${JSON.stringify(result.result)}`,
          ];
    if (result.local_paths) lines.push(`Saved to: ${result.local_paths.join(", ")}`);
    lines.push(...(result.notes ?? []));
    return lines.join("\n");
  },
});
