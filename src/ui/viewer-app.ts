/**
 * The MCP Apps viewer's script (built by scripts/viewer.mjs into src/ui/viewer.html): the View side of MCP
 * Apps (SEP-1865) over postMessage JSON-RPC, the subset it needs rather than ext-apps' `App` class (bundled
 * for the browser, the SDK client and zod: about 670 KB against a few KB). The same wire in both MCP revisions;
 * every message is typed by the SDK's own types, so a method or field it does not know fails the typecheck.
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
/** When this call started, as the viewer knows it: for the elapsed time shown while processing. */
let startedAt: number | undefined;
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
  let prompt: unknown;
  switch (message.method) {
    case "ui/notifications/tool-input":
      startedAt ??= Date.now();
      prompt = message.params.arguments?.["prompt"];
      if (typeof prompt === "string") show(element("p", "note", "Starting…"), element("p", "prompt", prompt));
      return {};
    case "ui/notifications/tool-result":
      showResult(message.params);
      return {};
    case "ui/notifications/tool-cancelled":
      stopTimers();
      show(element("p", "note", "The call was cancelled."));
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

const show = (...nodes: Node[]) => root.replaceChildren(...nodes);

function showResult(result: CallToolResult): void {
  stopTimers();
  const data = result.structuredContent;
  const text = result.content.find((item) => item.type === "text");
  const fallback = element("p", "note", text?.type === "text" ? text.text : "Nothing to show.");
  if (result.isError === true || !isObject(data)) return show(fallback);
  const string = (key: string) => (typeof data[key] === "string" ? (data[key] as string) : undefined);
  const [status, videoId, videoUrl] = [string("status"), string("video_id"), string("video_url")];
  if (Array.isArray(data["image_urls"])) {
    const images = data["image_urls"].filter((url): url is string => typeof url === "string");
    const gallery = element("div", "gallery");
    images.forEach((url, index) =>
      gallery.append(Object.assign(element("img"), { alt: `Generated image ${index + 1}`, src: url })),
    );
    return show(images.length > 0 ? gallery : fallback);
  }
  if (videoUrl !== undefined) return showVideo(videoUrl, [videoId, status]);
  if (status === "failed") return show(element("p", "error", `Failed: ${describeError(data["error"])}`));
  if (status !== undefined && videoId !== undefined)
    return showProgress(videoId, status, data["elapsed_seconds"]);
  show(fallback);
}

function describeError(error: unknown): string {
  if (typeof error === "string") return error;
  if (isObject(error) && typeof error["message"] === "string") return error["message"];
  return "the service gave no reason";
}

function showVideo(url: string, caption: (string | undefined)[]): void {
  const video = Object.assign(element("video"), { controls: true, preload: "metadata", playsInline: true });
  video.addEventListener("error", () => showLink(url), { once: true });
  video.src = url;
  show(video, element("p", "caption", caption.filter((part) => part !== undefined).join(" · ")));
}

/** The host's policy may block a media origin other than the service's: offer the link instead. */
function showLink(url: string): void {
  const link = Object.assign(element("a", undefined, url), { href: url });
  link.addEventListener("click", (event) => {
    event.preventDefault();
    request("ui/open-link", { url }).catch(() => undefined);
  });
  const note = element("p", "note", "The video cannot play here. Open it: ");
  note.append(link);
  show(note);
}

function showProgress(videoId: string, status: string, elapsedSeconds: unknown): void {
  const waited = typeof elapsedSeconds === "number" ? elapsedSeconds * 1000 : 0;
  startedAt = Math.min(startedAt ?? Date.now(), Date.now() - waited);
  const line = element("p", "status");
  const tick = () => {
    const seconds = Math.max(0, Math.floor((Date.now() - (startedAt ?? Date.now())) / 1000));
    line.textContent = `${status} · ${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")} elapsed`;
  };
  tick();
  show(line, element("p", "caption", videoId));
  ticker = setInterval(tick, 1000);
  scheduleRefresh(videoId);
}

/**
 * Asks the server for the task's status through the host, which forwards the call (serverTools). A failed
 * ask (a rate limit, a network blip) leaves the status on screen and asks again later.
 */
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
