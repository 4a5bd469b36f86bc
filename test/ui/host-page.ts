/**
 * A minimal MCP Apps host for the browser test, built on the SDK's own host side (AppBridge from
 * @modelcontextprotocol/ext-apps 2.x), after that repository's basic-host example: it mounts the viewer in a
 * sandboxed iframe (scripts only, so an opaque origin) served with the Content-Security-Policy the host
 * derives from the resource (or a stricter one), answers its `ui/initialize` with the host's theme, hands
 * it a tool call's input, then its result or a cancellation, follows its size changes, opens the links it
 * asks for (here: records them), and forwards its `tools/call` requests to the test's server
 * (POST /call?era=…), as a host would forward them to the MCP server over its own connection, in the
 * protocol era that connection speaks. Bundled by the test with esbuild and served on 127.0.0.1.
 */
import type { CallToolResult } from "@modelcontextprotocol/client";
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

export interface MountedViewer {
  /** Heights the viewer asked for (ui/notifications/size-changed), in order. */
  heights: number[];
  /** The tools/call requests the viewer sent through the host. */
  calls: string[];
  /** The links the viewer asked the host to open (ui/open-link). */
  links: string[];
}

/**
 * How the host mounts one viewer. `csp`: "declared" applies the resource's `_meta.ui.csp`; "none" a host
 * that gives the page no resource origin at all; "no-media-src" an older host whose policy has `img-src`
 * for the declared origins but no `media-src`.
 */
export interface MountOptions {
  era: string;
  theme: "light" | "dark";
  csp?: "declared" | "none" | "no-media-src";
  /** The iframe's width in px (default 330). */
  width?: number;
}

declare global {
  interface Window {
    /** Mounts the viewer page the server gave in `options.era`, and hands it `input`, then `result` if given. */
    mountViewer(
      name: string,
      options: MountOptions,
      input: Record<string, unknown>,
      result?: CallToolResult,
    ): Promise<void>;
    /** Hands a mounted viewer its result, or tells it the call was cancelled. */
    finishViewer(name: string, outcome: { result: CallToolResult } | { cancelled: string }): Promise<void>;
    viewers: Record<string, MountedViewer>;
  }
}

window.viewers = {};
const bridges = new Map<string, AppBridge>();

window.mountViewer = async (name, options, input, result) => {
  const { era, theme, csp = "declared", width = 330 } = options;
  const iframe = document.createElement("iframe");
  iframe.name = name;
  iframe.title = name;
  iframe.sandbox.add("allow-scripts");
  iframe.style.width = `${width}px`;
  document.body.append(iframe);
  const contentWindow = iframe.contentWindow as Window;
  const mounted: MountedViewer = { heights: [], calls: [], links: [] };
  window.viewers[name] = mounted;

  const bridge = new AppBridge(
    null,
    { name: "test-host", version: "1.0.0" },
    { serverTools: {}, openLinks: {} },
    { hostContext: { theme, displayMode: "inline" } },
  );
  bridges.set(name, bridge);
  const initialized = new Promise<void>((resolve) => {
    bridge.oninitialized = () => resolve();
  });
  bridge.onsizechange = ({ height }) => {
    if (height === undefined) return;
    mounted.heights.push(height);
    iframe.style.height = `${height}px`;
  };
  bridge.onopenlink = async ({ url }) => {
    mounted.links.push(url);
    return {};
  };
  bridge.oncalltool = async (params) => {
    mounted.calls.push(params.name);
    const answer = await fetch(`/call?era=${encodeURIComponent(era)}`, {
      method: "POST",
      body: JSON.stringify(params),
    });
    return (await answer.json()) as CallToolResult;
  };
  await bridge.connect(new PostMessageTransport(contentWindow, contentWindow));
  iframe.src = `/viewer.html?era=${encodeURIComponent(era)}&csp=${csp}`;
  await initialized;
  await bridge.sendToolInput({ arguments: input });
  if (result !== undefined) await bridge.sendToolResult(result);
};

window.finishViewer = async (name, outcome) => {
  const bridge = bridges.get(name);
  if (bridge === undefined) throw new Error(`no viewer named ${name}`);
  if ("result" in outcome) await bridge.sendToolResult(outcome.result);
  else await bridge.sendToolCancelled({ reason: outcome.cancelled });
};
