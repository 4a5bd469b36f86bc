/** Schema pieces and helpers shared by several tools. */
import * as z from "zod";
import { ValidationError } from "../api/errors.js";
import type { ServerDeps } from "./define-tool.js";
import { isHttpUrl } from "../api/shapes.js";
import { MAX_PROMPT_LENGTH, parseAspectRatio } from "../models.js";

export const promptField = (what: string) =>
  z
    .string()
    .trim()
    .min(1, "must not be empty")
    .max(MAX_PROMPT_LENGTH, `must be at most ${MAX_PROMPT_LENGTH} characters`)
    .describe(`Text description of the ${what} (1-${MAX_PROMPT_LENGTH} characters).`);

export const httpUrlField = (description: string) =>
  z.string().max(4096).refine(isHttpUrl, "must be an http(s) URL").describe(description);

export const localPathField = (description: string) =>
  z.string().min(1, "must not be empty").max(4096).describe(description);

export const aspectRatioField = (fallback: string) =>
  z
    .string()
    .refine(
      (value) => parseAspectRatio(value) !== undefined,
      "must be W:H with whole numbers 1-64, e.g. 16:9",
    )
    .describe(`Width:height of the output, e.g. 16:9, 9:16, 1:1 (default ${fallback}).`);

export const downloadField = (returned: string) =>
  z
    .boolean()
    .describe(
      `Also save the finished file into GENERATION_OUTPUT_DIR and return ${returned} (default false).`,
    );

export const dryRunField = z
  .boolean()
  .describe("Only validate and estimate the cost in credits; nothing is started and nothing is charged.");

export const allowDuplicateField = z
  .boolean()
  .describe(
    "Default false: an identical request (same parameters and image bytes) made in the last 10 minutes returns " +
      "that earlier task with reused: true instead of spending credits again. true starts a new task.",
  );

export const timeoutField = z
  .number()
  .min(0)
  .max(3600)
  .describe(
    "Seconds to wait for the result in this call (0-3600; default GENERATION_WAIT_TIMEOUT_S, 45). Many clients " +
      "cut a tool call at about 60 s; when the window ends the task keeps running.",
  );

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export const videoIdField = z
  .string()
  .min(1, "must not be empty")
  .max(256, "must be at most 256 characters")
  .refine((value) => value !== "." && value !== "..", "is not a task id")
  // eslint-disable-next-line no-control-regex
  .refine((value) => !/[\u0000-\u001F\u007F]/.test(value), "must not contain control characters")
  // A lone surrogate cannot be percent-encoded into a path segment.
  .refine((value) => !LONE_SURROGATE.test(value), "must be valid Unicode text")
  .describe("The video_id returned by generate_video (or found with list_videos).");

/**
 * What a result tells the assistant besides its data, also in `structuredContent`: some clients hand the
 * model only that (Codex CLI, Mastra) or replace the text with it (Claude Code).
 */
export const guidanceFields = {
  next_step: z.string().optional().describe("What to do next, when there is something to do."),
  notes: z
    .array(z.string())
    .optional()
    .describe(
      "What to know besides the fields: whether credits were charged, why no preview could be made, and the like.",
    ),
};

/** Fields of a video result shared by generate_video and get_status. */
export const videoResultFields = {
  video_id: z.string().optional().describe("The task id; keep it to check the task later with get_status."),
  status: z
    .string()
    .optional()
    .describe("completed, failed, or an in-progress value such as queued/processing."),
  video_url: z.string().optional().describe("Where the finished video can be fetched (when completed)."),
  error: z.unknown().optional().describe("Why the task failed (when failed)."),
  local_path: z.string().optional().describe("Where the video was saved (when download was requested)."),
  elapsed_seconds: z.number().optional().describe("How long this call waited."),
  ...guidanceFields,
};

/** What the call cost: a reused task cost nothing new, whatever the earlier one was estimated at. */
export function costLine(estimated: number, reused: boolean | undefined): string {
  return reused
    ? `No new credits were charged (the earlier identical request was estimated at ${estimated} credits).`
    : `Estimated cost ${estimated} credits.`;
}

/** `download: true` on a server that does not save files (a shared HTTP deployment without an output folder). */
export function refuseDownloadIfOff(deps: ServerDeps, download: boolean | undefined): void {
  if (download !== true || deps.downloads) return;
  throw new ValidationError(
    "download: this shared server does not save files (the operator has not set GENERATION_OUTPUT_DIR).",
    { nextStep: "Call again without download: true and fetch the returned URL yourself." },
  );
}
