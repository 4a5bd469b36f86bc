/**
 * Reading the `data` of the service's answers (CONTRACT.md "Tolerance"): a field the spec names is read by
 * that name at any depth, the shallowest first; where it shows no name, by a plain rule (the upload's URL is
 * the first http(s) URL). Every walk is bounded; an id, status or URL that cannot be relayed is not returned.
 */
import { InternalServiceError } from "./errors.js";
import type { ImageResult, JsonObject, StartedVideo, VideoPage, VideoStatus } from "./types.js";

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** An array's indices or an object's own keys, lazily: a huge one is never listed whole. */
function* keysOf(value: object): Generator<string | number> {
  if (Array.isArray(value)) for (let index = 0; index < value.length; index++) yield index;
  else for (const key in value) if (Object.hasOwn(value, key)) yield key;
}

const isEmpty = (value: unknown) => typeof value === "object" && value !== null && keysOf(value).next().done;

// Single fields are relayed whole or never: a repaired id or URL would name what the service did not.
const MAX_FIELD_CHARS = 2048;
// Controls, format (bidi, zero-width), surrogate, private-use characters and every kind of whitespace.
const UNSAFE_CHAR = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Zl}\p{Zp}\p{Zs}\s]/u;

const asText = (v: unknown, max: number) =>
  Number.isSafeInteger(v) ? String(v) : typeof v === "string" && v.length <= max ? v : undefined;

/** 1..256 characters without controls, whitespace, format or bidi characters; not `.` or `..`. */
export function safeId(value: unknown): string | undefined {
  const text = asText(value, 256);
  return text === undefined || /^\.{0,2}$/.test(text) || UNSAFE_CHAR.test(text) ? undefined : text;
}

/** Trimmed and lower-cased, when it then has the form of a status word; undefined otherwise. */
export function safeStatus(value: unknown): string | undefined {
  const status = asText(value, MAX_FIELD_CHARS)?.trim().toLowerCase();
  return status !== undefined && /^[a-z0-9][a-z0-9 _.-]{0,63}$/.test(status) ? status : undefined;
}

/** An http(s) URL as `new URL(raw).href`, at most 2,048 characters, no unsafe character, no credentials. */
export function safeUrl(value: unknown): string | undefined {
  const raw = typeof value === "string" && !UNSAFE_CHAR.test(value) ? asText(value, MAX_FIELD_CHARS) : "";
  const url = raw !== undefined && URL.canParse(raw) ? new URL(raw) : undefined;
  const bare = url !== undefined && url.username === "" && url.password === "" && url.hostname !== "";
  return bare && /^https?:$/.test(url.protocol) && url.href.length <= MAX_FIELD_CHARS ? url.href : undefined;
}

/** Whether the user's input is an http(s) URL; loose on purpose (service fields go through `safeUrl`). */
export const isHttpUrl = (v: unknown): v is string =>
  typeof v === "string" && v.length <= 4096 && URL.canParse(v) && /^https?:$/.test(new URL(v).protocol);

export const WALK_LIMITS = { maxDepth: 8, maxNodes: 10_000, maxChildren: 1_000 } as const;

/** `key`: in the parent object; undefined for the root and for array items. */
export type WalkNode = { value: unknown; key: string | undefined; depth: number; parent?: WalkNode };

/** Visits `root` breadth-first (or in document order) within WALK_LIMITS; "skip" its contents, "stop". */
export function walk(root: unknown, visit: (node: WalkNode) => "skip" | "stop" | undefined, inOrder = false) {
  const queue: WalkNode[] = [{ value: root, key: undefined, depth: 0 }];
  let [head, nodes, truncated] = [0, 1, false];
  while (head < queue.length) {
    const node = (inOrder ? queue.pop() : queue[head++]) as WalkNode;
    const { value, depth } = node;
    const verdict = visit(node);
    if (verdict === "stop") break;
    if (verdict === "skip" || typeof value !== "object" || value === null) continue;
    if (depth >= WALK_LIMITS.maxDepth) {
      truncated ||= !isEmpty(value);
      continue;
    }
    const children: WalkNode[] = [];
    for (const key of keysOf(value)) {
      if (nodes >= WALK_LIMITS.maxNodes || children.length >= WALK_LIMITS.maxChildren) {
        truncated = true;
        break;
      }
      nodes++;
      const child = (value as Record<string | number, unknown>)[key];
      children.push({
        value: child,
        key: typeof key === "string" ? key : undefined,
        depth: depth + 1,
        parent: node,
      });
    }
    queue.push(...(inOrder ? children.reverse() : children));
  }
  return { nodes, truncated };
}

