/**
 * What a successful tool result shows beside its text, read from the handler's own return value: previews
 * of the finished images and of a video's still (`still_url`, which the output schema does not relay), a
 * sheet of a completed video's frames (frames.ts), notes on what could not be made, and `resource_link`s to
 * the media; all under 1 MB, within the time the call's window leaves (`answer_by`, not relayed either).
 */
import { setTimeout as delay } from "node:timers/promises";
import type { CallToolResult, ContentBlock, ResourceLink } from "@modelcontextprotocol/server";

import { findImageId, isObject, safeId, safeUrl } from "../api/shapes.js";
import type { Config } from "../config/index.js";
import { sanitizeBaseName } from "../files/download.js";
import { FRAMES_DEADLINE_MS, contactSheet, type FramesInfo, type SheetOptions } from "./frames.js";
import { PREVIEW_DEADLINE_MS, makePreviews, type PreviewSource } from "./previews.js";

/** Claude Desktop refuses a tool result above 1 MB; the previews' budget keeps far below: a backstop. */
export const MAX_RESULT_BYTES = 1_000_000;

type MediaSettings = Pick<Config, "previews" | "previewMaxSide" | "resourceLinks" | "ffmpegPath"> & {
  allowHosts: readonly string[];
  /** ServerDeps.callerId: whose turn the frame sheet takes. */
  caller: string;
};

const MIME_TYPES: Readonly<Record<string, string>> = {
  mp4: "video/mp4",
  m4v: "video/mp4",
  mov: "video/quicktime",
  webm: "video/webm",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  webp: "image/webp",
  gif: "image/gif",
};

/** Adds the media items for what the handler `returned` to `result`, keeping it under MAX_RESULT_BYTES. */
export async function withMedia(
  result: CallToolResult,
  returned: unknown,
  settings: MediaSettings,
  signal: AbortSignal,
): Promise<CallToolResult> {
  const fields = isObject(returned) ? returned : {};
  const images = (Array.isArray(fields["image_urls"]) ? fields["image_urls"] : []).flatMap(mediaUrl);
  const video = fields["status"] === "completed" ? mediaUrl(fields["video_url"]) : [];
  const stills = mediaUrl(fields["still_url"]).map((url) => ({ url, label: "the video's still" }));
  const extra: ContentBlock[] = [];
  const notes: string[] = [];
  let structuredContent = result.structuredContent;
  if (images.length + stills.length + video.length > 0 && !settings.previews) {
    notes.push("No preview: previews are off (GENERATION_PREVIEWS=off).");
  } else {
    const { previewMaxSide: maxSide, allowHosts, ffmpegPath, caller } = settings;
    const windowEnd = typeof fields["answer_by"] === "number" ? fields["answer_by"] : Infinity;
    const answerBy = Math.min(windowEnd, Date.now() + FRAMES_DEADLINE_MS);
    const options = { maxSide, allowHosts, ffmpegPath, caller, answerBy, signal };
    const [completed] = video;
    const sources: PreviewSource[] = [
      ...images.map((url, index) => ({ url, label: images.length > 1 ? `image ${index + 1}` : "the image" })),
      // A completed video's still goes with its frame sheet (sheetOrStill).
      ...(completed === undefined ? stills : []),
    ];
    const previews = await makePreviews(sources, options);
    const shown =
      completed === undefined ? { content: [], notes: [] } : await sheetOrStill(completed, stills, options);
    extra.push(...previews.images, ...shown.content);
    notes.push(...previews.notes, ...shown.notes);
    if (structuredContent && shown.frames) structuredContent = { ...structuredContent, frames: shown.frames };
  }
  if (settings.resourceLinks) {
    const imageId = findImageId(fields["result"]) ?? "result";
    extra.push(
      ...video.map((url) => link("video", url, `video-${safeId(fields["video_id"]) ?? "result"}`)),
      ...images.map((url, index) =>
        link("image", url, `image-${imageId}${images.length > 1 ? `-${index + 1}` : ""}`),
      ),
    );
  }
  const content = [...result.content, ...extra];
  return fitResult(
    withNotes({ ...result, content, ...(structuredContent !== undefined && { structuredContent }) }, notes),
  );
}

/**
 * One image per video: the sheet of its frames, else a preview of its still, started when the sheet fails or
 * when only the still's own 10 s (or half) are left, so the call waits the sheet's time at most.
 */
async function sheetOrStill(
  url: string,
  stills: PreviewSource[],
  options: SheetOptions & { answerBy: number },
): Promise<{ content: ContentBlock[]; notes: string[]; frames?: FramesInfo }> {
  const sheetCame = new AbortController();
  const signal = AbortSignal.any([options.signal, sheetCame.signal]);
  const sheet = contactSheet(url, options).catch(() => ({
    note: "No frame preview: the call was cancelled or the server is stopping.",
  }));
  const { answerBy: deadline } = options;
  const left = deadline - Date.now();
  const lastStart = delay(Math.max(left - PREVIEW_DEADLINE_MS, left / 2), undefined, { signal, ref: false });
  const still = Promise.race([sheet, lastStart.catch(() => undefined)]).then((early) =>
    makePreviews(early !== undefined && "image" in early ? [] : stills, { ...options, signal, deadline }),
  );
  const made = await sheet;
  if (!("image" in made)) {
    const previews = await still;
    return { content: previews.images, notes: [...previews.notes, made.note] };
  }
  sheetCame.abort();
  return { content: [{ type: "text", text: made.text }, made.image], notes: [], frames: made.frames };
}

/** A link to finished media, named from the task id with the URL's extension when it names its kind. */
function link(kind: "video" | "image", url: string, name: string): ResourceLink {
  const extension = /\.([a-z0-9]{2,4})$/i.exec(new URL(url).pathname)?.[1]?.toLowerCase() ?? "";
  const mimeType = MIME_TYPES[extension]?.startsWith(`${kind}/`) ? MIME_TYPES[extension] : undefined;
  return {
    type: "resource_link",
    uri: url,
    name: `${sanitizeBaseName(name)}${mimeType === undefined ? "" : `.${extension}`}`,
    title: kind === "video" ? "Generated video" : "Generated image",
    ...(mimeType !== undefined && { mimeType }),
  };
}

// The same rule the service's answers were read with: anything else is no media.
function mediaUrl(value: unknown): string[] {
  const url = safeUrl(value);
  return url === undefined ? [] : [url];
}

/** Notes go out as text and in `structuredContent.notes`: some clients give the model only the latter. */
function withNotes(result: CallToolResult, notes: string[]): CallToolResult {
  if (notes.length === 0) return result;
  const structured = result.structuredContent as Record<string, unknown> | undefined;
  const earlier = Array.isArray(structured?.["notes"]) ? (structured["notes"] as unknown[]) : [];
  return {
    ...result,
    content: [...result.content, { type: "text", text: notes.join("\n") }],
    ...(structured !== undefined && { structuredContent: { ...structured, notes: [...earlier, ...notes] } }),
  };
}

/** Drops previews, last first, while the serialized result is above the cap, and says so. */
function fitResult(result: CallToolResult): CallToolResult {
  let content = result.content;
  if (!content.some((item) => item.type === "image")) return result;
  while (Buffer.byteLength(JSON.stringify({ ...result, content })) > MAX_RESULT_BYTES) {
    const last = content.findLastIndex((item) => item.type === "image");
    if (last < 0) break;
    content = content.filter((_, index) => index !== last);
  }
  const dropped = result.content.length - content.length;
  if (dropped === 0) return result;
  return withNotes({ ...result, content }, [`${dropped} preview(s) left out to keep the result under 1 MB.`]);
}
