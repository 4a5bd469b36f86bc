/**
 * The `data` of every success answer, in both forms of `shapes.nesting` (documented in routes.ts). Built
 * from plain facts, so the handlers and the earlyAnswer fault's made-up answers share one definition.
 */
import type { Account } from "./auth.js";
import type { SandboxContext } from "./context.js";
import type { VideoTask } from "./store.js";
import type { SandboxShapes } from "./types.js";

/** Poster stills of completed videos; the nested status answer links them before the video. */
export const POSTER_WIDTH = 320;
export const POSTER_HEIGHT = 180;

export type MediaFolder = "videos" | "images" | "uploads" | "posters";

export function mediaUrl(ctx: SandboxContext, folder: MediaFolder, id: string, extension: string): string {
  return `${ctx.origin}/media/${folder}/${encodeURIComponent(id)}.${extension}`;
}

export interface StartedVideo {
  id: string;
  status: string;
  model: string;
  creditsUsed: number;
  creditsRemaining: number;
}

export function startedVideoData(shapes: SandboxShapes, video: StartedVideo): Record<string, unknown> {
  if (shapes.nesting === "nested") {
    return {
      task: { video_id: video.id, status: video.status, model: video.model },
      billing: { credits_used: video.creditsUsed, credits_remaining: video.creditsRemaining },
    };
  }
  return {
    video_id: video.id,
    status: video.status,
    model: video.model,
    credits_used: video.creditsUsed,
    credits_remaining: video.creditsRemaining,
  };
}

export function videoData(ctx: SandboxContext, task: VideoTask): Record<string, unknown> {
  return ctx.shapes.nesting === "nested" ? nestedVideo(ctx, task) : flatVideo(ctx, task);
}

function flatVideo(ctx: SandboxContext, task: VideoTask): Record<string, unknown> {
  const view = ctx.store.view(task);
  const { request } = task;
  const record: Record<string, unknown> = {
    video_id: task.id,
    status: view.status,
    model: request.model,
    prompt: request.prompt,
    generation_type: request.generationType,
    aspect_ratio: request.aspectRatio,
    duration: request.duration,
  };
  if (request.resolution !== undefined) record.resolution = request.resolution;
  if (request.imageUrl !== undefined) record.image_url = request.imageUrl;
  record.credits_used = task.creditsUsed;
  record.created_at = new Date(task.createdAt).toISOString();
  record.updated_at = new Date(view.since).toISOString();
  if (view.final && view.status === "completed") record.video_url = mediaUrl(ctx, "videos", task.id, "mp4");
  if (view.final && view.status === "failed") {
    record.error = { code: "generation_failed", message: view.message ?? "Generation failed" };
    record.credits_refunded = task.refunded;
  }
  return record;
}

function nestedVideo(ctx: SandboxContext, task: VideoTask): Record<string, unknown> {
  const view = ctx.store.view(task);
  const { request } = task;
  const asked: Record<string, unknown> = {
    prompt: request.prompt,
    model: request.model,
    generation_type: request.generationType,
    aspect_ratio: request.aspectRatio,
    duration: request.duration,
  };
  if (request.resolution !== undefined) asked.resolution = request.resolution;
  if (request.imageUrl !== undefined) asked.input = { image_url: request.imageUrl };
  const record: Record<string, unknown> = {
    task: {
      video_id: task.id,
      status: view.status,
      created_at: new Date(task.createdAt).toISOString(),
      updated_at: new Date(view.since).toISOString(),
    },
    request: asked,
  };
  const credits: Record<string, unknown> = { used: task.creditsUsed };
  if (view.final && view.status === "completed") {
    // The poster comes first on purpose: a client taking the first URL it meets gets a still, not the video.
    record.result = {
      cover: { url: mediaUrl(ctx, "posters", task.id, "png") },
      video_url: mediaUrl(ctx, "videos", task.id, "mp4"),
    };
  }
  if (view.final && view.status === "failed") {
    record.error = { code: "generation_failed", message: view.message ?? "Generation failed" };
    credits.refunded = task.refunded;
  }
  record.credits = credits;
  return record;
}

/** `tasks` is the caller's whole history, newest first; one page of it is answered. */
export function listData(
  ctx: SandboxContext,
  tasks: readonly VideoTask[],
  page: number,
  limit: number,
): unknown {
  const items = tasks.slice((page - 1) * limit, page * limit).map((task) => videoData(ctx, task));
  if (ctx.shapes.listShape === "array") return items;
  const total = tasks.length;
  const totalPages = Math.ceil(total / limit);
  if (ctx.shapes.nesting === "nested") {
    return { results: items, meta: { pagination: { page, limit, total, total_pages: totalPages } } };
  }
  return { items, page, limit, total, total_pages: totalPages };
}

export interface GeneratedImage {
  id: string;
  url: string;
  model: string;
  format: string;
  width: number;
  height: number;
  creditsUsed: number;
  creditsRemaining: number;
}

export function imageData(shapes: SandboxShapes, image: GeneratedImage): Record<string, unknown> {
  const nested = shapes.nesting === "nested";
  if (shapes.imageShape === "task") {
    return nested
      ? { job: { id: image.id, state: "processing" } }
      : { image_id: image.id, status: "processing" };
  }
  if (nested) {
    return {
      job: { id: image.id, state: "completed" },
      result: {
        output: [{ url: image.url, width: image.width, height: image.height, format: image.format }],
      },
      billing: { credits_used: image.creditsUsed, credits_remaining: image.creditsRemaining },
    };
  }
  return {
    image_id: image.id,
    status: "completed",
    image_urls: [image.url],
    model: image.model,
    output_format: image.format,
    width: image.width,
    height: image.height,
    credits_used: image.creditsUsed,
    credits_remaining: image.creditsRemaining,
  };
}

export interface UploadedAsset {
  id: string;
  url: string;
  contentType: string;
  size: number;
}

/** `uploadUrlField` renames the URL of the flat form only; the nested form is fixed. */
export function uploadData(shapes: SandboxShapes, asset: UploadedAsset): Record<string, unknown> {
  if (shapes.nesting === "nested") {
    return {
      asset: {
        id: asset.id,
        content_type: asset.contentType,
        size: asset.size,
        links: { public: asset.url },
      },
    };
  }
  return { [shapes.uploadUrlField]: asset.url, content_type: asset.contentType, size: asset.size };
}

export function creditsData(shapes: SandboxShapes, account: Account): Record<string, unknown> {
  const status = account.subscription === null ? "none" : "active";
  if (shapes.nesting === "nested") {
    return {
      account: {
        balance: { credits: account.credits },
        access: { paid: account.paidAccess },
        subscription: { status, plan: account.subscription },
      },
    };
  }
  return {
    credits: account.credits,
    paid_access: account.paidAccess,
    subscription_status: status,
    plan: account.subscription,
  };
}
