/**
 * The MCP Apps viewer's script (scripts/viewer.mjs): the View side of SEP-1865 over postMessage, the subset
 * it needs instead of ext-apps' `App` (with the SDK client and zod, ~670 KB against a few); typed by the SDK.
 */
import type {
  LATEST_PROTOCOL_VERSION,
  McpUiHostContext,
  McpUiHostContextChangedNotification,
  McpUiInitializedNotification,
  McpUiInitializeRequest,
  McpUiInitializeResult,
  McpUiOpenLinkRequest,
  McpUiOpenLinkResult,
  McpUiResourceTeardownRequest,
  McpUiSizeChangedNotification,
  McpUiToolCancelledNotification,
  McpUiToolInputNotification,
  McpUiToolResultNotification,
} from "@modelcontextprotocol/ext-apps";
import type { CallToolRequest, CallToolResult, PingRequest } from "@modelcontextprotocol/client";

type Json = Record<string, unknown>;
/** What the viewer asks of the host, and the answer each gets. */
type Asked = McpUiInitializeRequest | McpUiOpenLinkRequest | CallToolRequest;
type AnswerTo<M extends Asked["method"]> = M extends McpUiInitializeRequest["method"]
  ? McpUiInitializeResult
  : M extends McpUiOpenLinkRequest["method"]
    ? McpUiOpenLinkResult
    : CallToolResult;
/** What the viewer tells the host. */
type Told = McpUiSizeChangedNotification | McpUiInitializedNotification;
/** What the viewer handles from the host; anything else is answered "method not found". */
type Heard =
  | McpUiToolInputNotification
  | McpUiToolResultNotification
  | McpUiToolCancelledNotification
  | McpUiHostContextChangedNotification
  | McpUiResourceTeardownRequest
  | PingRequest;

const PROTOCOL_VERSION: typeof LATEST_PROTOCOL_VERSION = "2026-01-26";
/** While a video is processing, the viewer asks get_status through the host this often, for 30 minutes. */
const REFRESH_MS = 5_000;
const REFRESH_LIMIT_MS = 30 * 60_000;
const METHOD_NOT_FOUND = { code: -32601, message: "Method not found" };

const root = document.getElementById("view") as HTMLElement;
const pending = new Map<number, { resolve(result: Json): void; reject(error: Error): void }>();
let nextId = 1;
let canCallTools = false;
/** When this call started, as the viewer knows it: for the elapsed time shown while starting and waiting. */
let startedAt: number | undefined;
let prompt: string | undefined;
let ticker: ReturnType<typeof setInterval> | undefined;
let refresher: ReturnType<typeof setTimeout> | undefined;

const post = (message: Json) => window.parent.postMessage({ jsonrpc: "2.0", ...message }, "*");
const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);

function request<M extends Asked["method"]>(
  method: M,
  params: Extract<Asked, { method: M }>["params"],
): Promise<AnswerTo<M>> {
  const id = nextId++;
  post({ id, method, params });
  return new Promise((resolve, reject) =>
    pending.set(id, { resolve: (result) => resolve(result as AnswerTo<M>), reject }),
  );
}

function notify<M extends Told["method"]>(method: M, params: Extract<Told, { method: M }>["params"]): void {
  post({ method, params });
}

window.addEventListener("message", (event: MessageEvent) => {
  // Only the host that embeds us speaks the protocol; anything else posting here is ignored.
  if (event.source !== window.parent || !isObject(event.data) || event.data["jsonrpc"] !== "2.0") return;
  const { id, method, params, result, error } = event.data;
  if (typeof method !== "string") {
    const waiter = typeof id === "number" ? pending.get(id) : undefined;
    pending.delete(id as number);
    if (isObject(error)) waiter?.reject(new Error(String(error["message"])));
    else waiter?.resolve(isObject(result) ? result : {});
    return;
  }
  // Trusted as the SDK's shapes, as the SDK's own App does once its schema passed; read defensively below.
  const answer = handle({ method, params: isObject(params) ? params : {} } as Heard);
  if (id === undefined) return;
  post(answer === undefined ? { id, error: METHOD_NOT_FOUND } : { id, result: answer });
});

