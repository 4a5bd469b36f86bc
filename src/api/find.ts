/**
 * Bounded deep search of the service's answers, for the fields whose place the spec leaves open: a task's
 * id, status, video URL, still and failure, an upload's hosted URL, the generated images' URLs. Each finder
 * ranks what it may take in tiers by the shared preference order (find-search.ts) over the bounded walk
 * (walk.ts); a history page and the facts of its items are found in find-history.ts. Subtrees whose key
 * names something other than the task (a user, the request that was sent, billing, a thumbnail ...) are
 * never searched. Strings over 2,048 characters never qualify as an id, a status or a URL.
 *
 * Ids, statuses and URLs come back already cleaned (fields.ts): a value that cannot be relayed is never
 * returned.
 */
import { MAX_FIELD_CHARS, UNKNOWN_STATUS, safeId, safeStatus, safeUrl } from "./fields.js";
import { best, containerKey, flatKey, names, within, wordSet, type Found } from "./find-search.js";
import { hasAnyKey, isObject, pathOf, walk, type WalkNode } from "./walk.js";

export const MAX_IMAGE_URLS = 50;

/** Subtrees about something other than the task: their ids and statuses are not the task's. */
const NOT_THE_TASK = wordSet(`
  user account owner creator author customer member organization org team workspace project
  model request input params param parameters billing credit subscription plan usage error failure`);
/** Keys whose object holds the task itself, where a bare `id` is the task's id. */
const TASK_WORDS = wordSet("video task job generation result data output item record prediction");
/** Subtrees and keys whose URLs are not the video. */
const NOT_THE_VIDEO = wordSet(`
  thumbnail thumb poster cover preview still image img picture photo frame reference ref input source
  request params param parameters callback webhook error failure user account owner avatar profile
  billing credit subscription plan model docs doc documentation help support audio music sound voice
  subtitle caption status poll cancel delete self api next prev previous first last logo icon`);
const STILL_WORDS = wordSet("thumbnail thumb poster cover preview still");
const NOT_THE_STILL = wordSet(`
  request input params param parameters reference ref source callback webhook user account owner avatar
  profile model error failure billing logo icon`);
/** Key words that name a URL (tier 2 of the URL finders). */
const URL_WORDS = wordSet("url uri href link src location public");
/** Subtrees and keys whose URLs are not the uploaded image. */
const NOT_THE_UPLOAD = wordSet(`
  thumbnail thumb preview poster cover still delete deletion remove private internal callback webhook
  self api status docs help support user account owner avatar profile error failure`);
/** Subtrees and keys whose URLs are not generated images. */
const NOT_AN_OUTPUT = wordSet(`
  request input reference ref source params param parameters callback webhook user account owner avatar
  profile error failure billing credit subscription plan model status poll cancel delete self api docs
  help support logo icon`);
const NOT_THE_FAILURE = wordSet(`
  user account owner customer model request input params param parameters billing credit subscription
  plan usage`);
const ID_TIERS: Readonly<Record<string, number>> = {
  videoid: 1,
  taskid: 2,
  jobid: 2,
  generationid: 2,
  id: 3,
};
const STATUS_KEYS = new Set([
  "status",
  "state",
  "taskstatus",
  "videostatus",
  "jobstatus",
  "generationstatus",
]);
const VIDEO_URL_KEYS = new Set([
  "videourl",
  "videouri",
  "outputurl",
  "resulturl",
  "downloadurl",
  "fileurl",
  "video",
]);
const UPLOAD_URL_KEYS = new Set([
  "url",
  "imageurl",
  "fileurl",
  "publicurl",
  "downloadurl",
  "location",
  "secureurl",
]);
const FAILURE_KEYS = new Set([
  "error",
  "errors",
  "errormessage",
  "errormsg",
  "errordetail",
  "errordetails",
  "errorreason",
  "failure",
  "failuremessage",
  "failurereason",
  "failreason",
  "failedreason",
  "reason",
]);

/** Tier 2 of the URL finders: a URL-named key, or any key inside `links`/`urls`. */
function urlNamed(node: WalkNode): boolean {
  if (names(node.key, URL_WORDS)) return true;
  const container = containerKey(node);
  return container !== undefined && names(container, URL_WORDS);
}

function isCandidateText(value: unknown): boolean {
  return typeof value === "string" || typeof value === "number";
}

// ---- the finders ----------------------------------------------------------------------------------

export interface IdSearch {
  /** The task id, cleaned; undefined when none could be relayed. */
  id: string | undefined;
  /** Where it was found. */
  path: string | undefined;
  /** True when an id-named field held a value that cannot be relayed (hostile characters, too long). */
  rejected: boolean;
}

