/**
 * Tolerance for the shapes the spec leaves open ("not shown"): these functions read what the service gives
 * under any reasonable field name and never assume more than the spec promises.
 */
import { InternalServiceError } from "./errors.js";
import type { ImageResult, JsonObject, StartedVideo, UploadResult, VideoPage, VideoStatus } from "./types.js";

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function isHttpUrl(value: unknown): value is string {
  if (typeof value !== "string" || value.length > 4096) return false;
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}

function firstString(record: JsonObject, keys: readonly string[]): string | undefined {
  for (const key of keys) {
    const value = record[key];
    if (typeof value === "string" && value.length > 0) return value;
    if (typeof value === "number" && Number.isFinite(value)) return String(value);
  }
  return undefined;
}

function asRecord(data: unknown, what: string): JsonObject {
  if (isObject(data)) return data;
  throw new InternalServiceError(`The service's ${what} answer was not an object.`);
}

const ID_KEYS = ["video_id", "id", "task_id", "videoId", "taskId"] as const;

export function toStartedVideo(data: unknown): StartedVideo {
  const raw = asRecord(data, "start");
  const nested = isObject(raw["video"]) ? raw["video"] : isObject(raw["task"]) ? raw["task"] : {};
  const videoId = firstString(raw, ID_KEYS) ?? firstString(nested, ID_KEYS);
  if (videoId === undefined) {
    throw new InternalServiceError("The service started a task but its answer carried no video_id.", {
      maybeProcessed: true,
    });
  }
  return { video_id: videoId, status: firstString(raw, ["status", "state"]), raw };
}

export function toVideoStatus(data: unknown, requestedId: string): VideoStatus {
  const raw = asRecord(data, "status");
  const status = firstString(raw, ["status", "state"]);
  if (status === undefined) throw new InternalServiceError("The service's status answer carried no status.");
  const normalized = status.toLowerCase();
  return {
    video_id: firstString(raw, ID_KEYS) ?? requestedId,
    status: normalized,
    video_url: findUrl(
      raw,
      ["video_url", "url", "output_url", "result_url", "download_url", "video"],
      /image|thumb|poster|cover|preview|reference|input|source/i,
    ),
    error: raw["error"] ?? raw["error_message"] ?? raw["failure_reason"],
    raw,
  };
}

export function toVideoPage(data: unknown, page: number, limit: number): VideoPage {
  if (Array.isArray(data)) return { items: data.filter(isObject), page, limit, totals: {} };
  const raw = asRecord(data, "history");
  const listKey =
    ["items", "videos", "data", "results", "records"].find((key) => Array.isArray(raw[key])) ??
    Object.keys(raw).find((key) => Array.isArray(raw[key]));
  const items = listKey === undefined ? [] : (raw[listKey] as unknown[]).filter(isObject);
  const totals: JsonObject = {};
  for (const [key, value] of Object.entries(raw)) {
    if (key === listKey) continue;
    if (typeof value === "number" || typeof value === "boolean" || isObject(value)) totals[key] = value;
  }
  return {
    items,
    page: numberField(raw, "page") ?? page,
    limit: numberField(raw, "limit") ?? numberField(raw, "per_page") ?? limit,
    totals,
  };
}

export function toUploadResult(data: unknown): UploadResult {
  if (isHttpUrl(data)) return { url: data, raw: { url: data } };
  const raw = asRecord(data, "upload");
  const url = findUrl(raw, ["url", "image_url", "file_url", "public_url", "download_url", "location"]);
  if (url === undefined) throw new InternalServiceError("The service's upload answer carried no URL.");
  return { url, raw };
}

/** Every http(s) URL in the answer, in order, except the reference images the request itself sent. */
export function toImageResult(data: unknown, sentReferences: readonly string[] = []): ImageResult {
  const raw = isObject(data) ? data : { value: data };
  const urls: string[] = [];
  collectUrls(raw, urls, 0);
  const references = new Set(sentReferences);
  return { image_urls: [...new Set(urls)].filter((url) => !references.has(url)), raw };
}

function collectUrls(value: unknown, into: string[], depth: number): void {
  if (depth > 4 || into.length >= 50) return;
  if (isHttpUrl(value)) into.push(value);
  else if (Array.isArray(value)) for (const item of value) collectUrls(item, into, depth + 1);
  else if (isObject(value)) for (const item of Object.values(value)) collectUrls(item, into, depth + 1);
}

/** The preferred keys first, then any URL-named key, then any URL at all; keys matching `avoid` never count. */
function findUrl(record: JsonObject, preferred: readonly string[], avoid?: RegExp): string | undefined {
  for (const key of preferred) {
    const value = record[key];
    if (isHttpUrl(value)) return value;
    if (isObject(value) && isHttpUrl(value["url"])) return value["url"];
  }
  const candidates = Object.entries(record).filter(([key, value]) => !avoid?.test(key) && isHttpUrl(value));
  const named = candidates.find(([key]) => /url|uri|href|link/i.test(key)) ?? candidates[0];
  return named?.[1] as string | undefined;
}

function numberField(record: JsonObject, key: string): number | undefined {
  const value = record[key];
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}
