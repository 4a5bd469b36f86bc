/**
 * Facts of the generation service (spec sections 2.6, 4 and 8) and our documented choices where it says
 * "not shown": the client validates and estimates by them, the sandbox acts by them; nothing else has them.
 */

export const VIDEO_MODELS = ["vendor-video-1-5-pro", "vendor-video-2-0", "vendor-video-2-0-fast"] as const;
export const IMAGE_MODELS = ["image-2"] as const;
export type VideoModel = (typeof VIDEO_MODELS)[number];
export type ImageModel = (typeof IMAGE_MODELS)[number];

/** The spec writes the video default without the vendor prefix; the service maps it to the lite model. */
export const DEFAULT_VIDEO_MODEL_ALIAS = "video-1-5-pro";
export const DEFAULT_VIDEO_MODEL: VideoModel = "vendor-video-1-5-pro";
export const DEFAULT_IMAGE_MODEL: ImageModel = "image-2";

export const GENERATION_TYPES = ["text_to_video", "image_to_video"] as const;

export const VIDEO_RESOLUTIONS = ["480p", "720p", "1080p"] as const;
export type VideoResolution = (typeof VIDEO_RESOLUTIONS)[number];
/** Only the standard model takes a resolution (spec 4.1). */
export const RESOLUTION_MODEL: VideoModel = "vendor-video-2-0";

export const IMAGE_RESOLUTIONS = ["1k", "2k", "4k"] as const;
export type ImageResolution = (typeof IMAGE_RESOLUTIONS)[number];
export const OUTPUT_FORMATS = ["png", "jpg", "webp"] as const;

export const SUBSCRIPTION_MODELS: readonly string[] = [
  "vendor-video-2-0",
  "vendor-video-2-0-fast",
  "image-2",
];

export const DEFAULT_ASPECT_RATIO_VIDEO = "16:9";
export const DEFAULT_ASPECT_RATIO_IMAGE = "1:1";
export const DEFAULT_DURATION_S = 5;
/** Our choice (spec: "not shown"): 20 s is the longest clip the service's video models are sold for. */
export const MAX_DURATION_S = 20;

export const PAGE_LIMIT_MIN = 1;
export const PAGE_LIMIT_MAX = 50;
export const PAGE_LIMIT_DEFAULT = 20;

/** Upload ceiling: "10MB" read as 10 MiB = 10,485,760 bytes (our documented choice). */
export const MAX_UPLOAD_BYTES = 10 * 1024 * 1024;
export type UploadMimeType = "image/jpeg" | "image/png" | "image/webp";

export const DEFAULT_RATE_LIMIT_PER_MINUTE = 60;

/** Credits per second of video by model (spec 8); the 1080p rate is our documented choice. */
export const VIDEO_CREDITS_PER_SECOND: Readonly<Record<VideoModel, number>> = {
  "vendor-video-1-5-pro": 5,
  "vendor-video-2-0": 7.5,
  "vendor-video-2-0-fast": 5,
};
/** Spec 8 says only "higher at 1080p"; we price it at 10 credits/s (a third above base) and say so in README. */
export const VIDEO_1080P_CREDITS_PER_SECOND = 10;
export const IMAGE_CREDITS_PER_IMAGE = 5;

/** Each model as get_credits shows it. */
export const PRICE_LIST = [
  ...VIDEO_MODELS.map((id) => ({
    id,
    kind: "video" as const,
    credits_per_second: VIDEO_CREDITS_PER_SECOND[id],
    ...(id === RESOLUTION_MODEL && { credits_per_second_1080p: VIDEO_1080P_CREDITS_PER_SECOND }),
    needs_paid_access: SUBSCRIPTION_MODELS.includes(id),
  })),
  ...IMAGE_MODELS.map((id) => ({
    id,
    kind: "image" as const,
    credits_per_image: IMAGE_CREDITS_PER_IMAGE,
    needs_paid_access: SUBSCRIPTION_MODELS.includes(id),
  })),
];

/** The rule get_credits and paid_access_required share: undefined when the account's access is unknown. */
export function isUsable(
  model: { needs_paid_access: boolean },
  paidAccess: boolean | undefined,
): boolean | undefined {
  return model.needs_paid_access ? paidAccess : true;
}

/** Accepts the spec's unprefixed default spelling as the lite model. */
export function resolveVideoModel(value: string | undefined): VideoModel | undefined {
  if (value === undefined || value === DEFAULT_VIDEO_MODEL_ALIAS) return DEFAULT_VIDEO_MODEL;
  return VIDEO_MODELS.find((model) => model === value);
}

export function videoCredits(model: VideoModel, durationS: number, resolution?: string): number {
  const perSecond =
    model === RESOLUTION_MODEL && resolution === "1080p"
      ? VIDEO_1080P_CREDITS_PER_SECOND
      : VIDEO_CREDITS_PER_SECOND[model];
  return Math.round(perSecond * durationS * 100) / 100;
}

export function imageCredits(count = 1): number {
  return IMAGE_CREDITS_PER_IMAGE * count;
}

/** Our choice: each side of W:H is a whole number from 1 to 64 (21:9, 9:16, 4:3, 1:1 ...). */
export function parseAspectRatio(value: string): { width: number; height: number } | undefined {
  const match = /^([1-9]\d?):([1-9]\d?)$/.exec(value);
  const [width, height] = [Number(match?.[1]), Number(match?.[2])];
  return match !== null && width <= 64 && height <= 64 ? { width, height } : undefined;
}

/** Our choice (spec: not shown): prompts longer than this are refused with validation_error. */
export const MAX_PROMPT_LENGTH = 2000;
/** Our choice (spec: not shown): at most this many reference images in one image edit request. */
export const MAX_REFERENCE_IMAGES = 10;
/** Our choice (spec: no default shown): the image resolution when none is given. */
export const DEFAULT_IMAGE_RESOLUTION: ImageResolution = "1k";
/** Our choice (spec: no default shown): the standard model's resolution when none is given. */
export const DEFAULT_VIDEO_RESOLUTION: VideoResolution = "720p";