/**
 * The task id: tier 1 `video_id`/`videoId`; tier 2 `task_id`/`job_id`/`generation_id`; tier 3 `id`, at
 * the top level or in an object named for the task (video, task, job, generation, result, data, output,
 * item, record). Never from subtrees about a user, account, model, request, billing, error ...
 */
export function searchVideoId(data: unknown): IdSearch {
  let rejected = false;
  const found = best<string>(data, (node) => {
    if (node.key === undefined) return undefined;
    if (names(node.key, NOT_THE_TASK)) return "skip";
    const tier = ID_TIERS[flatKey(node.key)];
    if (tier === undefined || !isCandidateText(node.value)) return undefined;
    if (tier === 3) {
      const container = containerKey(node);
      if (container !== undefined && !names(container, TASK_WORDS)) return undefined;
    }
    const id = safeId(node.value);
    if (id === undefined) {
      rejected = true;
      return undefined;
    }
    return { tier, value: id };
  });
  return { id: found?.value, path: found && pathOf(found.node), rejected };
}

/** The task id of an answer or a history item, cleaned; see `searchVideoId`. */
export function findVideoId(data: unknown): string | undefined {
  return searchVideoId(data).id;
}

export interface StatusSearch {
  /** Trimmed and lower-cased; `"unknown"` when the service's value cannot be relayed. */
  status: string;
  path: string;
  /** False when the service's value was replaced by `"unknown"`. */
  usable: boolean;
}

/**
 * The task status: `status`/`state`/`task_status`/`video_status`/`job_status`/`generation_status`, never
 * from subtrees about something else (a `subscription.status` is not the task's). Undefined when no
 * such field exists; `"unknown"` (not usable) when one exists but cannot be relayed.
 */
export function searchStatus(data: unknown): StatusSearch | undefined {
  let unusable: WalkNode | undefined;
  const found = best<string>(data, (node) => {
    if (node.key === undefined) return undefined;
    if (names(node.key, NOT_THE_TASK)) return "skip";
    if (!STATUS_KEYS.has(flatKey(node.key))) return undefined;
    const { value } = node;
    if (typeof value === "string" && value.length <= MAX_FIELD_CHARS) return { tier: 1, value };
    if (typeof value === "number" && Number.isSafeInteger(value)) return { tier: 1, value: String(value) };
    // Objects may hold the status one level down; anything else is a status that cannot be relayed.
    if (!isObject(value) && !Array.isArray(value) && value !== null) unusable ??= node;
    return undefined;
  });
  if (found !== undefined) {
    const status = safeStatus(found.value);
    return { status: status ?? UNKNOWN_STATUS, path: pathOf(found.node), usable: status !== undefined };
  }
  return unusable && { status: UNKNOWN_STATUS, path: pathOf(unusable), usable: false };
}

/** The task status, cleaned (`"unknown"` when present but unusable); undefined when there is none. */
export function findStatus(data: unknown): string | undefined {
  return searchStatus(data)?.status;
}

export interface UrlSearch {
  url: string | undefined;
  path: string | undefined;
  /** True when a URL-named field held a value that is not a usable http(s) URL. */
  rejected: boolean;
}

/**
 * The finished video's URL: tier 1 `video_url`/`output_url`/`result_url`/`download_url`/`file_url`/`video`;
 * tier 2 URL-named keys (`url`, `href`, `link`, `src`, `location`, `public`, anything inside `links`);
 * tier 3 any http(s) URL. Never from keys or subtrees about something else: thumbnails, posters, covers,
 * previews, stills, images, the request and its input, references, sources, callbacks, webhooks, errors,
 * the account, status/poll/cancel/self links ...
 */
export function searchVideoUrl(data: unknown): UrlSearch {
  let rejected = false;
  const found = best<string>(data, (node) => {
    if (names(node.key, NOT_THE_VIDEO)) return "skip";
    if (typeof node.value !== "string") return undefined;
    const tier = VIDEO_URL_KEYS.has(flatKey(node.key)) ? 1 : urlNamed(node) ? 2 : 3;
    const url = safeUrl(node.value);
    if (url === undefined) {
      rejected ||= tier < 3 && node.value !== "";
      return undefined;
    }
    return { tier, value: url };
  });
  return { url: found?.value, path: found && pathOf(found.node), rejected };
}

/** The finished video's URL, cleaned; see `searchVideoUrl`. */
export function findVideoUrl(data: unknown): string | undefined {
  return searchVideoUrl(data).url;
}

/**
 * A still of the result (thumbnail, thumb, poster, cover, preview, still) at any depth: tier 1 a URL under
 * such a key, tier 2 a URL-named key inside such a subtree, tier 3 any URL inside one. Never the request's
 * input or reference images.
 */