/** One host message; the result for a request, undefined for a method the viewer does not offer. */
function handle(message: Heard): Json | undefined {
  switch (message.method) {
    case "ui/notifications/tool-input": {
      const given = message.params.arguments?.["prompt"];
      prompt = typeof given === "string" ? given : undefined;
      show(elapsed("Starting"));
      return {};
    }
    case "ui/notifications/tool-result":
      showResult(message.params);
      return {};
    case "ui/notifications/tool-cancelled":
      stopTimers();
      show(state("cancelled", message.params.reason ?? "The call was cancelled."));
      return {};
    case "ui/notifications/host-context-changed":
      applyContext(message.params);
      return {};
    case "ui/resource-teardown":
      stopTimers();
      return {};
    case "ping":
      return {};
    default:
      return undefined;
  }
}

function applyContext(context: McpUiHostContext | undefined): void {
  if (context?.theme !== undefined) document.documentElement.style.colorScheme = context.theme;
  for (const [name, value] of Object.entries(context?.styles?.variables ?? {})) {
    if (typeof value === "string") document.documentElement.style.setProperty(name, value);
  }
}

function stopTimers(): void {
  clearInterval(ticker);
  clearTimeout(refresher);
}

function element<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string) {
  const node = document.createElement(tag);
  if (className !== undefined) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** The view's content, with the call's prompt under it once known. */
const show = (...nodes: Node[]) =>
  root.replaceChildren(...nodes, ...(prompt === undefined ? [] : [element("p", "prompt", prompt)]));
/** A paragraph of the parts given, between dots. */
function line(className: string, ...parts: (string | Node | undefined)[]): HTMLElement {
  const node = element("p", className);
  parts
    .filter((part) => part !== undefined)
    .forEach((part, index) => node.append(index > 0 ? " · " : "", part));
  return node;
}
const clock = (seconds: number) =>
  `${Math.floor(seconds / 60)}:${String(Math.floor(seconds) % 60).padStart(2, "0")}`;

/** A line whose time since the call started counts up every second. */
function elapsed(label: string): HTMLElement {
  startedAt ??= Date.now();
  const node = element("p", "status");
  const tick = () =>
    (node.textContent = `${label} · ${clock(Math.max(0, (Date.now() - (startedAt ?? 0)) / 1000))} elapsed`);
  tick();
  clearInterval(ticker);
  ticker = setInterval(tick, 1000);
  return node;
}

function state(kind: "failed" | "cancelled", detail: string, ...more: Node[]): HTMLElement {
  const box = element("div", `state ${kind}`);
  box.append(
    element("p", "title", kind === "failed" ? "Failed" : "Cancelled"),
    element("p", "detail", detail),
    ...more,
  );
  return box;
}

function showResult(result: CallToolResult): void {
  stopTimers();
  const data = result.structuredContent;
  const text = result.content.find((item) => item.type === "text");
  const message = text?.type === "text" ? text.text : "Nothing to show.";
  if (result.isError === true)
    return show(state(message.startsWith("cancelled:") ? "cancelled" : "failed", message));
  if (!isObject(data)) return show(line("note", message));
  const string = (key: string) => (typeof data[key] === "string" ? (data[key] as string) : undefined);
  const [status, videoId, videoUrl] = [string("status"), string("video_id"), string("video_url")];
  const images = Array.isArray(data["image_urls"])
    ? data["image_urls"].filter((url): url is string => typeof url === "string")
    : [];
  if (images.length > 0) return showImages(images, isObject(data["result"]) ? data["result"] : {});
  if (videoUrl !== undefined) return showVideo(videoUrl, videoId, data["frames"], result.content);
  if (status === "failed")
    return show(state("failed", describeError(data["error"]), line("caption", videoId)));
  if (status !== undefined && videoId !== undefined)
    return showProgress(videoId, status, data["elapsed_seconds"]);
  show(line("note", message));
}

function describeError(error: unknown): string {
  if (typeof error === "string") return error;
  if (isObject(error) && typeof error["message"] === "string") return error["message"];
  return "the service gave no reason";
}

/** A link the host opens (`ui/open-link`): a sandboxed frame cannot open one itself. */
function link(url: string, text = url): HTMLAnchorElement {
  const anchor = Object.assign(element("a", undefined, text), { href: url });
  anchor.addEventListener("click", (event) => {
    event.preventDefault();
    request("ui/open-link", { url }).catch(() => undefined);
  });
  return anchor;
}

/** A picture or video at most its natural size, captioned with a link; only the link when it cannot load. */
function media(node: HTMLImageElement | HTMLVideoElement, url: string, facts: () => (string | undefined)[]) {
  const kind = node instanceof HTMLVideoElement ? "video" : "image";
  const figure = element("figure");
  const caption = () => line("caption", ...facts(), link(url, `Open the ${kind}`));
  const failed = () => {
    const note = element(
      "p",
      "note",
      `The ${kind} cannot ${kind === "video" ? "play" : "load"} here. Open it: `,
    );
    figure.replaceChildren(note, line("caption", ...facts()));
    note.append(link(url));
  };
  const loaded = () => figure.lastChild?.replaceWith(caption());
  node.addEventListener("error", failed, { once: true });
  node.addEventListener(kind === "video" ? "loadedmetadata" : "load", loaded, { once: true });
  node.src = url;
  figure.append(node, caption());
  return figure;
}

const sizeOf = (width: unknown, height: unknown) =>
  typeof width === "number" && typeof height === "number" && width > 0 ? `${width}×${height}` : undefined;

function showImages(urls: string[], service: Json): void {
  const gallery = element("div", urls.length > 1 ? "gallery" : undefined);
  urls.forEach((url, index) => {
    const image = Object.assign(element("img"), { alt: `Generated image ${index + 1}` });
    const format = /\.(\w{3,4})(?:[?#]|$)/.exec(url)?.[1]?.toUpperCase();
    const known = urls.length === 1 ? sizeOf(service["width"], service["height"]) : undefined;
    gallery.append(
      media(image, url, () => [sizeOf(image.naturalWidth, image.naturalHeight) ?? known, format]),
    );
  });
  show(gallery);
}

function showVideo(
  url: string,
  videoId: string | undefined,
  frames: unknown,
  content: CallToolResult["content"],
): void {
  const video = Object.assign(element("video"), { controls: true, preload: "metadata", playsInline: true });
  const facts = () => [
    Number.isFinite(video.duration) ? clock(video.duration) : undefined,
    sizeOf(video.videoWidth, video.videoHeight),
    videoId,
  ];
  const parts: Node[] = [media(video, url, facts)];
  // A completed video's frame sheet (media/content.ts): what it shows is in structuredContent.frames.
  const sheet = content.find((item) => item.type === "image");
  if (sheet?.type === "image" && isObject(frames) && Array.isArray(frames["times_s"])) {
    const times = frames["times_s"]
      .map((time) => (typeof time === "number" ? `${time.toFixed(1)} s` : ""))
      .join(", ");
    const image = Object.assign(element("img", "sheet"), {
      alt: "Frames of the video",
      src: `data:${sheet.mimeType};base64,${sheet.data}`,
    });
    const figure = element("figure");
    image.addEventListener("error", () => figure.remove(), { once: true });
    figure.append(image, line("caption", `Frames at ${times}`));
    parts.push(figure);
  }
  show(...parts);
}

function showProgress(videoId: string, status: string, elapsedSeconds: unknown): void {
  const waited = typeof elapsedSeconds === "number" ? elapsedSeconds * 1000 : 0;
  startedAt = Math.min(startedAt ?? Date.now(), Date.now() - waited);
  // A host that does not forward tool calls leaves this view as it is: say how to see the end.
  const later = canCallTools ? undefined : "ask for get_status later to see the video";
  show(elapsed(status.charAt(0).toUpperCase() + status.slice(1)), line("caption", videoId, later));
  scheduleRefresh(videoId);
}

/** Asks get_status through the host (serverTools); a failed ask keeps the status shown and asks again. */
function scheduleRefresh(videoId: string): void {
  if (!canCallTools || Date.now() - (startedAt ?? 0) >= REFRESH_LIMIT_MS) return;
  refresher = setTimeout(() => {
    request("tools/call", { name: "get_status", arguments: { video_id: videoId } })
      .then((result) => (result.isError === true ? scheduleRefresh(videoId) : showResult(result)))
      .catch(() => scheduleRefresh(videoId));
  }, REFRESH_MS);
}

// The host sizes the iframe from these: the viewer fills the width it is given and asks for its height.
let lastHeight = 0;
new ResizeObserver(() => {
  const height = Math.ceil(document.documentElement.getBoundingClientRect().height);
  if (height !== lastHeight) notify("ui/notifications/size-changed", { height: (lastHeight = height) });
}).observe(document.documentElement);

request("ui/initialize", {
  appInfo: { name: "generation-mcp viewer", version: "1" },
  appCapabilities: {},
  protocolVersion: PROTOCOL_VERSION,
})
  .then((result) => {
    canCallTools = result.hostCapabilities?.serverTools !== undefined;
    applyContext(result.hostContext);
    notify("ui/notifications/initialized", {});
  })
  .catch(() => show(element("p", "note", "The host did not accept the viewer.")));