/** The first node (breadth-first) that `take` accepts, with what it made of it; `outsideArrays` skips lists. */
function find<T>(data: unknown, take: (node: WalkNode) => T | undefined, { outsideArrays = false } = {}) {
  let found: { value: T; node: WalkNode } | undefined;
  walk(data, (node) => {
    const value = take(node);
    if (value !== undefined) found = { value, node };
    return found ? "stop" : outsideArrays && Array.isArray(node.value) ? "skip" : undefined;
  });
  return found;
}

const named = <T>(data: unknown, name: string, accept: (value: unknown) => T | undefined) =>
  find(data, (node) => (node.key === name ? accept(node.value) : undefined))?.value;
/** Whether a field named `name` holds anything (to say that a value was there but unusable). */
const present = (data: unknown, name: string) =>
  named(data, name, (value) => value ?? undefined) !== undefined;

export const findVideoId = (data: unknown) => named(data, "video_id", safeId);
export const findVideoUrl = (data: unknown) => named(data, "video_url", safeUrl);

/**
 * A history item (GET /videos), as generations/settlement.ts matches a lost start: duration and aspect ratio as it
 * echoes the request (top level, or under request/input/params); `created_at` as epoch ms.
 */
export function toHistoryItem(item: JsonObject) {
  const echoed = (key: string): unknown => {
    for (const holder of [item, ...["request", "input", "params", "parameters"].map((name) => item[name])]) {
      if (isObject(holder) && holder[key] !== undefined && holder[key] !== null) return holder[key];
    }
    return undefined;
  };
  return {
    video_id: findVideoId(item),
    prompt: named(item, "prompt", (v) => asText(v, 20_000) || undefined),
    model: named(item, "model", (v) => asText(v, 256) || undefined),
    status: findStatus(item),
    duration: echoed("duration"),
    aspect_ratio: echoed("aspect_ratio"),
    created_at: readTime(
      named(item, "created_at", (v) => (typeof v === "number" ? v : asText(v, MAX_FIELD_CHARS))),
    ),
  };
}

/** ISO text, epoch seconds or epoch milliseconds; undefined when unreadable. */
function readTime(value: unknown): number | undefined {
  if (typeof value === "number" && Number.isFinite(value)) return value < 1e11 ? value * 1000 : value;
  if (typeof value !== "string" || value.trim() === "") return undefined;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return readTime(Number(value));
  const parsed = Date.parse(value);
  return Number.isNaN(parsed) ? undefined : parsed;
}

/** GET /credits: the first boolean, outside arrays, whose key has the word "paid" (not `unpaid`). */
export const findPaidAccess = (data: unknown): boolean | undefined =>
  find(
    data,
    ({ key, value }) =>
      typeof value === "boolean" &&
      key
        ?.replace(/([a-z])([A-Z])/g, "$1_$2")
        .toLowerCase()
        .split(/[^a-z0-9]+/)
        .includes("paid")
        ? value
        : undefined,
    { outsideArrays: true },
  )?.value;

/** The first `status` that is not a container; `"unknown"` (not usable) when its value cannot be relayed. */
function readStatus(data: unknown) {
  // null marks a status that is there but cannot be relayed.
  const found = find(data, ({ key, value }) =>
    key === "status" && typeof value !== "object" ? (safeStatus(value) ?? null) : undefined,
  );
  const usable = found?.value !== null;
  return found && { status: found.value ?? "unknown", usable, path: pathOf(found.node) };
}

export const findStatus = (data: unknown) => readStatus(data)?.status;