export function findStillUrl(data: unknown): string | undefined {
  return best<string>(data, (node) => {
    if (names(node.key, NOT_THE_STILL)) return "skip";
    const url = safeUrl(node.value);
    if (url === undefined) return undefined;
    if (names(node.key, STILL_WORDS)) return { tier: 1, value: url };
    if (!within(node, STILL_WORDS)) return undefined;
    return { tier: urlNamed(node) ? 2 : 3, value: url };
  })?.value;
}

/**
 * Why a task failed: `error`/`error_message`/`failure`/`failure_reason`/`reason` ..., the shallowest one
 * that is not empty, as received (string or object): pass it through `sanitizeValue` before relaying.
 */
export function findFailure(data: unknown): unknown {
  return best<unknown>(data, (node) => {
    if (node.key === undefined) return undefined;
    if (names(node.key, NOT_THE_FAILURE)) return "skip";
    if (!FAILURE_KEYS.has(flatKey(node.key)) || isEmpty(node.value)) return undefined;
    return { tier: 1, value: node.value };
  })?.value;
}

function isEmpty(value: unknown): boolean {
  if (value === undefined || value === null || value === false || value === "") return true;
  if (Array.isArray(value)) return value.length === 0;
  return isObject(value) && !hasAnyKey(value);
}

/**
 * The hosted URL of an upload answer: the answer itself when it is a bare URL, else tier 1 `url`/
 * `image_url`/`file_url`/`public_url`/`download_url`/`location`/`secure_url`; tier 2 URL-named keys
 * (`public`, `href`, anything inside `links` ...); tier 3 any http(s) URL. Never thumbnails, previews,
 * private, delete or API links.
 */
export function searchUploadUrl(data: unknown): UrlSearch {
  const bare = safeUrl(data);
  if (bare !== undefined) return { url: bare, path: "", rejected: false };
  let rejected = false;
  const found = best<string>(data, (node) => {
    if (names(node.key, NOT_THE_UPLOAD)) return "skip";
    if (typeof node.value !== "string") return undefined;
    const tier = UPLOAD_URL_KEYS.has(flatKey(node.key)) ? 1 : urlNamed(node) ? 2 : 3;
    const url = safeUrl(node.value);
    if (url === undefined) {
      rejected ||= tier < 3 && node.value !== "";
      return undefined;
    }
    return { tier, value: url };
  });
  return { url: found?.value, path: found && pathOf(found.node), rejected };
}

/** The hosted URL of an upload answer, cleaned; see `searchUploadUrl`. */
export function findUploadUrl(data: unknown): string | undefined {
  return searchUploadUrl(data).url;
}

/**
 * Every generated image's URL, deduplicated, at most 50: chosen breadth-first (the shallowest 50 when there
 * are more), then listed in the answer's own order so image 1 stays image 1. Never from the request, its
 * input, references, sources, params, callbacks or webhooks, and never one of the references the request
 * sent. Thumbnails and previews count only when nothing else was found.
 */
export function findImageUrls(data: unknown, sentReferences: readonly string[] = []): string[] {
  const sent = new Set<string>();
  for (const reference of sentReferences) {
    sent.add(reference);
    const href = safeUrl(reference);
    if (href !== undefined) sent.add(href);
  }
  const outputs: Found<string>[] = [];
  const stills: Found<string>[] = [];
  const seen = new Set<string>();
  walk(data, (node) => {
    if (names(node.key, NOT_AN_OUTPUT)) return "skip";
    const url = safeUrl(node.value);
    if (url === undefined || seen.has(url) || sent.has(url)) return undefined;
    if (typeof node.value === "string" && sent.has(node.value)) return undefined;
    const into = within(node, STILL_WORDS) ? stills : outputs;
    if (into.length < MAX_IMAGE_URLS) {
      into.push({ value: url, node });
      seen.add(url);
    }
    return outputs.length >= MAX_IMAGE_URLS ? "stop" : undefined;
  });
  const chosen = outputs.length > 0 ? outputs : stills;
  return chosen.sort((a, b) => documentOrder(a.node, b.node)).map((found) => found.value);
}

/** Compares two nodes by where they stand in the answer as written (depth-first order). */
function documentOrder(a: WalkNode, b: WalkNode): number {
  const trail = (node: WalkNode) => {
    const positions: number[] = [];
    for (let current: WalkNode | undefined = node; current?.parent !== undefined; current = current.parent) {
      positions.push(current.position);
    }
    return positions.reverse();
  };
  const left = trail(a);
  const right = trail(b);
  for (let index = 0; index < Math.min(left.length, right.length); index++) {
    const difference = (left[index] as number) - (right[index] as number);
    if (difference !== 0) return difference;
  }
  return left.length - right.length;
}
