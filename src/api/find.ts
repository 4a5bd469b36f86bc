/**
 * Bounded deep search of the service's answers, for the fields whose place the spec leaves open.
 *
 * The walk is iterative and breadth-first: no recursion a hostile answer could overflow, at most
 * `WALK_LIMITS.maxDepth` levels (the answer's own fields are depth 1), `WALK_LIMITS.maxNodes` values looked
 * at in all and `WALK_LIMITS.maxChildren` per array or object (so one huge array cannot spend the whole
 * budget on its first level): a huge or deeply nested answer costs bounded work. Strings over 2,048
 * characters never qualify as an id, a status or a URL. Every finder applies the same preference order:
 *   1. a lower tier beats a higher one, at any depth (tier 1 `video_id` beats a shallower tier 3 `id`);
 *   2. within a tier, the shallower find beats the deeper one;
 *   3. at equal depth, the service's field order decides (the first one wins).
 * Subtrees whose key names something other than the task (a user, the request that was sent, billing, a
 * thumbnail ...) are never searched; key names are compared by their words (`videoUrl`, `video_url` and
 * `video-url` are the same name; `thumbnails` also names a thumbnail).
 *
 * Ids, statuses and URLs come back already cleaned (fields.ts): a value that cannot be relayed is never
 * returned. Prompts, models and creation times come back as received, for matching; clean them before
 * relaying.
 */
import { MAX_FIELD_CHARS, UNKNOWN_STATUS, safeId, safeStatus, safeUrl } from "./fields.js";
import type { JsonObject } from "./types.js";

export const WALK_LIMITS = { maxDepth: 8, maxNodes: 10_000, maxChildren: 1_000 } as const;
/** History items kept from one page; the service is asked for at most 50. */
export const MAX_HISTORY_ITEMS = 100;
export const MAX_IMAGE_URLS = 50;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export interface WalkNode {
  readonly value: unknown;
  /** The node's key in its parent object; undefined for the root and for array items. */
  readonly key: string | undefined;
  /** The node's index in its parent array. */
  readonly index: number | undefined;
  /** The node's place among its siblings (array index, or the order of object keys). */
  readonly position: number;
  readonly depth: number;
  readonly parent: WalkNode | undefined;
}

export interface WalkLimits {
  maxDepth?: number;
  maxNodes?: number;
  maxChildren?: number;
}

export interface WalkStats {
  /** Values taken into the walk, the root included; never more than `maxNodes`. */
  nodes: number;
  /** True when a limit (depth, nodes, children) left part of the answer unseen. */
  truncated: boolean;
}

/** `"skip"`: do not look inside this node; `"stop"`: end the walk. */
export type WalkVerdict = "skip" | "stop" | undefined;

/** Visits `root` and what it contains breadth-first, within the limits. */
export function walk(
  root: unknown,
  visit: (node: WalkNode) => WalkVerdict,
  limits: WalkLimits = {},
): WalkStats {
  const maxDepth = limits.maxDepth ?? WALK_LIMITS.maxDepth;
  const maxNodes = limits.maxNodes ?? WALK_LIMITS.maxNodes;
  const maxChildren = limits.maxChildren ?? WALK_LIMITS.maxChildren;
  const queue: WalkNode[] = [
    { value: root, key: undefined, index: undefined, position: 0, depth: 0, parent: undefined },
  ];
  let truncated = false;
  for (let head = 0; head < queue.length; head++) {
    const node = queue[head] as WalkNode;
    const verdict = visit(node);
    if (verdict === "stop") break;
    if (verdict === "skip") continue;
    const { value } = node;
    if (Array.isArray(value)) {
      if (value.length === 0) continue;
      if (node.depth >= maxDepth) {
        truncated = true;
        continue;
      }
      // An index loop stops at the budget: a million-item array costs no more than a small one.
      for (let index = 0; index < value.length; index++) {
        if (queue.length >= maxNodes || index >= maxChildren) {
          truncated = true;
          break;
        }
        const depth = node.depth + 1;
        queue.push({ value: value[index], key: undefined, index, position: index, depth, parent: node });
      }
    } else if (isObject(value)) {
      if (node.depth >= maxDepth) {
        truncated ||= hasAnyKey(value);
        continue;
      }
      let position = 0;
      for (const key in value) {
        if (!Object.prototype.hasOwnProperty.call(value, key)) continue;
        if (queue.length >= maxNodes || position >= maxChildren) {
          truncated = true;
          break;
        }
        const depth = node.depth + 1;
        queue.push({ value: value[key], key, index: undefined, position: position++, depth, parent: node });
      }
    }
  }
  return { nodes: queue.length, truncated };
}

function hasAnyKey(record: JsonObject): boolean {
  for (const key in record) if (Object.prototype.hasOwnProperty.call(record, key)) return true;
  return false;
}

// ---- key names -------------------------------------------------------------------------------------

const MAX_KEY_CHARS = 128;

/** `videoURL`, `video_url`, `video-url` -> ["video", "url"]. Absurdly long keys name nothing. */
function keyWords(key: string): string[] {
  if (key.length > MAX_KEY_CHARS) return [];
  return key
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word !== "");
}

