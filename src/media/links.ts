/**
 * MCP `resource_link` content items for finished media: the media URL itself, so a client that understands
 * links can offer it (open, attach, download) without the model copying it out of the text.
 */
import type { ResourceLink } from "@modelcontextprotocol/server";
import type { FinishedMedia } from "./finished.js";

export function mediaLinks(media: readonly FinishedMedia[]): ResourceLink[] {
  return media.map((item) => ({
    type: "resource_link",
    uri: item.url,
    name: item.name,
    title: item.kind === "video" ? "Generated video" : "Generated image",
    ...(item.mimeType !== undefined && { mimeType: item.mimeType }),
  }));
}
