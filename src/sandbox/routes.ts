/**
 * The six endpoints of spec section 4. Where the spec says "not shown", these are the sandbox's answers
 * (the defaults of SandboxShapes; tests may switch the open ones at runtime through `handle.shapes`).
 * Every answer is the envelope `{ data, error }`; errors are `{ data: null, error: { message, code } }`.
 *
 * POST /generate -> 200
 *   `{ video_id, status, model, credits_used, credits_remaining }`; status is the first in-progress status
 *   ("queued"). Credits are charged here, when the task starts.
 * GET /videos/:video_id -> 200 the task record:
 *   `{ video_id, status, model, prompt, generation_type, aspect_ratio, duration, resolution?, image_url?,
 *      credits_used, created_at, updated_at, video_url? (completed), error? (failed), credits_refunded? }`
 *   Times are ISO 8601. Status walks "queued" -> "processing" -> "completed" | "failed". A failed task has
 *   `error: { code: "generation_failed", message }` and its credits are refunded in full (our choice: the
 *   user should not pay for a video they did not get; `credits_refunded` says so). While the provider is
 *   down, a task not known to be final answers 502 upstream_error. An unknown id, or one of another key,
 *   answers 404 not_found (or 400 validation_error with `notFoundStatus: 400`).
 * GET /videos?page&limit -> 200 `{ items, page, limit, total, total_pages }`, items as above, newest first,
 *   only the caller's tasks; total_pages is 0 when there are none. `listShape: "array"` answers the bare
 *   items array instead.
 * POST /generate-image -> 200, synchronous:
 *   `{ image_id, status: "completed", image_urls: [url], model, output_format, width, height,
 *      credits_used, credits_remaining }`. The image is a real file of the requested format whose long side
 *   is 1024/2048/4096 px for 1k/2k/4k (default 1k) and whose short side follows aspect_ratio. With
 *   `imageShape: "task"` the answer is `{ image_id, status: "processing" }` without URLs.
 * POST /upload (multipart, file field "image") -> 200 `{ url, content_type, size }`; the type is judged
 *   from the file's bytes, `url` is renamed by `uploadUrlField`.
 * GET /credits -> 200 `{ credits, paid_access, subscription_status: "active" | "none", plan }`; plan is
 *   the subscription name or null.
 *
 * Nested forms (`shapes.nesting: "nested"`): the same facts, nested the way another service might, so
 * the client's "find it at any depth" code meets every endpoint. Errors keep the normal envelope.
 *   POST /generate: `{ task: { id: <video_id>, state: <status>, model },
 *      billing: { credits_used, credits_remaining } }`
 *   GET /videos/:video_id: `{ task: { id, state, created_at, updated_at },
 *      request: { prompt, model, generation_type, aspect_ratio, duration, resolution?,
 *                 input?: { image_url } },
 *      result?: { cover: { url: <poster> }, output: [{ type: "video/mp4", url: <video_url> }] } (completed),
 *      failure?: { code: "generation_failed", message } (failed),
 *      credits: { used, refunded? (failed) } }`
 *   `state`, not `status`; `id`, not `video_id`. The poster, a 320x180 PNG at
 *   /media/posters/<video_id>.png, comes before the video in key order on purpose: a client must not take
 *   it for the video.
 *   GET /videos: `{ results: [<records as above>], meta: { pagination: { page, limit, total,
 *      total_pages } } }`; with `listShape: "array"` the bare array of nested records.
 *   POST /generate-image: `{ job: { id, state: "completed" },
 *      result: { output: [{ url, width, height, format }] }, billing: { credits_used, credits_remaining } }`;
 *      with `imageShape: "task"`: `{ job: { id, state: "processing" } }`.
 *   POST /upload: `{ asset: { id, content_type, size, links: { public: <url> } } }`, exactly
 *      (`uploadUrlField` renames the flat form's field only).
 *   GET /credits: `{ account: { balance: { credits }, access: { paid: <bool> },
 *      subscription: { status: "active" | "none", plan } } }`.
 *
 * Validation choices: prompt 1..MAX_PROMPT_LENGTH (2000) characters; duration a JSON number in
 * (0, MAX_DURATION_S = 20] seconds, fractions allowed and priced pro rata; resolution only for
 * vendor-video-2-0 (default 720p); image_url and images[] must be http(s) URLs (at most 10 images);
 * a text_to_video request with an image_url is accepted and the image ignored. Wrong JSON types, null
 * included, are refused; unknown fields are ignored. JSON bodies are capped at 1 MiB.
 *
 * Answers outside spec section 7's table: an unknown route is 404 `not_found`, a wrong method 405
 * `method_not_allowed` with an Allow header. Oversized bodies (JSON over 1 MiB, an upload over 10 MiB)
 * stay within the table as 400 `validation_error` rather than 413, sent as soon as the cap is passed with
 * `Connection: close`. Every /api/v1 answer carries X-RateLimit-Limit/Remaining/Reset (Reset in unix
 * seconds) and X-Request-Id; a 429 also carries Retry-After in seconds.
 */
