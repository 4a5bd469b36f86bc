/**
 * The MCP Apps viewer's script: runs inside the host's sandboxed iframe and speaks the View side of the
 * MCP Apps protocol (SEP-1865) over postMessage JSON-RPC: `ui/initialize`, then the host's tool-input and
 * tool-result notifications, and `ui/notifications/size-changed` whenever the content's height changes.
 *
 * Only that small subset is implemented here instead of the SDK's `App` class: bundled for the browser,
 * ext-apps 2.0.4's `App` brings the MCP SDK v2 client's Protocol and zod along, about 670 KB minified
 * (1.7.5's brought about 520 KB), against a few KB for this. The wire protocol is the same in ext-apps 1.x
 * and 2.x, and the same whichever MCP revision (2025-11-25 or 2026-07-28) the host speaks to the server:
 * the host hands the viewer plain tool results either way. Every message the viewer sends or handles is
 * typed by the SDK's own types (@modelcontextprotocol/ext-apps 2.x, type-only imports, erased at build),
 * so a method name or a field the SDK does not know fails the typecheck.
 *
 * Built by scripts/viewer.mjs (esbuild, browser target) and inlined into src/ui/viewer.html.
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
/** While a video is processing, how often the viewer asks get_status through the host (when allowed). */
const REFRESH_MS = 5_000;
/** Refreshing stops after this long; the model can still call get_status. */
const REFRESH_LIMIT_MS = 30 * 60_000;

const root = document.getElementById("view") as HTMLElement;
let nextId = 1;
const pending = new Map<number, { resolve(result: Json): void; reject(error: Error): void }>();
let canCallTools = false;
/** When this call started, as the viewer knows it: for the elapsed time shown while processing. */
let startedAt: number | undefined;
let ticker: ReturnType<typeof setInterval> | undefined;
let refresher: ReturnType<typeof setTimeout> | undefined;

function post(message: Json): void {
  window.parent.postMessage({ jsonrpc: "2.0", ...message }, "*");
}

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

const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);

window.addEventListener("message", (event: MessageEvent) => {
  // Only the host that embeds us speaks the protocol; anything else posting here is ignored.
  if (event.source !== window.parent || !isObject(event.data) || event.data["jsonrpc"] !== "2.0") return;
  const message = event.data;
  const id = message["id"];
  if (typeof message["method"] !== "string") {
    const waiter = typeof id === "number" ? pending.get(id) : undefined;
    if (waiter === undefined) return;
    pending.delete(id as number);
    if (isObject(message["error"])) waiter.reject(new Error(String(message["error"]["message"])));
    else waiter.resolve(isObject(message["result"]) ? message["result"] : {});
    return;
  }
  const params = isObject(message["params"]) ? message["params"] : {};
  // Trusted as the SDK's shapes, like the SDK's own App does once its schema passed; fields are still
  // read defensively below.
  const answer = handle({ method: message["method"], params } as Heard);
  if (id === undefined) return;
  post(
    answer === undefined
      ? { id, error: { code: -32601, message: "Method not found" } }
      : { id, result: answer },
  );
});

/** One host message; the result for a request, undefined for a method the viewer does not offer. */
function handle(message: Heard): Json | undefined {
  switch (message.method) {
    case "ui/notifications/tool-input":
      showInput(message.params);
      return {};
    case "ui/notifications/tool-result":
      showResult(message.params);
      return {};
    case "ui/notifications/tool-cancelled":
      stopTimers();
      showNote("The call was cancelled.");
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
  if (context?.theme !== undefined) document.documentElement.dataset["theme"] = context.theme;
  for (const [name, value] of Object.entries(context?.styles?.variables ?? {})) {
    if (typeof value === "string") document.documentElement.style.setProperty(name, value);
  }
}

function stopTimers(): void {
  clearInterval(ticker);
  clearTimeout(refresher);
  ticker = undefined;
  refresher = undefined;
}

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string,
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className !== undefined) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function show(...nodes: Node[]): void {
  root.replaceChildren(...nodes);
}

function showNote(text: string): void {
  show(element("p", "note", text));
}

function showInput(params: McpUiToolInputNotification["params"]): void {
  startedAt ??= Date.now();
  const prompt = params.arguments?.["prompt"];
  if (typeof prompt === "string") show(element("p", "note", "Starting…"), element("p", "prompt", prompt));
}

