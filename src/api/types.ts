/** Shapes exchanged with the generation service, as the client presents them once shapes.ts has read them. */
import type { Readable } from "node:stream";

export type JsonObject = Record<string, unknown>;

/** Who is asking: background polls must leave a share of the rate budget to the user's own calls. */
export type RequestPriority = "foreground" | "background";

export interface RequestOptions {
  signal?: AbortSignal | undefined;
  priority?: RequestPriority | undefined;
  /** Sent as `Idempotency-Key` on POSTs (harmless where the service ignores it). */
  idempotencyKey?: string | undefined;
  /** Epoch ms by which the request (retries and rate-budget waits included) must be over. */
  deadline?: number | undefined;
}

export type GenerateVideoBody = {
  prompt: string;
  model?: string;
  generation_type?: string;
  image_url?: string;
  aspect_ratio?: string;
  duration?: number;
  resolution?: string;
};

export type GenerateImageBody = {
  prompt: string;
  model?: string;
  resolution?: string;
  aspect_ratio?: string;
  output_format?: string;
  images?: string[];
};

export interface StartedVideo {
  video_id: string;
  /** Status in the start answer, when the service gives one (cleaned; "unknown" when unusable). */
  status: string | undefined;
  /** What reading the answer had to replace (no service text inside), for the log. */
  warnings?: string[];
}

export interface VideoStatus {
  video_id: string;
  status: string;
  video_url: string | undefined;
  /** Failure information as received (string or object): sanitize before relaying. */
  error: unknown;
  raw: JsonObject;
  /** A poster of the result when the answer nests one as `cover` (cleaned URL), for the preview. */
  still_url?: string;
  /** What reading the answer had to replace or could not find (no service text inside), for the log. */
  warnings?: string[];
}

export interface ImageResult {
  image_urls: string[];
  /** The service's id of the image (or of its task), when its answer gave one. */
  image_id?: string;
  raw: JsonObject;
}

export interface VideoPage {
  items: JsonObject[];
  page: number;
  limit: number;
  /** Totals the service gave (total, total_pages, has_more ...), as received. */
  totals: JsonObject;
}

/** A local image ready to stream to POST /upload; produced by `files/` after every check has passed. */
export interface UploadSource {
  filename: string;
  contentType: string;
  size: number;
  /** Opens the bytes; called once per attempt. */
  open(): Readable;
}

export function isFinalStatus(status: string): boolean {
  return status === "completed" || status === "failed";
}

/** The REST service, one method per endpoint; implemented by `GenerationClient` in client.ts. */
export interface GenerationApi {
  generateVideo(body: GenerateVideoBody, options?: RequestOptions): Promise<StartedVideo>;
  generateImage(body: GenerateImageBody, options?: RequestOptions): Promise<ImageResult>;
  listVideos(query: { page: number; limit: number }, options?: RequestOptions): Promise<VideoPage>;
  getVideo(videoId: string, options?: RequestOptions): Promise<VideoStatus>;
  upload(source: UploadSource, options?: RequestOptions): Promise<{ url: string }>;
  getCredits(options?: RequestOptions): Promise<JsonObject>;
}