import { SUBSCRIPTION_MODELS, imageCredits, videoCredits } from "../models.js";
import type { IncomingMessage } from "node:http";
import {
  creditsData,
  imageData,
  listData,
  mediaUrl,
  startedVideoData,
  uploadData,
  videoData,
} from "./answers.js";
import type { Account } from "./auth.js";
import { readJsonBody, readUpload } from "./body.js";
import type { SandboxContext } from "./context.js";
import { HttpError, dataResponse, validationError } from "./http.js";
import type { SandboxResponse } from "./http.js";
import { imageSize } from "./media/images.js";
import { asObjectBody, validateImageRequest, validateListQuery, validateVideoRequest } from "./validation.js";

export interface ApiRequest {
  req: IncomingMessage;
  query: URLSearchParams;
  params: Readonly<Record<string, string>>;
  account: Account;
}

export type ApiHandler = (ctx: SandboxContext, request: ApiRequest) => Promise<SandboxResponse>;

export const generateVideo: ApiHandler = async (ctx, { req, account }) => {
  const request = validateVideoRequest(asObjectBody(await readJsonBody(req)));
  requirePaidAccess(account, request.model);
  const cost = videoCredits(request.model, request.duration, request.resolution);
  charge(
    account,
    cost,
    `${request.duration} s of ${request.model}${request.resolution ? ` at ${request.resolution}` : ""}`,
  );
  const task = ctx.store.addVideo(ctx.newId("video"), account, request, cost);
  return dataResponse(
    startedVideoData(ctx.shapes, {
      id: task.id,
      status: ctx.store.view(task).status,
      model: request.model,
      creditsUsed: cost,
      creditsRemaining: account.credits,
    }),
  );
};

export const videoStatus: ApiHandler = async (ctx, { params, account }) => {
  const id = decodeVideoId(params.rawId ?? "");
  const task = ctx.store.findVideo(id, account);
  if (!task) throw notFound(ctx, id);
  ctx.store.settle(task);
  if (!task.final && ctx.store.providerDown) {
    throw new HttpError(
      502,
      "upstream_error",
      "The upstream generation provider is not answering; try the status call again later",
    );
  }
  return dataResponse(videoData(ctx, task));
};

export const listVideos: ApiHandler = async (ctx, { query, account }) => {
  const { page, limit } = validateListQuery(query);
  return dataResponse(listData(ctx, ctx.store.listVideos(account), page, limit));
};

export const generateImage: ApiHandler = async (ctx, { req, account }) => {
  const request = validateImageRequest(asObjectBody(await readJsonBody(req)));
  // The image endpoint needs paid access whatever the model (spec 5.4).
  requirePaidAccess(account, request.model, true);
  const cost = imageCredits(1);
  charge(account, cost, "1 image");
  const { width, height } = imageSize(request.resolution, request.aspectRatio);
  const id = ctx.newId("image");
  ctx.store.addImage({
    id,
    owner: account,
    request,
    width,
    height,
    creditsUsed: cost,
    createdAt: ctx.clock(),
  });
  return dataResponse(
    imageData(ctx.shapes, {
      id,
      url: mediaUrl(ctx, "images", id, request.outputFormat),
      model: request.model,
      format: request.outputFormat,
      width,
      height,
      creditsUsed: cost,
      creditsRemaining: account.credits,
    }),
  );
};

export const upload: ApiHandler = async (ctx, { req }) => {
  const file = await readUpload(req);
  const id = ctx.newId("upload");
  ctx.store.addUpload({
    id,
    contentType: file.contentType,
    extension: file.extension,
    bytes: file.bytes,
    createdAt: ctx.clock(),
  });
  return dataResponse(
    uploadData(ctx.shapes, {
      id,
      url: mediaUrl(ctx, "uploads", id, file.extension),
      contentType: file.contentType,
      size: file.bytes.length,
    }),
  );
};

export const credits: ApiHandler = async (ctx, { account }) => {
  ctx.store.settleOwner(account);
  return dataResponse(creditsData(ctx.shapes, account));
};

function requirePaidAccess(account: Account, model: string, always = false): void {
  if (account.paidAccess) return;
  if (always || SUBSCRIPTION_MODELS.includes(model)) {
    throw new HttpError(
      403,
      "paid_access_required",
      always
        ? "Image generation needs paid access; upgrade the account's plan"
        : `Model ${model} needs paid access; use vendor-video-1-5-pro or upgrade the plan`,
    );
  }
}

/** Nothing is charged and nothing is created when the balance is short: the service never sells below zero. */
function charge(account: Account, cost: number, what: string): void {
  if (!account.tryCharge(cost)) {
    throw new HttpError(
      403,
      "insufficient_credits",
      `${what} costs ${cost} credits; the account has ${account.credits}`,
    );
  }
}

function decodeVideoId(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw validationError("video_id", "is not valid percent-encoding");
  }
}

function notFound(ctx: SandboxContext, id: string): HttpError {
  const message = `No video with id "${id}" for this API key`;
  return ctx.shapes.notFoundStatus === 400
    ? validationError("video_id", message)
    : new HttpError(404, "not_found", message);
}