const asRaw = (data: unknown): JsonObject => (isObject(data) ? data : { value: data });
const statusWarning = (path: string) =>
  `The service's status value${path === "" ? "" : ` (at ${path})`} could not be relayed (too long, or ` +
  'characters that are not a status word); it is reported as "unknown".';
/** An answer that lacks what it must carry: which fields came (never their values), and what to do. */
const lacking = (what: string, data: unknown, nextStep: string, maybeProcessed = false) =>
  new InternalServiceError(`${what} (fields received: ${describeFields(data)}).`, {
    nextStep,
    maybeProcessed,
  });

/** POST /generate: the new task's `video_id` (and `status`). Throws, marked maybe-processed, without one. */
export function toStartedVideo(data: unknown): StartedVideo {
  const id = findVideoId(data);
  if (id === undefined) {
    const error = lacking(
      "The service accepted the start request (credits were probably charged), but its answer carried no usable video_id",
      data,
      "Do not start the video again: that would likely spend credits twice. Call list_videos to find the new " +
        "task, then call get_status with its video_id.",
      true,
    );
    if (present(data, "video_id"))
      error.message += " An id was present but contained characters that cannot be relayed.";
    throw error;
  }
  const found = readStatus(data);
  const warnings = found !== undefined && !found.usable ? [statusWarning(found.path)] : [];
  return { video_id: id, status: found?.status, ...(warnings.length > 0 && { warnings }) };
}

/** GET /videos/:id. Keeps the requested id: the answer may name other ids, the caller tracks this one. */
export function toVideoStatus(data: unknown, requestedId: string): VideoStatus {
  const found = readStatus(data);
  const id = safeId(requestedId);
  if (found === undefined) {
    throw lacking(
      `The service's status answer${id === undefined ? "" : ` for video_id ${id}`} carried no status`,
      data,
      `${id === undefined ? "The task" : `The task video_id ${id}`} is not lost: call get_status again in a minute. ` +
        "If the answer stays like this, report its shape to the maintainers of generation-mcp.",
    );
  }
  const warnings = found.usable ? [] : [statusWarning(found.path)];
  const videoUrl = findVideoUrl(data);
  if (found.status === "completed" && videoUrl === undefined) {
    const why = present(data, "video_url")
      ? "a video URL field was present but not a usable http(s) URL"
      : "none was found";
    warnings.push(
      `The task is completed but its answer carried no usable video URL (${why}; fields received: ${describeFields(data)}).`,
    );
  }
  // Not a field of the spec: the poster a service may nest as `cover: { url }` (the sandbox does), previewed.
  const still = named(data, "cover", (v) => safeUrl(isObject(v) ? v["url"] : v));
  return {
    video_id: requestedId,
    status: found.status,
    video_url: videoUrl,
    // Why it failed: the first `error` that says anything, as received (sanitized before it is relayed).
    error: named(data, "error", (v) => (v === null || v === false || v === "" || isEmpty(v) ? undefined : v)),
    raw: asRaw(data),
    ...(still !== undefined && { still_url: still }),
    ...(warnings.length > 0 && { warnings }),
  };
}

const TOTALS = new Set(["total", "total_pages", "page", "limit", "has_more"]);
/** History items kept from one page; the service is asked for at most 50. */
export const MAX_HISTORY_ITEMS = 100;

/** GET /videos: a bare array or the first array of objects, and the totals by their plain names. */
export function toVideoPage(data: unknown, page: number, limit: number): VideoPage {
  const objects = (value: unknown) =>
    Array.isArray(value) &&
    Array.from({ length: Math.min(10, value.length) }, (_, at) => value[at]).some(isObject)
      ? (value as unknown[])
      : undefined;
  const list = Array.isArray(data) ? data : (find(data, ({ value }) => objects(value))?.value ?? []);
  const items: JsonObject[] = [];
  for (let index = 0; index < list.length && items.length < MAX_HISTORY_ITEMS; index++) {
    const item: unknown = list[index];
    if (isObject(item)) items.push(item);
  }
  const totals: JsonObject = {};
  walk(data, ({ key, value }) => {
    const usable = typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value));
    if (usable && key !== undefined && TOTALS.has(key) && !Object.hasOwn(totals, key)) totals[key] = value;
    // Totals are never inside an array (an item's own `page` or `total` is not the history's).
    return Array.isArray(value) ? "skip" : undefined;
  });
  const positive = (value: unknown) =>
    Number.isSafeInteger(value) && (value as number) >= 1 ? (value as number) : undefined;
  return { items, page: positive(totals["page"]) ?? page, limit: positive(totals["limit"]) ?? limit, totals };
}