/** `videoURL`, `video_url`, `video-url` -> "videourl". */
function flatKey(key: string | undefined): string {
  return key === undefined || key.length > MAX_KEY_CHARS ? "" : key.toLowerCase().replace(/[^a-z0-9]/g, "");
}

/** Whether a word of `key` (or its singular: `thumbnails`) is in `words`. */
function names(key: string | undefined, words: ReadonlySet<string>): boolean {
  if (key === undefined) return false;
  for (const word of keyWords(key)) {
    if (words.has(word)) return true;
    if (word.length > 3 && word.endsWith("s") && words.has(word.slice(0, -1))) return true;
  }
  return false;
}

/** The key of the nearest object above the node (array items count as inside their array's key). */
function containerKey(node: WalkNode): string | undefined {
  let current = node.parent;
  while (current !== undefined && current.key === undefined && current.index !== undefined) {
    current = current.parent;
  }
  return current?.key;
}

/** Whether the node's own key or any key above it names one of `words`. */
function within(node: WalkNode, words: ReadonlySet<string>): boolean {
  for (let current: WalkNode | undefined = node; current !== undefined; current = current.parent) {
    if (names(current.key, words)) return true;
  }
  return false;
}

const MAX_SEGMENT_CHARS = 32;
const MAX_PATH_CHARS = 100;

/** `result.output[].url`: keys cleaned to `[A-Za-z0-9_$-]` and shortened; indices shown as `[]`. */
export function pathOf(node: WalkNode): string {
  const parts: string[] = [];
  for (let current: WalkNode | undefined = node; current?.parent !== undefined; current = current.parent) {
    if (current.key === undefined) {
      parts.push("[]");
      continue;
    }
    const kept = current.key.slice(0, MAX_KEY_CHARS).replace(/[^A-Za-z0-9_$-]/g, "");
    const segment = kept.length > MAX_SEGMENT_CHARS ? `${kept.slice(0, MAX_SEGMENT_CHARS)}…` : kept || "?";
    parts.push(`.${segment}`);
  }
  const path = parts.reverse().join("").replace(/^\./, "");
  return path.length > MAX_PATH_CHARS ? `${path.slice(0, MAX_PATH_CHARS - 1)}…` : path;
}

// ---- the tiered search every finder shares ------------------------------------------------------------

interface Found<T> {
  value: T;
  node: WalkNode;
}

type Judgement<T> = "skip" | { tier: number; value: T } | undefined;

/** The best find by the module's preference order; `judge` sees every node not inside a skipped one. */
function best<T>(root: unknown, judge: (node: WalkNode) => Judgement<T>): Found<T> | undefined {
  const byTier: (Found<T> | undefined)[] = [];
  walk(root, (node) => {
    const judgement = judge(node);
    if (judgement === "skip") return "skip";
    if (judgement === undefined || byTier[judgement.tier] !== undefined) return undefined;
    byTier[judgement.tier] = { value: judgement.value, node };
    // Breadth-first order makes the first tier-1 find the best possible one.
    return judgement.tier === 1 ? "stop" : undefined;
  });
  for (const found of byTier) if (found !== undefined) return found;
  return undefined;
}

function wordSet(text: string): ReadonlySet<string> {
  return new Set(text.split(/\s+/).filter((word) => word !== ""));
}

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
const NOT_THE_ITEM_FACT = wordSet(
  "user account owner customer billing credit subscription plan error failure",
);

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
const CREATED_KEYS = new Set([
  "createdat",
  "created",
  "createdon",
  "createdtime",
  "createtime",
  "creationtime",
  "submittedat",
  "submitted",
]);
const MODEL_KEYS = new Set(["model", "modelid", "modelname"]);
const MODEL_WORD = wordSet("model");
const MAX_PROMPT_CHARS = 20_000;

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

/** The prompt of a history item (`prompt`, or `request.prompt`, `input.prompt` ... at any depth), as sent. */
export function findPrompt(item: unknown): string | undefined {
  return best<string>(item, (node) => {
    if (names(node.key, NOT_THE_ITEM_FACT)) return "skip";
    const { value } = node;
    if (flatKey(node.key) !== "prompt" || typeof value !== "string") return undefined;
    return value.length > 0 && value.length <= MAX_PROMPT_CHARS ? { tier: 1, value } : undefined;
  })?.value;
}

/** The model of a history item (`model`/`model_id`, or `model.id`/`model.name`), as received. */
export function findModel(item: unknown): string | undefined {
  return best<string>(item, (node) => {
    if (names(node.key, NOT_THE_ITEM_FACT)) return "skip";
    const { value } = node;
    if (typeof value !== "string" || value.length === 0 || value.length > 256) return undefined;
    if (MODEL_KEYS.has(flatKey(node.key))) return { tier: 1, value };
    const own = flatKey(node.key);
    const inModel =
      (own === "id" || own === "name" || own === "slug") && flatKey(containerKey(node)) === "model";
    return inModel ? { tier: 2, value } : undefined;
  })?.value;
}

