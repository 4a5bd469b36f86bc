/**
 * The six endpoints of spec section 4, and media; each success's `data` is built in answers.ts. Our choices
 * outside spec section 7's table: an unknown route is 404, a wrong method 405 with Allow, a huge body 400.
 */
import type { IncomingMessage } from "node:http";
import { SUBSCRIPTION_MODELS, imageCredits, videoCredits } from "../models.js";
import * as answers from "./answers.js";
import type { Account } from "./auth.js";
import { readJsonObject, readUpload } from "./body.js";
import type { SandboxContext } from "./context.js";
import { HttpError, dataResponse, decodeSegment, validationError, type SandboxResponse } from "./http.js";
import { imageSize } from "./media/images.js";
import { serveMedia } from "./media/serve.js";
import type { SandboxRoute } from "./types.js";
import { validateImageRequest, validateListQuery, validateVideoRequest } from "./validation.js";

export interface Call {
  ctx: SandboxContext;
  req: IncomingMessage;
  query: URLSearchParams;
  /** The caller's account; media routes need no key and never read it. */
  account: Account;
}

export interface Target {
  route: SandboxRoute;
  methods: readonly string[];
  handle(call: Call): Promise<SandboxResponse>;
}

/** Matches a raw path (no query), as received: "/api/v1/../x" is a 404. The caller checks the method. */
export function matchRoute(path: string): Target | undefined {
  const [, folder, file] = /^\/media\/(videos|images|uploads|posters)\/([^/]+)$/.exec(path) ?? [];
  if (folder && file) {
    const handle = ({ ctx, req }: Call) => serveMedia(ctx, req, folder as answers.MediaFolder, file);
    return { route: "media", methods: ["GET", "HEAD"], handle };
  }
  const [, api = "", id] = /^\/api\/v1(\/videos\/([^/]+)|\/.*)$/.exec(path) ?? [];
  if (id !== undefined)
    return { route: "video-status", methods: ["GET"], handle: (call) => videoStatus(call, id) };
  return API_ROUTES[api];
}

const API_ROUTES: Record<string, Target> = {
  "/generate": { route: "generate", methods: ["POST"], handle: generateVideo },
  "/generate-image": { route: "generate-image", methods: ["POST"], handle: generateImage },
  "/videos": { route: "videos", methods: ["GET"], handle: listVideos },
  "/upload": { route: "upload", methods: ["POST"], handle: upload },
  "/credits": { route: "credits", methods: ["GET"], handle: credits },
};

async function generateVideo({ ctx, req, account }: Call): Promise<SandboxResponse> {
  const request = validateVideoRequest(await readJsonObject(req));
  const { model, duration, resolution } = request;
  const needsPlan = `Model ${model} needs paid access; use vendor-video-1-5-pro or upgrade the plan`;
  if (SUBSCRIPTION_MODELS.includes(model)) requirePaidAccess(account, needsPlan);
  const cost = videoCredits(model, duration, resolution);
  charge(account, cost, `${duration} s of ${model}${resolution ? ` at ${resolution}` : ""}`);
  const task = ctx.store.addVideo(ctx.newId("video"), account, request, cost);
  const started = { id: task.id, status: ctx.store.view(task).status, model };
  return dataResponse(answers.startedVideoData(ctx.shapes, started, account, cost));
}

async function videoStatus({ ctx, account }: Call, rawId: string): Promise<SandboxResponse> {
  const id = decodeSegment(rawId);
  if (id === undefined) throw validationError("video_id", "is not valid percent-encoding");
  const task = ctx.store.findVideo(id, account);
  const missing = `No video with id "${id}" for this API key`;
  if (!task && ctx.shapes.notFoundStatus === 400) throw validationError("video_id", missing);
  if (!task) throw new HttpError(404, "not_found", missing);
  const down = "The upstream generation provider is not answering; try the status call again later";
  if (!task.final && ctx.store.providerDown) throw new HttpError(502, "upstream_error", down);
  return dataResponse(answers.videoData(ctx, task));
}

async function listVideos({ ctx, query, account }: Call): Promise<SandboxResponse> {
  const { page, limit } = validateListQuery(query);
  return dataResponse(answers.listData(ctx, ctx.store.listVideos(account), page, limit));
}

async function generateImage({ ctx, req, account }: Call): Promise<SandboxResponse> {
  const request = validateImageRequest(await readJsonObject(req));
  // The image endpoint needs paid access whatever the model (spec 5.4).
  requirePaidAccess(account, "Image generation needs paid access; upgrade the account's plan");
  const cost = imageCredits(1);
  charge(account, cost, "1 image");
  const size = imageSize(request.resolution, request.aspectRatio);
  const id = ctx.newId("image");
  ctx.store.images.set(id, { request, ...size });
  const image = { id, model: request.model, format: request.outputFormat, ...size };
  return dataResponse(answers.imageData(ctx, image, account, cost));
}

async function upload({ ctx, req }: Call): Promise<SandboxResponse> {
  const { bytes, contentType, extension } = await readUpload(req);
  const id = ctx.newId("upload");
  ctx.store.addUpload(id, { contentType, extension, bytes });
  return dataResponse(answers.uploadData(ctx, { id, extension, contentType, size: bytes.length }));
}

async function credits({ ctx, account }: Call): Promise<SandboxResponse> {
  ctx.store.settleOwner(account);
  return dataResponse(answers.creditsData(ctx.shapes, account));
}

function requirePaidAccess(account: Account, message: string): void {
  if (!account.paidAccess) throw new HttpError(403, "paid_access_required", message);
}

/** Nothing is charged and nothing is created when the balance is short: the service never sells below zero. */
function charge(account: Account, cost: number, what: string): void {
  const message = `${what} costs ${cost} credits; the account has ${account.credits}`;
  if (!account.tryCharge(cost)) throw new HttpError(403, "insufficient_credits", message);
}
