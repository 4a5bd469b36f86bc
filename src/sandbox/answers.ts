/** The `data` of each success answer, in both `shapes.nesting` forms; the earlyAnswer fault's answers too. */
import type { Account } from "./auth.js";
import type { SandboxContext } from "./context.js";
import type { VideoTask } from "./store.js";
import type { SandboxShapes } from "./types.js";

export type MediaFolder = "videos" | "images" | "uploads" | "posters";

function mediaUrl(ctx: SandboxContext, folder: MediaFolder, id: string, extension: string): string {
  return `${ctx.origin}/media/${folder}/${encodeURIComponent(id)}.${extension}`;
}

/** One fact: its key in the flat form, its dotted path in the nested form (either absent), its value. */
type Field = [flat: string | undefined, nested: string | undefined, value: unknown];

/** Builds one form from the facts, in their order; undefined values are left out. */
function shape(shapes: SandboxShapes, fields: Field[]): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (const [flat, nested, value] of fields) {
    const path = shapes.nesting === "nested" ? nested?.split(".") : flat === undefined ? undefined : [flat];
    const last = path?.pop();
    if (last === undefined || value === undefined) continue;
    let node = record;
    for (const key of path ?? []) node = (node[key] ??= {}) as Record<string, unknown>;
    node[last] = value;
  }
  return record;
}

/** What the call charged (0 in the earlyAnswer fault's made-up answers) and what the account has left. */
const billing = (account: Account, cost: number): Field[] => [
  ["credits_used", "billing.credits_used", cost],
  ["credits_remaining", "billing.credits_remaining", account.credits],
];

export function startedVideoData(
  shapes: SandboxShapes,
  video: { id: string; status: string; model: string },
  account: Account,
  cost: number,
): Record<string, unknown> {
  return shape(shapes, [
    ["video_id", "task.video_id", video.id],
    ["status", "task.status", video.status],
    ["model", "task.model", video.model],
    ...billing(account, cost),
  ]);
}

export function videoData(ctx: SandboxContext, task: VideoTask): Record<string, unknown> {
  const view = ctx.store.view(task);
  const { request } = task;
  const completed = view.final && view.status === "completed";
  const failed = view.final && view.status === "failed";
  const message = view.message ?? "Generation failed";
  return shape(ctx.shapes, [
    ["video_id", "task.video_id", task.id],
    ["status", "task.status", view.status],
    ["created_at", "task.created_at", new Date(task.createdAt).toISOString()],
    ["updated_at", "task.updated_at", new Date(view.since).toISOString()],
    ["prompt", "request.prompt", request.prompt],
    ["model", "request.model", request.model],
    ["generation_type", "request.generation_type", request.generationType],
    ["aspect_ratio", "request.aspect_ratio", request.aspectRatio],
    ["duration", "request.duration", request.duration],
    ["resolution", "request.resolution", request.resolution],
    ["image_url", "request.input.image_url", request.imageUrl],
    // The poster comes first on purpose: a client taking the first URL it meets gets a still, not the video.
    [undefined, "result.cover.url", completed ? mediaUrl(ctx, "posters", task.id, "png") : undefined],
    ["video_url", "result.video_url", completed ? mediaUrl(ctx, "videos", task.id, "mp4") : undefined],
    ["error", "error", failed ? { code: "generation_failed", message } : undefined],
    ["credits_used", "credits.used", task.creditsUsed],
    ["credits_refunded", "credits.refunded", failed ? task.creditsUsed : undefined],
  ]);
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
  return shape(ctx.shapes, [
    ["items", "results", items],
    ["page", "meta.pagination.page", page],
    ["limit", "meta.pagination.limit", limit],
    ["total", "meta.pagination.total", tasks.length],
    ["total_pages", "meta.pagination.total_pages", Math.ceil(tasks.length / limit)],
  ]);
}

export function imageData(
  ctx: SandboxContext,
  image: { id: string; model: string; format: string; width: number; height: number },
  account: Account,
  cost: number,
): Record<string, unknown> {
  const { shapes } = ctx;
  const { id, format, width, height } = image;
  const url = mediaUrl(ctx, "images", id, format);
  if (shapes.imageShape === "task")
    return shape(shapes, [
      ["image_id", "job.id", id],
      ["status", "job.state", "processing"],
    ]);
  return shape(shapes, [
    ["image_id", "job.id", id],
    ["status", "job.state", "completed"],
    ["image_urls", undefined, [url]],
    [undefined, "result.output", [{ url, width, height, format }]],
    ["model", undefined, image.model],
    ["output_format", undefined, format],
    ["width", undefined, width],
    ["height", undefined, height],
    ...billing(account, cost),
  ]);
}

/** `uploadUrlField` renames the URL of the flat form only; the nested form is fixed. */
export function uploadData(
  ctx: SandboxContext,
  asset: { id: string; extension: string; contentType: string; size: number },
): Record<string, unknown> {
  const url = mediaUrl(ctx, "uploads", asset.id, asset.extension);
  return shape(ctx.shapes, [
    [undefined, "asset.id", asset.id],
    [ctx.shapes.uploadUrlField, undefined, url],
    ["content_type", "asset.content_type", asset.contentType],
    ["size", "asset.size", asset.size],
    [undefined, "asset.links.public", url],
  ]);
}

export function creditsData(shapes: SandboxShapes, account: Account): Record<string, unknown> {
  return shape(shapes, [
    ["credits", "account.balance.credits", account.credits],
    ["paid_access", "account.access.paid", account.paidAccess],
    ["subscription_status", "account.subscription.status", account.subscription === null ? "none" : "active"],
    ["plan", "account.subscription.plan", account.subscription],
  ]);
}
