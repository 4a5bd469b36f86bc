/**
 * Validation of spec section 4's bodies and queries. Deliberately strict, so the client's own checks are
 * proven by its tests: a wrong type (null included) is refused rather than coerced, and every message
 * starts with the field's name. Unknown fields are ignored, as most JSON APIs do.
 */
import {
  DEFAULT_ASPECT_RATIO_IMAGE,
  DEFAULT_ASPECT_RATIO_VIDEO,
  DEFAULT_DURATION_S,
  DEFAULT_IMAGE_MODEL,
  DEFAULT_IMAGE_RESOLUTION,
  DEFAULT_VIDEO_RESOLUTION,
  GENERATION_TYPES,
  IMAGE_MODELS,
  IMAGE_RESOLUTIONS,
  MAX_DURATION_S,
  MAX_PROMPT_LENGTH,
  MAX_REFERENCE_IMAGES,
  OUTPUT_FORMATS,
  PAGE_LIMIT_DEFAULT,
  PAGE_LIMIT_MAX,
  PAGE_LIMIT_MIN,
  RESOLUTION_MODEL,
  VIDEO_MODELS,
  VIDEO_RESOLUTIONS,
  parseAspectRatio,
  resolveVideoModel,
} from "../models.js";
import type {
  GenerationType,
  ImageModel,
  ImageResolution,
  OutputFormat,
  VideoModel,
  VideoResolution,
} from "../models.js";
import { validationError } from "./http.js";

export interface VideoRequest {
  prompt: string;
  model: VideoModel;
  generationType: GenerationType;
  imageUrl: string | undefined;
  aspectRatio: string;
  duration: number;
  /** Set only for the standard model, defaulted when absent. */
  resolution: VideoResolution | undefined;
}

export interface ImageRequest {
  prompt: string;
  model: ImageModel;
  resolution: ImageResolution;
  aspectRatio: string;
  outputFormat: OutputFormat;
  images: string[];
}

export interface ListQuery {
  page: number;
  limit: number;
}

type Body = Record<string, unknown>;

export function asObjectBody(value: unknown): Body {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw validationError("body", "must be a JSON object");
  }
  return value as Body;
}

export function validateVideoRequest(body: Body): VideoRequest {
  const prompt = requirePrompt(body);
  const modelValue = optionalString(body, "model");
  const model = resolveVideoModel(modelValue);
  if (model === undefined) {
    throw validationError(
      "model",
      `unknown video model "${String(modelValue)}"; expected one of ${VIDEO_MODELS.join(", ")}`,
    );
  }
  const generationType = optionalEnum(body, "generation_type", GENERATION_TYPES) ?? "text_to_video";
  const imageUrl = optionalString(body, "image_url");
  if (imageUrl !== undefined) requireHttpUrl("image_url", imageUrl);
  // A text_to_video request that carries an image_url is accepted and the image ignored: harmless.
  if (generationType === "image_to_video" && imageUrl === undefined) {
    throw validationError("image_url", "required when generation_type is image_to_video");
  }
  const aspectRatio = aspectRatioField(body, DEFAULT_ASPECT_RATIO_VIDEO);
  const duration = durationField(body);
  let resolution = optionalEnum(body, "resolution", VIDEO_RESOLUTIONS);
  if (resolution !== undefined && model !== RESOLUTION_MODEL) {
    throw validationError("resolution", `only accepted for ${RESOLUTION_MODEL}, not for ${model}`);
  }
  if (model === RESOLUTION_MODEL) resolution ??= DEFAULT_VIDEO_RESOLUTION;
  return { prompt, model, generationType, imageUrl, aspectRatio, duration, resolution };
}

export function validateImageRequest(body: Body): ImageRequest {
  const prompt = requirePrompt(body);
  const model = optionalEnum(body, "model", IMAGE_MODELS) ?? DEFAULT_IMAGE_MODEL;
  const resolution = optionalEnum(body, "resolution", IMAGE_RESOLUTIONS) ?? DEFAULT_IMAGE_RESOLUTION;
  const aspectRatio = aspectRatioField(body, DEFAULT_ASPECT_RATIO_IMAGE);
  const outputFormat = optionalEnum(body, "output_format", OUTPUT_FORMATS) ?? "png";
  const images = imagesField(body);
  return { prompt, model, resolution, aspectRatio, outputFormat, images };
}

