/**
 * What a call would cost by the price table, and the request in words ("a 10 s 1080p video on ..."). The
 * tools and the protocol edge both ask here: the estimate a user confirms is the one the daily limit counts.
 */
import { isObject } from "../api/shapes.js";
import {
  DEFAULT_DURATION_S,
  DEFAULT_IMAGE_MODEL,
  DEFAULT_VIDEO_MODEL,
  DEFAULT_VIDEO_RESOLUTION,
  RESOLUTION_MODEL,
  imageCredits,
  videoCredits,
  type VideoModel,
} from "../models.js";

export interface CallEstimate {
  credits: number;
  what: string;
}

export function estimateVideo(model: VideoModel, durationS: number, resolution?: string): CallEstimate {
  const shownResolution = model === RESOLUTION_MODEL ? `${resolution ?? DEFAULT_VIDEO_RESOLUTION} ` : "";
  return {
    credits: videoCredits(model, durationS, resolution),
    what: `a ${durationS} s ${shownResolution}video on ${model}`,
  };
}

export function estimateImage(model: string = DEFAULT_IMAGE_MODEL): CallEstimate {
  return { credits: imageCredits(1), what: `an image on ${model}` };
}

/** The estimate of a tools/call that would start something paid; undefined for free tools and dry runs. */
export function estimateCall(tool: string, args: unknown): CallEstimate | undefined {
  const data = isObject(args) ? args : {};
  if (data["dry_run"] === true) return undefined;
  const text = (name: string) => (typeof data[name] === "string" ? data[name] : undefined);
  if (tool === "generate_video") {
    const duration = typeof data["duration"] === "number" ? data["duration"] : DEFAULT_DURATION_S;
    return estimateVideo((text("model") ?? DEFAULT_VIDEO_MODEL) as VideoModel, duration, text("resolution"));
  }
  if (tool === "generate_image") return estimateImage(text("model"));
  return undefined;
}
