/** Identity of a start request, for the `allow_duplicate` guard: the same fingerprint buys the same thing. */
import { createHash } from "node:crypto";
import type { JsonObject } from "../api/types.js";

/**
 * sha256 over the canonical JSON of the body (defaults applied, prompt whitespace collapsed) and the images'
 * digests in order (a local image's in place of its not-yet-known upload URL).
 */
export function fingerprintRequest(
  kind: "video" | "image",
  body: JsonObject,
  imageDigests: string[],
  /** Who asks, when one key serves several callers: the same request of two callers is two requests. */
  scope?: string,
): string {
  const normalized: JsonObject = { ...body };
  if (typeof normalized["prompt"] === "string") normalized["prompt"] = normalizePrompt(normalized["prompt"]);
  const canonical = canonicalJson({ v: 1, kind, body: normalized, images: imageDigests, scope });
  return createHash("sha256").update(canonical).digest("hex");
}

/** Trims and collapses runs of whitespace: "a  cat\n" and "a cat" describe the same video. */
export function normalizePrompt(prompt: string): string {
  return prompt.trim().replace(/\s+/g, " ");
}

/** JSON with object keys sorted at every depth and undefined members dropped. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value)) ?? "null";
}

/** JSON.stringify itself drops undefined members and writes an undefined array item as null. */
function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => sortKeys(item));
  if (value === null || typeof value !== "object") return value;
  const out: JsonObject = {};
  for (const key of Object.keys(value).sort()) out[key] = sortKeys((value as JsonObject)[key]);
  return out;
}
