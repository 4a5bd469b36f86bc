/**
 * A history answer, searched like every answer (find-search.ts): its page of items and totals, and the facts
 * of one item that settlement matches against a lost start (tasks/history-match.ts): the prompt, the model
 * and when it was created. These come back as received, for matching; clean them before relaying.
 */
import { MAX_FIELD_CHARS } from "./fields.js";
import { best, containerKey, flatKey, names, wordSet } from "./find-search.js";
import type { JsonObject } from "./types.js";
import { isObject, walk } from "./walk.js";

/** History items kept from one page; the service is asked for at most 50. */
export const MAX_HISTORY_ITEMS = 100;

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

// ---- the facts of one item -------------------------------------------------------------------------

const NOT_THE_ITEM_FACT = wordSet(
  "user account owner customer billing credit subscription plan error failure",
);
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
