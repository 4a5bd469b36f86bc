/**
 * The two body faults, earlyAnswer and resetAfterBytes: read a little of a request body, then cut the
 * request off with an answer or a reset. They model a proxy in front of the service (nginx refusing a body
 * over its client_max_body_size with 413 at once), so whatever they answer is never stored or charged.
 */
import { STATUS_CODES } from "node:http";
import type { IncomingMessage } from "node:http";
import { DEFAULT_IMAGE_MODEL, DEFAULT_VIDEO_MODEL } from "../models.js";
import { imageData, mediaUrl, startedVideoData, uploadData } from "./answers.js";
import type { Account } from "./auth.js";
import type { SandboxContext } from "./context.js";
import type { EarlyAnswerPlan } from "./faults.js";
import { dataResponse, errorResponse } from "./http.js";
import type { SandboxResponse } from "./http.js";
import { imageSize } from "./media/images.js";
import type { SandboxRoute } from "./types.js";

/**
 * Reads and discards body bytes until at least `bytes` have come (a chunk may carry it past), the body
 * ends or the client goes; then stops reading. Resolves with the number of bytes read.
 */
export function readBodyBytes(req: IncomingMessage, bytes: number): Promise<number> {
  if (bytes <= 0) return Promise.resolve(0);
  return new Promise((resolve) => {
    let read = 0;
    const done = (): void => {
      req.off("data", onData);
      req.off("end", done);
      req.off("close", done);
      req.pause();
      resolve(read);
    };
    const onData = (chunk: Buffer): void => {
      read += chunk.length;
      if (read >= bytes) done();
    };
    req.on("data", onData);
    req.once("end", done);
    req.once("close", done);
  });
}

/**
 * The early answer, or undefined when the route's own handler should answer (a 2xx on a route without a
 * body to cut: its handler reads nothing and stores nothing). The server closes the connection after it
 * without lingering.
 */
export function earlyResponse(
  ctx: SandboxContext,
  route: SandboxRoute,
  account: Account | undefined,
  plan: EarlyAnswerPlan,
  bodyBytes: number,
): SandboxResponse | undefined {
  const reason = STATUS_CODES[plan.status] ?? "Unknown";
  if (plan.html) return { ...htmlPage(plan.status, NGINX_TITLES[plan.status] ?? reason), bare: true };
  if (plan.status >= 300) {
    const message =
      plan.message ??
      `${reason}: answered after ${bodyBytes} body bytes without reading the rest (sandbox fault)`;
    return errorResponse(plan.status, plan.code, message);
  }
  const data = account ? phantomData(ctx, route, account, bodyBytes) : undefined;
  return data === undefined ? undefined : dataResponse(data, plan.status);
}

/** What the route would answer for a request the service never saw whole: ids that were never stored. */
function phantomData(
  ctx: SandboxContext,
  route: SandboxRoute,
  account: Account,
  bodyBytes: number,
): Record<string, unknown> | undefined {
  switch (route) {
    case "upload": {
      const id = ctx.newId("upload");
      // The type cannot be judged from bytes never read; PNG is as good a guess as any.
      return uploadData(ctx.shapes, {
        id,
        url: mediaUrl(ctx, "uploads", id, "png"),
        contentType: "image/png",
        size: bodyBytes,
      });
    }
    case "generate":
      return startedVideoData(ctx.shapes, {
        id: ctx.newId("video"),
        status: ctx.shapes.inProgressStatuses[0] ?? "processing",
        model: DEFAULT_VIDEO_MODEL,
        creditsUsed: 0,
        creditsRemaining: account.credits,
      });
    case "generate-image": {
      const id = ctx.newId("image");
      const { width, height } = imageSize("1k", "1:1");
      return imageData(ctx.shapes, {
        id,
        url: mediaUrl(ctx, "images", id, "png"),
        model: DEFAULT_IMAGE_MODEL,
        format: "png",
        width,
        height,
        creditsUsed: 0,
        creditsRemaining: account.credits,
      });
    }
    default:
      return undefined;
  }
}

/** nginx's own wording where it differs from Node's reason phrases. */
const NGINX_TITLES: Readonly<Record<number, string>> = { 413: "Request Entity Too Large" };

function htmlPage(status: number, reason: string): SandboxResponse {
  const title = `${status} ${reason}`;
  return {
    status,
    headers: { "Content-Type": "text/html; charset=utf-8" },
    body: Buffer.from(
      `<html>\r\n<head><title>${title}</title></head>\r\n<body>\r\n<center><h1>${title}</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n`,
    ),
  };
}