export function validateListQuery(params: URLSearchParams): ListQuery {
  return {
    page: integerParam(params, "page", 1, 1, Number.MAX_SAFE_INTEGER),
    limit: integerParam(params, "limit", PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MIN, PAGE_LIMIT_MAX),
  };
}

function requirePrompt(body: Body): string {
  if (!("prompt" in body) || body.prompt === undefined) throw validationError("prompt", "required");
  const prompt = body.prompt;
  if (typeof prompt !== "string") throw validationError("prompt", "must be a string");
  if (prompt.trim() === "") throw validationError("prompt", "must not be empty");
  if (prompt.length > MAX_PROMPT_LENGTH) {
    throw validationError("prompt", `must be at most ${MAX_PROMPT_LENGTH} characters (got ${prompt.length})`);
  }
  return prompt;
}

function optionalString(body: Body, field: string): string | undefined {
  if (!(field in body)) return undefined;
  const value = body[field];
  if (typeof value !== "string") throw validationError(field, "must be a string");
  return value;
}

function optionalEnum<T extends string>(body: Body, field: string, allowed: readonly T[]): T | undefined {
  const value = optionalString(body, field);
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) {
    throw validationError(field, `must be one of ${allowed.join(", ")} (got "${value}")`);
  }
  return value as T;
}

function aspectRatioField(body: Body, fallback: string): string {
  const value = optionalString(body, "aspect_ratio");
  if (value === undefined) return fallback;
  if (parseAspectRatio(value) === undefined) {
    throw validationError(
      "aspect_ratio",
      `must be "W:H" with whole numbers from 1 to 64, like 16:9 (got "${value}")`,
    );
  }
  return value;
}

function durationField(body: Body): number {
  if (!("duration" in body)) return DEFAULT_DURATION_S;
  const value = body.duration;
  if (typeof value !== "number" || !Number.isFinite(value))
    throw validationError("duration", "must be a number of seconds");
  if (value <= 0) throw validationError("duration", `must be greater than 0 (got ${value})`);
  if (value > MAX_DURATION_S)
    throw validationError("duration", `must be at most ${MAX_DURATION_S} seconds (got ${value})`);
  return value;
}

function imagesField(body: Body): string[] {
  if (!("images" in body)) return [];
  const value = body.images;
  if (!Array.isArray(value)) throw validationError("images", "must be an array of image URLs");
  if (value.length > MAX_REFERENCE_IMAGES) {
    throw validationError("images", `must hold at most ${MAX_REFERENCE_IMAGES} URLs (got ${value.length})`);
  }
  return value.map((entry: unknown, index) => {
    const field = `images[${index}]`;
    if (typeof entry !== "string") throw validationError(field, "must be a string URL");
    requireHttpUrl(field, entry);
    return entry;
  });
}

function requireHttpUrl(field: string, value: string): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw validationError(field, `must be an http(s) URL (got "${truncate(value)}")`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw validationError(field, `must be an http(s) URL (got "${truncate(value)}")`);
  }
}

/** Query values must be plain decimal integers: "1.5", "1e1", " 2" and repeats are refused, not rounded. */
function integerParam(
  params: URLSearchParams,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const values = params.getAll(name);
  if (values.length === 0) return fallback;
  if (values.length > 1) throw validationError(name, "given more than once");
  const raw = values[0] ?? "";
  if (!/^-?\d{1,16}$/.test(raw)) throw validationError(name, `must be an integer (got "${truncate(raw)}")`);
  const value = Number(raw);
  if (value < min)
    throw validationError(
      name,
      max === Number.MAX_SAFE_INTEGER ? `must be >= ${min}` : `must be from ${min} to ${max}`,
    );
  if (value > max)
    throw validationError(
      name,
      max === Number.MAX_SAFE_INTEGER ? "is too large" : `must be from ${min} to ${max}`,
    );
  return value;
}

function truncate(value: string): string {
  return value.length > 80 ? `${value.slice(0, 77)}...` : value;
}
