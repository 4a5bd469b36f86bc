/**
 * A minimal MCP Apps host for the browser test, built on the SDK's own host side (AppBridge from
 * @modelcontextprotocol/ext-apps 2.x): it mounts the viewer in a sandboxed iframe (scripts only, so an
 * opaque origin), answers its `ui/initialize`, hands it a tool call's input and result, follows its size
 * changes, and forwards its `tools/call` requests to the test's server (POST /call?era=…), as a host would
 * forward them to the MCP server over its own connection, in the protocol era that connection speaks.
 * Bundled by the test with esbuild and served on 127.0.0.1.
 */
import type { CallToolResult } from "@modelcontextprotocol/client";
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

export interface MountedViewer {
  /** Heights the viewer asked for (ui/notifications/size-changed), in order. */
  heights: number[];
  /** The tools/call requests the viewer sent through the host. */
  calls: string[];
}

declare global {
  interface Window {
    /** Mounts the viewer page the server gave in `era`, and hands it a result obtained in that era. */
    mountViewer(
      name: string,
      era: string,
      input: Record<string, unknown>,
      result: CallToolResult,
    ): Promise<void>;
    viewers: Record<string, MountedViewer>;
  }
}

window.viewers = {};

window.mountViewer = async (name, era, input, result) => {
  const iframe = document.createElement("iframe");
  iframe.name = name;
  iframe.sandbox.add("allow-scripts");
  document.body.append(iframe);
  const contentWindow = iframe.contentWindow as Window;
  const mounted: MountedViewer = { heights: [], calls: [] };
  window.viewers[name] = mounted;

  const bridge = new AppBridge(null, { name: "test-host", version: "1.0.0" }, { serverTools: {} });
  const initialized = new Promise<void>((resolve) => {
    bridge.oninitialized = () => resolve();
  });
  bridge.onsizechange = ({ height }) => {
    if (height === undefined) return;
    mounted.heights.push(height);
    iframe.style.height = `${height}px`;
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
  iframe.src = `/viewer.html?era=${encodeURIComponent(era)}`;
  await initialized;
  await bridge.sendToolInput({ arguments: input });
  await bridge.sendToolResult(result);
};
