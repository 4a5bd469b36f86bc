/**
 * The content items a successful tool result gets beside its text: previews of finished images and video
 * stills (MCP `image`), notes on previews that could not be made, and `resource_link`s to finished media.
 * Every result goes through here (plain calls, MCP task results, HTTP), from `toolResult` in server.ts.
 */
import type { CallToolResult, ContentBlock } from "@modelcontextprotocol/server";
import { redact } from "../redact.js";
import { resultMedia } from "./finished.js";
import { mediaLinks } from "./links.js";
import { makePreviews, type PreviewOptions, type PreviewSource } from "./previews.js";

/** Claude Desktop refuses a tool result above 1 MB; the previews' budget keeps far below: a backstop. */
export const MAX_RESULT_BYTES = 1_000_000;

export interface MediaSettings {
  previews: boolean;
  previewMaxSide: number;
  resourceLinks: boolean;
  allowHosts: readonly string[];
  /** Replaces the lazy import of sharp (tests). */
  loadSharp?: PreviewOptions["loadSharp"];
}

/**
 * Adds the media items for what the handler returned (`returned`, before the output schema stripped
 * extras such as `still_url`) to `result`, keeping the whole result under MAX_RESULT_BYTES.
 */
export async function withMedia(
  result: CallToolResult,
  returned: unknown,
  settings: MediaSettings,
  signal: AbortSignal,
): Promise<CallToolResult> {
  const { media, stills } = resultMedia(returned);
  const sources: PreviewSource[] = [
    ...media
      .filter((item) => item.kind === "image")
      .map((item, index, images) => ({
        url: item.url,
        label: images.length > 1 ? `image ${index + 1}` : "the image",
      })),
    ...stills.map((url) => ({ url, label: "the video's still" })),
  ];
  const extra: ContentBlock[] = [];
  const notes: string[] = [];
  if (sources.length > 0 && !settings.previews) {
    notes.push("No preview: previews are off (GENERATION_PREVIEWS=off).");
  } else if (sources.length > 0) {
    const previews = await makePreviews(sources, {
      maxSide: settings.previewMaxSide,
      allowHosts: settings.allowHosts,
      signal,
      ...(settings.loadSharp !== undefined && { loadSharp: settings.loadSharp }),
    });
    extra.push(...previews.images);
    notes.push(...previews.notes.map((note) => redact(note)));
  }
  if (settings.resourceLinks) {
    extra.push(...mediaLinks(media).map((link) => ({ ...link, uri: redact(link.uri) })));
  }
  return fitResult(withNotes({ ...result, content: [...result.content, ...extra] }, notes));
}

/**
 * Notes about the media (no preview, and why) go out as text and in `structuredContent.notes`: some clients
 * give the model only the structured part.
 */
function withNotes(result: CallToolResult, notes: string[]): CallToolResult {
  if (notes.length === 0) return result;
  const structured = result.structuredContent as Record<string, unknown> | undefined;
  const earlier = Array.isArray(structured?.["notes"]) ? (structured["notes"] as unknown[]) : [];
  return {
    ...result,
    content: [...result.content, text(notes.join("\n"))],
    ...(structured !== undefined && { structuredContent: { ...structured, notes: [...earlier, ...notes] } }),
  };
}

/** Drops previews, last first, while the serialized result is above the cap, and says so. */
function fitResult(result: CallToolResult): CallToolResult {
  let content = result.content;
  let dropped = 0;
  while (byteLength({ ...result, content }) > MAX_RESULT_BYTES) {
    const last = content.findLastIndex((item) => item.type === "image");
    if (last < 0) break;
    content = content.filter((_, index) => index !== last);
    dropped += 1;
  }
  if (dropped === 0) return result;
  return withNotes({ ...result, content }, [`${dropped} preview(s) left out to keep the result under 1 MB.`]);
}

function byteLength(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}

function text(value: string): ContentBlock {
  return { type: "text", text: value };
}
