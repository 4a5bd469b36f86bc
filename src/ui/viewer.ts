/**
 * The MCP Apps viewer: one `ui://` HTML resource the tools name in `_meta.ui.resourceUri`; hosts without MCP
 * Apps never read it. From ext-apps only its server entry: its root would bring the SDK client and zod.
 */
import type { McpUiResourceMeta, McpUiToolMeta } from "@modelcontextprotocol/ext-apps";
import { RESOURCE_MIME_TYPE, RESOURCE_URI_META_KEY } from "@modelcontextprotocol/ext-apps/server";
import type { ReadResourceResult, Resource } from "@modelcontextprotocol/server";

export const VIEWER_URI = "ui://generation-mcp/viewer.html";

/** The page built by scripts/viewer.mjs, inlined by scripts/bundle.mjs; unbundled runs have none. */
declare const __GENERATION_MCP_VIEWER_HTML__: string | undefined;

/** The tool's `_meta` as ext-apps' registerAppTool writes it: the current key and the older flat key. */
export function viewerToolMeta(): { ui: McpUiToolMeta; [RESOURCE_URI_META_KEY]: string } {
  return { ui: { resourceUri: VIEWER_URI }, [RESOURCE_URI_META_KEY]: VIEWER_URI };
}

/** The page loads media from the service's origin only and connects nowhere: the host makes it the CSP. */
function resourceMeta(mediaOrigin: string | undefined): { ui: McpUiResourceMeta } {
  const resourceDomains = mediaOrigin === undefined ? [] : [mediaOrigin];
  return { ui: { csp: { resourceDomains, connectDomains: [] }, prefersBorder: true } };
}

export function listViewerResources(mediaOrigin: string | undefined): Resource[] {
  return [
    {
      uri: VIEWER_URI,
      name: "viewer",
      title: "Video & image viewer",
      description: "Shows a finished video, generated images, or a task's status inline (MCP Apps).",
      mimeType: RESOURCE_MIME_TYPE,
      _meta: resourceMeta(mediaOrigin),
    },
  ];
}

/** The viewer's contents, or undefined when `uri` is not the viewer's. Throws in an unbundled run. */
export function readViewerResource(uri: string, mediaOrigin?: string): ReadResourceResult | undefined {
  if (uri !== VIEWER_URI) return undefined;
  if (typeof __GENERATION_MCP_VIEWER_HTML__ !== "string") {
    throw new Error("The viewer page is built into the bundle only: run `npm run build`; use dist/bundle.");
  }
  const text = __GENERATION_MCP_VIEWER_HTML__;
  return { contents: [{ uri, mimeType: RESOURCE_MIME_TYPE, text, _meta: resourceMeta(mediaOrigin) }] };
}
