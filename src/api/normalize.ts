/**
 * Tolerance for the shapes the spec leaves open ("not shown"): the answers are searched at any depth
 * (find.ts; the preference order is in find-search.ts) and every id, status and URL is cleaned (fields.ts)
 * before it can reach a result, a next step or a log line. When something truly cannot be found, the
 * error says which fields came (their paths, never their values) and what did happen.
 */
import { InternalServiceError } from "./errors.js";
import {
  findFailure,
  findImageUrls,
  findStillUrl,
  searchStatus,
  searchUploadUrl,
  searchVideoId,
  searchVideoUrl,
} from "./find.js";
import { findHistory } from "./find-history.js";
import { safeId } from "./fields.js";
import { describeFields, isObject } from "./walk.js";
import type { ImageResult, JsonObject, StartedVideo, UploadResult, VideoPage, VideoStatus } from "./types.js";

export { isObject };

/**
 * Whether a value (typically the user's input) is an http(s) URL. Loose on purpose: service fields go
 * through `safeUrl` (fields.ts), which is stricter about what may be relayed.
 */
export function isHttpUrl(value: unknown): value is string {
  if (typeof value !== "string" || value.length > 4096) return false;
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}

function asRaw(data: unknown): JsonObject {
  return isObject(data) ? data : { value: data };
}

function statusWarning(path: string): string {
  const where = path === "" ? "" : ` (at ${path})`;
  return (
    `The service's status value${where} could not be relayed (too long, or characters that are not a ` +
    'status word); it is reported as "unknown".'
  );
}

/** POST /generate: the new task's id (and status when given). Throws, marked maybe-processed, without one. */
export function toStartedVideo(data: unknown): StartedVideo {
  // A bare id is the whole answer for some services.
  const bare = typeof data === "string" || typeof data === "number" ? safeId(data) : undefined;
  const search = bare === undefined ? searchVideoId(data) : { id: bare, path: "", rejected: false };
  if (search.id === undefined) {
    const hostile = search.rejected
      ? " An id was present but contained characters that cannot be relayed."
      : "";
    throw new InternalServiceError(
      "The service accepted the start request (credits were probably charged), but its answer carried no " +
        `usable video_id (fields received: ${describeFields(data)}).${hostile}`,
      {
        maybeProcessed: true,
        nextStep:
          "Do not start the video again: that would likely spend credits twice. Call list_videos to find " +
          "the new task, then call get_status with its video_id.",
      },
    );
  }
  const found = searchStatus(data);
  const warnings = found !== undefined && !found.usable ? [statusWarning(found.path)] : [];
  return {
    video_id: search.id,
    status: found?.status,
    raw: asRaw(data),
    ...(warnings.length > 0 && { warnings }),
  };
}

/**
 * GET /videos/:id. The result keeps the requested id: the service answered for that path, and an id the
 * answer may carry elsewhere (an output's, a job's) must not replace the one the caller tracks.
 */
export function toVideoStatus(data: unknown, requestedId: string): VideoStatus {
  const found = searchStatus(data);
  if (found === undefined) {
    const id = safeId(requestedId);
    const which = id === undefined ? "" : ` for video_id ${id}`;
    const keep = id === undefined ? "The task is not lost" : `The task video_id ${id} is not lost`;
    throw new InternalServiceError(
      `The service's status answer${which} carried no status (fields received: ${describeFields(data)}).`,
      {
        nextStep:
          `${keep}: call get_status again in a minute. If the answer stays like this, report its shape to ` +
          "the maintainers of generation-mcp.",
      },
    );
  }
  const warnings = found.usable ? [] : [statusWarning(found.path)];
  const video = searchVideoUrl(data);
  if (found.status === "completed" && video.url === undefined) {
    const why = video.rejected
      ? "a video URL field was present but not a usable http(s) URL"
      : "none was found";
    const fields = describeFields(data);
    warnings.push(
      `The task is completed but its answer carried no usable video URL (${why}; ` +
        `fields received: ${fields}).`,
    );
  }
  const still = findStillUrl(data);
  return {
    video_id: requestedId,
    status: found.status,
    video_url: video.url,
    error: findFailure(data),
    raw: asRaw(data),
    ...(still !== undefined && { still_url: still }),
    ...(warnings.length > 0 && { warnings }),
  };
}

/** GET /videos: the items (as received) and the service's totals, flattened. */
export function toVideoPage(data: unknown, page: number, limit: number): VideoPage {
  const { items, totals } = findHistory(data);
  return {
    items,
    page: positiveInteger(totals["page"]) ?? page,
    limit:
      positiveInteger(totals["limit"]) ??
      positiveInteger(totals["per_page"]) ??
      positiveInteger(totals["page_size"]) ??
      positiveInteger(totals["perPage"]) ??
      positiveInteger(totals["pageSize"]) ??
      limit,
    totals,
  };
}

/** POST /upload: the hosted URL under any field name, or the bare answer. */
export function toUploadResult(data: unknown): UploadResult {
  const search = searchUploadUrl(data);
  if (search.url === undefined) {
    const hostile = search.rejected ? " A URL field was present but was not a usable http(s) URL." : "";
    throw new InternalServiceError(
      "The service accepted the upload, but its answer carried no usable image URL " +
        `(fields received: ${describeFields(data)}).${hostile}`,
      {
        nextStep:
          "The image was uploaded and no credits were spent, but trying again uploads it again. Give the " +
          "image as an http(s) image_url instead, or report this answer shape to the maintainers of " +
          "generation-mcp.",
      },
    );
  }
  return { url: search.url, raw: isObject(data) ? data : { url: search.url } };
}

/**
 * POST /generate-image: every generated image's URL (find.ts `findImageUrls`), leaving out the references
 * the request sent; empty when the service answered with a task to follow up.
 */
export function toImageResult(data: unknown, sentReferences: readonly string[] = []): ImageResult {
  return { image_urls: findImageUrls(data, sentReferences), raw: asRaw(data) };
}

function positiveInteger(value: unknown): number | undefined {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 1 ? value : undefined;
}
