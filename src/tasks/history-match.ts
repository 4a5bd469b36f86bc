/**
 * Settlement's search of the history: which item of the newest page is the task a start whose answer was
 * lost created. Same prompt, same model when the item names one, same duration and aspect ratio when both
 * say, created no earlier than the send (less clock skew) when it carries a time, and not a task this server
 * already knows; the newest candidate wins.
 */
import type { GenerateVideoBody, JsonObject } from "../api/types.js";
import { findCreatedAt, findModel, findPrompt, findStatus, findVideoId, isObject } from "../api/shapes.js";
import { resolveVideoModel } from "../models.js";
import { normalizePrompt } from "./fingerprint.js";

export interface HistoryMatch {
  video_id: string;
  status: string | undefined;
  raw: JsonObject;
}

export function pickMatch(
  items: JsonObject[],
  body: GenerateVideoBody,
  notBefore: number,
  known: (id: string) => boolean,
): HistoryMatch | undefined {
  const prompt = normalizePrompt(body.prompt);
  const model = resolveVideoModel(body.model) ?? body.model;
  let best: { item: JsonObject; id: string; createdAt: number | undefined } | undefined;
  for (const item of items) {
    // Items may nest their fields (`task.id`, `request.prompt` ...): the same bounded finders as every answer.
    const id = findVideoId(item);
    if (id === undefined || known(id)) continue;
    const itemPrompt = findPrompt(item);
    if (itemPrompt === undefined || normalizePrompt(itemPrompt) !== prompt) continue;
    const itemModel = findModel(item);
    if (itemModel !== undefined && (resolveVideoModel(itemModel) ?? itemModel) !== model) continue;
    if (!sameWhenBothPresent(requestField(item, "duration"), body.duration)) continue;
    if (!sameWhenBothPresent(requestField(item, "aspect_ratio"), body.aspect_ratio)) continue;
    const createdAt = readTime(findCreatedAt(item));
    if (createdAt !== undefined && createdAt < notBefore) continue;
    // The newest candidate wins; without times, the service's order (newest first, usually) decides.
    if (!best || (createdAt !== undefined && (best.createdAt === undefined || createdAt > best.createdAt))) {
      best = { item, id, createdAt };
    }
  }
  if (!best) return undefined;
  return { video_id: best.id, status: findStatus(best.item), raw: best.item };
}

/** A request parameter as a history item echoes it: at its top level, or under request/input/params. */
function requestField(item: JsonObject, key: string): unknown {
  if (item[key] !== undefined) return item[key];
  for (const holder of ["request", "input", "params", "parameters"]) {
    const nested = item[holder];
    if (isObject(nested) && nested[key] !== undefined) return nested[key];
  }
  return undefined;
}

function sameWhenBothPresent(itemValue: unknown, sent: string | number | undefined): boolean {
  if (sent === undefined || itemValue === undefined || itemValue === null) return true;
  if (typeof sent === "number") return Number(itemValue) === sent;
  return String(itemValue) === sent;
}

/** ISO text, epoch seconds or epoch milliseconds; undefined when unreadable. */
function readTime(value: unknown): number | undefined {
  if (typeof value === "number" && Number.isFinite(value)) return value < 1e11 ? value * 1000 : value;
  if (typeof value === "string" && value.trim() !== "") {
    if (/^\d+(\.\d+)?$/.test(value.trim())) return readTime(Number(value));
    const parsed = Date.parse(value);
    return Number.isNaN(parsed) ? undefined : parsed;
  }
  return undefined;
}