/** POST /upload: the first http(s) URL of the answer (the answer itself when it is a bare URL). */
export function toUploadResult(data: unknown) {
  const url = find(data, ({ value }) => safeUrl(value))?.value;
  if (url !== undefined) return { url };
  const error = lacking(
    "The service accepted the upload, but its answer carried no usable image URL",
    data,
    "The image was uploaded and no credits were spent, but trying again uploads it again. Give the image as an " +
      "http(s) image_url instead, or report this answer shape to the maintainers of generation-mcp.",
  );
  if (find(data, ({ value }) => (typeof value === "string" && /^[a-z][\w+.-]*:/i.test(value)) || undefined)) {
    error.message += " A URL field was present but was not a usable http(s) URL.";
  }
  throw error;
}

/** POST /generate-image: the answer's http(s) URLs in order, unique, at most 50, never a reference sent. */
export function toImageResult(data: unknown, sentReferences: readonly string[] = []): ImageResult {
  const sent = new Set(sentReferences.flatMap((reference) => [reference, safeUrl(reference) ?? reference]));
  const urls = new Set<string>();
  const take = ({ value }: WalkNode) => {
    const url = sent.has(value as string) ? undefined : safeUrl(value);
    if (url !== undefined && !sent.has(url)) urls.add(url);
    return urls.size >= 50 ? "stop" : undefined;
  };
  walk(data, take, true);
  const raw = asRaw(data);
  const id = findImageId(raw);
  return { image_urls: [...urls], ...(id !== undefined && { image_id: id }), raw };
}

/** An image answer's own id (or its task's), at its top level under the names services use for it. */
export function findImageId(data: unknown): string | undefined {
  if (!isObject(data)) return undefined;
  return [data["image_id"], data["id"], data["task_id"]].map(safeId).find((id) => id !== undefined);
}

/** `result.output[].url`: keys cleaned to `[A-Za-z0-9_$-]`, at most 32 characters each, 100 in all. */
export function pathOf(node: WalkNode): string {
  const parts: string[] = [];
  for (let at: WalkNode | undefined = node; at?.parent !== undefined; at = at.parent) {
    const key = at.key?.slice(0, 128).replace(/[^A-Za-z0-9_$-]/g, "");
    parts.unshift(key === undefined ? "[]" : `.${key.length > 32 ? `${key.slice(0, 32)}…` : key || "?"}`);
  }
  const path = parts.join("").replace(/^\./, "");
  return path.length > 100 ? `${path.slice(0, 99)}…` : path;
}

/** The answer's field paths (never values), at most 20, breadth-first: `asset.id, asset.links.private`. */
export function describeFields(data: unknown): string {
  if (typeof data !== "object" || data === null)
    return `none (the answer was ${data === null ? "null" : `a bare ${typeof data}`})`;
  const paths = new Set<string>();
  let more = false;
  const { truncated } = walk(data, (node) => {
    // A container at the depth limit stands for what lies below it, which is not read.
    const leaf = typeof node.value !== "object" || isEmpty(node.value) || node.depth >= WALK_LIMITS.maxDepth;
    if (node.parent === undefined || !leaf) return undefined;
    more = paths.size >= 20 && !paths.has(pathOf(node));
    if (!more) paths.add(pathOf(node));
    return more ? "stop" : undefined;
  });
  if (paths.size === 0) return "none (the answer was empty)";
  return `${[...paths].join(", ")}${more || truncated ? ", …" : ""}`;
}
