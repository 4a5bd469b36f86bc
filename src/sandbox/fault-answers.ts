/** What the fault knobs answer in place of the service (a proxy, a broken upstream): never stored. */
import { STATUS_CODES } from "node:http";
import { Readable } from "node:stream";
import { DEFAULT_IMAGE_MODEL, DEFAULT_VIDEO_MODEL } from "../models.js";
import { imageData, startedVideoData, uploadData } from "./answers.js";
import type { Account } from "./auth.js";
import type { SandboxContext } from "./context.js";
import type { Plans, SandboxRoute } from "./faults.js";
import { JSON_TYPE, dataResponse, errorResponse, type SandboxResponse } from "./http.js";
import { imageSize } from "./media/images.js";

/** An nginx error page, as a proxy in front of the service answers; nginx's own title for 413. */
function htmlPage(status: number): SandboxResponse {
  const title = `${status} ${status === 413 ? "Request Entity Too Large" : (STATUS_CODES[status] ?? "Unknown")}`;
  const page = `<html>\r\n<head><title>${title}</title></head>\r\n<body>\r\n<center><h1>${title}</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n`;
  return { status, headers: { "Content-Type": "text/html; charset=utf-8" }, body: Buffer.from(page) };
}

export function malformedResponse({ kind, status, bytes }: Plans["malformed"]): SandboxResponse {
  if (kind === "html") return { ...htmlPage(502), status };
  if (kind === "huge") return hugeResponse(status, bytes);
  const body = { "invalid-json": '{"data":{"video_id":"vid_tr', "no-data": '{"ok":true}', empty: "" }[kind];
  return { status, headers: { "Content-Type": JSON_TYPE }, body: Buffer.from(body) };
}

/** A syntactically valid envelope padded to `bytes`, streamed so its size costs the sandbox no memory. */
function hugeResponse(status: number, bytes: number): SandboxResponse {
  const [head, tail] = ['{"data":{"padding":"', '"},"error":null}'];
  const length = Math.max(bytes, head.length + tail.length);
  const block = Buffer.alloc(64 * 1024, "x");
  function* pieces(): Generator<Buffer | string> {
    yield head;
    for (let left = length - head.length - tail.length; left > 0; left -= block.length)
      yield block.subarray(0, left);
    yield tail;
  }
  const headers = { "Content-Type": JSON_TYPE, "Content-Length": String(length) };
  return { status, headers, body: Readable.from(pieces()) };
}

export function patchedResponse(
  response: SandboxResponse,
  { patch, remove }: Plans["patch"],
): SandboxResponse {
  const data: Record<string, unknown> = { ...(response.data as Record<string, unknown>), ...patch };
  for (const key of remove) delete data[key];
  return { ...response, ...dataResponse(data, response.status) };
}

/** The earlyAnswer fault, as nginx refuses a body; undefined when the route's own handler should answer. */
export function earlyResponse(
  ctx: SandboxContext,
  route: SandboxRoute,
  account: Account | undefined,
  plan: Plans["early"],
  bodyBytes: number,
): SandboxResponse | undefined {
  if (plan.html) return { ...htmlPage(plan.status), bare: true };
  if (plan.status >= 300) {
    const reason = STATUS_CODES[plan.status] ?? "Unknown";
    const message = `${reason}: answered after ${bodyBytes} body bytes without reading the rest (sandbox fault)`;
    return errorResponse(plan.status, plan.code, plan.message ?? message);
  }
  if (!account) return undefined;
  if (route === "upload") {
    // The type of bytes never read cannot be judged: PNG.
    const upload = { id: ctx.newId("upload"), extension: "png", contentType: "image/png", size: bodyBytes };
    return dataResponse(uploadData(ctx, upload), plan.status);
  }
  if (route === "generate") {
    const status = ctx.shapes.inProgressStatuses[0] ?? "processing";
    const video = { id: ctx.newId("video"), status, model: DEFAULT_VIDEO_MODEL };
    return dataResponse(startedVideoData(ctx.shapes, video, account, 0), plan.status);
  }
  if (route !== "generate-image") return undefined;
  const image = {
    id: ctx.newId("image"),
    model: DEFAULT_IMAGE_MODEL,
    format: "png",
    ...imageSize("1k", "1:1"),
  };
  return dataResponse(imageData(ctx, image, account, 0), plan.status);
}