/** When a history item was created (`created_at`/`createdAt`/`created`/`submitted_at` ...), as received. */
export function findCreatedAt(item: unknown): string | number | undefined {
  return best<string | number>(item, (node) => {
    if (names(node.key, NOT_THE_ITEM_FACT) || names(node.key, MODEL_WORD)) return "skip";
    if (!CREATED_KEYS.has(flatKey(node.key))) return undefined;
    const { value } = node;
    if (typeof value === "number" && Number.isFinite(value)) return { tier: 1, value };
    if (typeof value === "string" && value.length > 0 && value.length <= MAX_FIELD_CHARS) {
      return { tier: 1, value };
    }
    return undefined;
  })?.value;
}

// ---- history ------------------------------------------------------------------------------------

export interface History {
  /** The page's items (objects only, at most `MAX_HISTORY_ITEMS`), as received. */
  items: JsonObject[];
  /** Numbers and booleans of the top level and of meta/pagination objects, flattened; the top level wins. */
  totals: JsonObject;
}

const LIST_KEYS = new Set([
  "items",
  "videos",
  "data",
  "results",
  "records",
  "list",
  "tasks",
  "generations",
  "jobs",
  "entries",
  "history",
  "rows",
]);
const META_KEYS = new Set(["meta", "metadata", "pagination", "pageinfo", "paging"]);
const NOT_THE_LIST = wordSet("meta metadata pagination paging error failure warning message link");
const TOTAL_KEY = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
const MAX_TOTALS = 30;
/** Meta objects deeper than this are not the page's totals. */
const MAX_META_DEPTH = 3;

/**
 * A history answer: a bare array, or the first array of objects breadth-first, an array under
 * `items`/`videos`/`data`/`results`/`records`/`list`/`tasks` (even empty) beating any other.
 */
export function findHistory(data: unknown): History {
  if (Array.isArray(data)) return { items: objectsOf(data), totals: {} };
  const list = best<unknown[]>(data, (node) => {
    // The list is never inside another array (an item's own `output: [...]` is not the history).
    if (node.index !== undefined) return "skip";
    if (node.key === undefined) return undefined;
    if (names(node.key, NOT_THE_LIST)) return "skip";
    if (!Array.isArray(node.value)) return undefined;
    if (LIST_KEYS.has(flatKey(node.key))) return { tier: 1, value: node.value };
    return node.value.slice(0, 10).some(isObject) ? { tier: 2, value: node.value } : "skip";
  });
  return { items: list === undefined ? [] : objectsOf(list.value), totals: findTotals(data) };
}

function objectsOf(list: readonly unknown[]): JsonObject[] {
  const items: JsonObject[] = [];
  for (let index = 0; index < list.length && items.length < MAX_HISTORY_ITEMS; index++) {
    const item = list[index];
    if (isObject(item)) items.push(item);
  }
  return items;
}

function findTotals(data: unknown): JsonObject {
  const totals: JsonObject = {};
  let count = 0;
  const take = (record: JsonObject) => {
    for (const key in record) {
      if (count >= MAX_TOTALS) return;
      if (!Object.prototype.hasOwnProperty.call(record, key) || !TOTAL_KEY.test(key)) continue;
      if (Object.prototype.hasOwnProperty.call(totals, key)) continue;
      const value = record[key];
      if ((typeof value === "number" && Number.isFinite(value)) || typeof value === "boolean") {
        totals[key] = value;
        count++;
      }
    }
  };
  if (!isObject(data)) return totals;
  take(data);
  walk(data, (node) => {
    if (node.depth > MAX_META_DEPTH || Array.isArray(node.value)) return "skip";
    if (node.depth > 0 && isObject(node.value) && META_KEYS.has(flatKey(node.key))) take(node.value);
    return undefined;
  });
  return totals;
}

// ---- describing an answer without its values ------------------------------------------------------

const MAX_PATHS = 20;

/**
 * The answer's field paths, never its values, for messages about an answer that lacked something:
 * `asset.id, asset.size, asset.links.private`, at most 20, breadth-first, array items as `[]`.
 */
export function describeFields(data: unknown): string {
  if (!isObject(data) && !Array.isArray(data)) {
    const kind =
      data === null ? "null" : typeof data === "string" ? "a bare string" : `a bare ${typeof data}`;
    return `none (the answer was ${kind})`;
  }
  const paths: string[] = [];
  let more = false;
  const stats = walk(data, (node) => {
    // A container at the depth limit stands for what lies below it, which is not read.
    if (node.parent === undefined) return undefined;
    if (!isLeaf(node.value) && node.depth < WALK_LIMITS.maxDepth) return undefined;
    const path = pathOf(node);
    if (paths.includes(path)) return undefined;
    if (paths.length >= MAX_PATHS) {
      more = true;
      return "stop";
    }
    paths.push(path);
    return undefined;
  });
  if (paths.length === 0) return "none (the answer was empty)";
  return more || stats.truncated ? `${paths.join(", ")}, …` : paths.join(", ");
}

function isLeaf(value: unknown): boolean {
  if (Array.isArray(value)) return value.length === 0;
  return !isObject(value) || !hasAnyKey(value);
}
