/**
 * Spec section 4's bodies and queries, strict so the client's own checks are proven by its tests: a wrong
 * type (null too) is refused, not coerced; unknown fields are ignored. Open limits: models.ts.
 */
import * as models from "../models.js";
import { validationError } from "./http.js";

export type VideoRequest = ReturnType<typeof validateVideoRequest>;
export type ImageRequest = ReturnType<typeof validateImageRequest>;

type Body = Record<string, unknown>;

export function validateVideoRequest(body: Body) {
  const prompt = requirePrompt(body);
  const asked = optionalString(body, "model");
  const model = models.resolveVideoModel(asked);
  const known = models.VIDEO_MODELS.join(", ");
  if (model === undefined)
    throw validationError("model", `unknown video model "${asked}"; expected one of ${known}`);
  const generationType = optionalEnum(body, "generation_type", models.GENERATION_TYPES) ?? "text_to_video";
  const imageUrl = optionalString(body, "image_url");
  if (imageUrl !== undefined) requireHttpUrl("image_url", imageUrl);
  if (generationType === "image_to_video" && imageUrl === undefined)
    throw validationError("image_url", "required when generation_type is image_to_video");
  const aspectRatio = aspectRatioField(body, models.DEFAULT_ASPECT_RATIO_VIDEO);
  const duration = durationField(body);
  let resolution = optionalEnum(body, "resolution", models.VIDEO_RESOLUTIONS);
  if (resolution !== undefined && model !== models.RESOLUTION_MODEL)
    throw validationError("resolution", `only accepted for ${models.RESOLUTION_MODEL}, not for ${model}`);
  if (model === models.RESOLUTION_MODEL) resolution ??= models.DEFAULT_VIDEO_RESOLUTION;
  return { prompt, model, generationType, imageUrl, aspectRatio, duration, resolution };
}

export function validateImageRequest(body: Body) {
  return {
    prompt: requirePrompt(body),
    model: optionalEnum(body, "model", models.IMAGE_MODELS) ?? models.DEFAULT_IMAGE_MODEL,
    resolution: optionalEnum(body, "resolution", models.IMAGE_RESOLUTIONS) ?? models.DEFAULT_IMAGE_RESOLUTION,
    aspectRatio: aspectRatioField(body, models.DEFAULT_ASPECT_RATIO_IMAGE),
    outputFormat: optionalEnum(body, "output_format", models.OUTPUT_FORMATS) ?? "png",
    images: imagesField(body),
  };
}

export function validateListQuery(params: URLSearchParams): { page: number; limit: number } {
  const { PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MIN, PAGE_LIMIT_MAX } = models;
  return {
    page: integerParam(params, "page", 1, 1),
    limit: integerParam(params, "limit", PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MIN, PAGE_LIMIT_MAX),
  };
}

function requirePrompt(body: Body): string {
  if (body.prompt === undefined) throw validationError("prompt", "required");
  const prompt = optionalString(body, "prompt") ?? "";
  if (prompt.trim() === "") throw validationError("prompt", "must not be empty");
  const max = models.MAX_PROMPT_LENGTH;
  if (prompt.length > max)
    throw validationError("prompt", `must be at most ${max} characters (got ${prompt.length})`);
  return prompt;
}

function optionalString(body: Body, field: string): string | undefined {
  if (!Object.hasOwn(body, field)) return undefined;
  const value = body[field];
  if (typeof value !== "string") throw validationError(field, "must be a string");
  return value;
}

function optionalEnum<T extends string>(body: Body, field: string, allowed: readonly T[]): T | undefined {
  const value = optionalString(body, field);
  if (value !== undefined && !(allowed as readonly string[]).includes(value))
    throw validationError(field, `must be one of ${allowed.join(", ")} (got "${value}")`);
  return value as T | undefined;
}

function aspectRatioField(body: Body, fallback: string): string {
  const value = optionalString(body, "aspect_ratio") ?? fallback;
  const form = `must be "W:H" with whole numbers from 1 to 64, like 16:9 (got "${value}")`;
  if (models.parseAspectRatio(value) === undefined) throw validationError("aspect_ratio", form);
  return value;
}

function durationField(body: Body): number {
  if (!Object.hasOwn(body, "duration")) return models.DEFAULT_DURATION_S;
  const value = body.duration;
  if (typeof value !== "number" || !Number.isFinite(value))
    throw validationError("duration", "must be a number of seconds");
  if (value <= 0) throw validationError("duration", `must be greater than 0 (got ${value})`);
  if (value > models.MAX_DURATION_S)
    throw validationError("duration", `must be at most ${models.MAX_DURATION_S} seconds (got ${value})`);
  return value;
}

function imagesField(body: Body): string[] {
  if (!Object.hasOwn(body, "images")) return [];
  const value = body.images;
  if (!Array.isArray(value)) throw validationError("images", "must be an array of image URLs");
  const max = models.MAX_REFERENCE_IMAGES;
  if (value.length > max)
    throw validationError("images", `must hold at most ${max} URLs (got ${value.length})`);
  return value.map((entry: unknown, index) => {
    if (typeof entry !== "string") throw validationError(`images[${index}]`, "must be a string URL");
    return requireHttpUrl(`images[${index}]`, entry);
  });
}

function requireHttpUrl(field: string, value: string): string {
  const protocol = URL.canParse(value) ? new URL(value).protocol : "";
  if (protocol !== "http:" && protocol !== "https:")
    throw validationError(field, `must be an http(s) URL (got "${truncate(value)}")`);
  return value;
}

/** Query values must be plain decimal integers: "1.5", "1e1", " 2" and repeats are refused, not rounded. */
function integerParam(params: URLSearchParams, name: string, fallback: number, min: number, max?: number) {
  const [raw, ...repeats] = params.getAll(name);
  if (repeats.length > 0) throw validationError(name, "given more than once");
  if (raw === undefined) return fallback;
  if (!/^-?\d{1,16}$/.test(raw)) throw validationError(name, `must be an integer (got "${truncate(raw)}")`);
  const value = Number(raw);
  const range = max === undefined ? `must be >= ${min}` : `must be from ${min} to ${max}`;
  if (value < min) throw validationError(name, range);
  if (value > (max ?? Number.MAX_SAFE_INTEGER))
    throw validationError(name, max === undefined ? "is too large" : range);
  return value;
}

function truncate(value: string): string {
  return value.length > 80 ? `${value.slice(0, 77)}...` : value;
}