function showResult(result: CallToolResult): void {
  stopTimers();
  const data = isObject(result.structuredContent) ? result.structuredContent : {};
  if (result.isError === true || !isObject(result.structuredContent)) return showNote(firstText(result));
  if (Array.isArray(data["image_urls"])) return showGallery(data["image_urls"], result);
  const status = typeof data["status"] === "string" ? data["status"] : undefined;
  const videoUrl = typeof data["video_url"] === "string" ? data["video_url"] : undefined;
  if (videoUrl !== undefined) return showVideo(videoUrl, data);
  if (status === "failed") return show(element("p", "error", `Failed: ${describeError(data["error"])}`));
  if (status !== undefined && typeof data["video_id"] === "string")
    return showProgress(data["video_id"], status, data);
  showNote(firstText(result));
}

function firstText(result: CallToolResult): string {
  const text = result.content.find((item) => item.type === "text");
  return text?.type === "text" ? text.text : "Nothing to show.";
}

function describeError(error: unknown): string {
  if (typeof error === "string") return error;
  if (isObject(error) && typeof error["message"] === "string") return error["message"];
  return "the service gave no reason";
}

function showVideo(url: string, data: Json): void {
  const video = element("video");
  video.controls = true;
  video.preload = "metadata";
  video.playsInline = true;
  video.addEventListener("error", () => showUnplayable(url), { once: true });
  video.src = url;
  show(video, caption(data));
}

/** The host's policy may block a media origin other than the service's: offer the link instead. */
function showUnplayable(url: string): void {
  const link = element("a", undefined, url);
  link.href = url;
  link.addEventListener("click", (event) => {
    event.preventDefault();
    request("ui/open-link", { url }).catch(() => undefined);
  });
  const note = element("p", "note", "The video cannot play here. Open it: ");
  note.append(link);
  show(note);
}

function caption(data: Json): HTMLElement {
  const parts = [data["video_id"], data["status"]].filter((part) => typeof part === "string");
  return element("p", "caption", parts.join(" · "));
}

function showGallery(urls: unknown[], result: CallToolResult): void {
  const images = urls.filter((url): url is string => typeof url === "string");
  if (images.length === 0) return showNote(firstText(result));
  const gallery = element("div", "gallery");
  images.forEach((url, index) => {
    const image = element("img");
    image.alt = `Generated image ${index + 1}`;
    image.src = url;
    gallery.append(image);
  });
  show(gallery);
}

function showProgress(videoId: string, status: string, data: Json): void {
  const waited = typeof data["elapsed_seconds"] === "number" ? data["elapsed_seconds"] * 1000 : 0;
  startedAt = Math.min(startedAt ?? Date.now(), Date.now() - waited);
  const line = element("p", "status");
  const tick = () => {
    line.textContent = `${status} · ${formatElapsed(Date.now() - (startedAt ?? Date.now()))} elapsed`;
  };
  tick();
  show(line, element("p", "caption", videoId));
  ticker = setInterval(tick, 1000);
  scheduleRefresh(videoId);
}

function scheduleRefresh(videoId: string): void {
  if (!canCallTools || Date.now() - (startedAt ?? 0) >= REFRESH_LIMIT_MS) return;
  refresher = setTimeout(() => refresh(videoId), REFRESH_MS);
}

/**
 * Asks the server for the task's status through the host, which forwards the call (serverTools). A failed
 * ask (a rate limit, a network blip) leaves the status on screen and asks again later.
 */
function refresh(videoId: string): void {
  request("tools/call", { name: "get_status", arguments: { video_id: videoId } })
    .then((result) => {
      if (result.isError === true) scheduleRefresh(videoId);
      else showResult(result);
    })
    .catch(() => scheduleRefresh(videoId));
}

function formatElapsed(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")}`;
}

// The host sizes the iframe from these: the viewer fills the width it is given and asks for its height.
let lastHeight = 0;
new ResizeObserver(() => {
  const height = Math.ceil(document.documentElement.getBoundingClientRect().height);
  if (height === lastHeight) return;
  lastHeight = height;
  notify("ui/notifications/size-changed", { height });
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
  .catch(() => showNote("The host did not accept the viewer."));
