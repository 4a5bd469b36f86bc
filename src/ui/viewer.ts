/**
 * The MCP Apps viewer as the server offers it: one `ui://` HTML resource that generate_video, get_status and
 * generate_image name in their `_meta.ui.resourceUri`. Hosts with MCP Apps render it beside the tool call;
 * hosts without it ignore the `_meta` and never read the resource, so they see no difference.
 */
// The ext-apps 2.x server entry is two string constants and two small helpers, with no import of its own
// (esbuild inlines a few hundred bytes); the root entry would bring the App class's SDK client and zod.
import { RESOURCE_MIME_TYPE, RESOURCE_URI_META_KEY } from "@modelcontextprotocol/ext-apps/server";
import type { McpUiResourceMeta, McpUiToolMeta } from "@modelcontextprotocol/ext-apps";
import type { ReadResourceResult, Resource } from "@modelcontextprotocol/server";

/** The tool's `_meta` as ext-apps 2.x's registerAppTool writes it: the current key and the older flat key. */
type ToolMeta = {
  ui: McpUiToolMeta & { resourceUri: string };
  [RESOURCE_URI_META_KEY]: string;
};
type ResourceMeta = { ui: McpUiResourceMeta };

export const VIEWER_URI = "ui://generation-mcp/viewer.html";
/** `text/html;profile=mcp-app` */
export const VIEWER_MIME_TYPE = RESOURCE_MIME_TYPE;

/**
 * The page built by scripts/viewer.mjs, inlined by the bundler (scripts/bundle.mjs). Runs from the tsc
 * output or the sources (tests in-process) have no page; they answer resources/read with an error.
 */
declare const __GENERATION_MCP_VIEWER_HTML__: string | undefined;

/** The tool's `_meta`: the current key and the older flat key the SDK's own helper also writes. */
export function viewerToolMeta(): ToolMeta {
  return { ui: { resourceUri: VIEWER_URI }, [RESOURCE_URI_META_KEY]: VIEWER_URI };
}

/**
 * The page may load media from `mediaOrigin` only (the configured service's origin, where the service
 * serves its media) and connects nowhere: the host turns this into the iframe's Content-Security-Policy.
 */
function resourceMeta(mediaOrigin: string | undefined): ResourceMeta {
  return {
    ui: {
      csp: { resourceDomains: mediaOrigin === undefined ? [] : [mediaOrigin], connectDomains: [] },
      prefersBorder: true,
    },
  };
}

export function listViewerResources(mediaOrigin: string | undefined): Resource[] {
  return [
    {
      uri: VIEWER_URI,
      name: "viewer",
      title: "Video & image viewer",
      description: "Shows a finished video, generated images, or a task's status inline (MCP Apps).",
      mimeType: VIEWER_MIME_TYPE,
      _meta: resourceMeta(mediaOrigin),
    },
  ];
}

/** The viewer's contents, or undefined when `uri` is not the viewer's. Throws in an unbundled run. */
export function readViewerResource(
  uri: string,
  mediaOrigin: string | undefined,
): ReadResourceResult | undefined {
  if (uri !== VIEWER_URI) return undefined;
  if (typeof __GENERATION_MCP_VIEWER_HTML__ !== "string") {
    throw new Error(
      "The viewer page is built into the bundle only: run `npm run build` and use dist/bundle.",
    );
  }
  return {
    contents: [
      {
        uri: VIEWER_URI,
        mimeType: VIEWER_MIME_TYPE,
        text: __GENERATION_MCP_VIEWER_HTML__,
        _meta: resourceMeta(mediaOrigin),
      },
    ],
  };
}
