import * as z from "zod";
import { findStatus, findVideoId, findVideoUrl } from "../api/shapes.js";
import { PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX, PAGE_LIMIT_MIN } from "../models.js";
import { sanitizeValue } from "../redact.js";
import { defineTool, foreground, guidanceFields, type ServerDeps } from "./define-tool.js";

const input = z.strictObject({
  page: z
    .number()
    .int("must be a whole number")
    .min(1, "must be 1 or more")
    .max(1_000_000)
    .describe("Page number, from 1 (default 1).")
    .optional(),
  limit: z
    .number()
    .int("must be a whole number")
    .min(PAGE_LIMIT_MIN, `must be from ${PAGE_LIMIT_MIN} to ${PAGE_LIMIT_MAX}`)
    .max(PAGE_LIMIT_MAX, `must be from ${PAGE_LIMIT_MIN} to ${PAGE_LIMIT_MAX}`)
    .describe(`Items per page, ${PAGE_LIMIT_MIN} to ${PAGE_LIMIT_MAX} (default ${PAGE_LIMIT_DEFAULT}).`)
    .optional(),
});

const output = z
  .object({
    items: z
      .array(z.record(z.string(), z.unknown()))
      .describe("Video tasks as the service lists them, newest first when it sorts so."),
    page: z.number(),
    limit: z.number(),
    ...guidanceFields,
  })
  .catchall(z.unknown())
  .describe("Plus the service's totals (total, total_pages ...) when it gives any.");

type Page = { page: number; limit: number; items: Record<string, unknown>[] } & Record<string, unknown>;

export const listVideos = defineTool({
  name: "list_videos",
  title: "List video history",
  description:
    "List this account's video tasks, paginated: ids, statuses, prompts and URLs as the service gives them. " +
    "Free: costs no credits. Use it to find a video_id again, or to check whether a task was started before retrying.",
  input,
  output,
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: true },
  async handler(args, deps, context) {
    const query = { page: args.page ?? 1, limit: args.limit ?? PAGE_LIMIT_DEFAULT };
    if (deps.scope !== undefined) return withPagingStep(await ownVideos(deps, deps.scope, query));
    const { totals, items, page, limit } = await deps.api.listVideos(query, foreground(context, deps));
    const kept = items.map((item) => sanitizeValue(item) as Record<string, unknown>);
    const shownTotals = sanitizeValue(totals) as Record<string, unknown>;
    return withPagingStep({ ...shownTotals, items: kept, page, limit });
  },
  summarize(result) {
    const { page, items } = result;
    const total = count(result["total"]);
    const pages = pagesOf(result);
    if (items.length === 0) {
      if (page === 1) return "No videos yet for this API key.";
      const where =
        pages !== undefined ? ` (the history has ${total ?? "its"} video(s) on ${pages} page(s))` : "";
      return `Page ${page} is empty: it is past the last page${where}.`;
    }
    // Items are as the service gives them: their id, status and URL pass the same checks as every field.
    const lines = items.map((item) => {
      const url = findVideoUrl(item);
      return `- ${findVideoId(item) ?? "(no usable id)"} ${findStatus(item) ?? "unknown"}${url ? ` ${url}` : ""}`;
    });
    const heading = `Page ${page}${pages !== undefined ? ` of ${pages}` : ""}, ${items.length} item(s)`;
    const of = total !== undefined ? ` of ${total}` : "";
    return [`${heading}${of}:`, ...lines, result.next_step ?? "This is the last page."].join("\n");
  },
});

/** Where one key serves several callers the history is the operator's: a caller lists what it started. */
async function ownVideos(deps: ServerDeps, scope: string, { page, limit }: { page: number; limit: number }) {
  const { items, total } = await deps.ownership.list(scope, (page - 1) * limit, limit);
  const listed = items.map((task) => ({
    video_id: task.video_id,
    prompt: task.prompt,
    ...(task.model !== undefined && { model: task.model }),
    created_at: new Date(task.started_at).toISOString(),
  }));
  // As the service answers an empty history: no videos, no pages.
  return { items: listed, page, limit, total, total_pages: Math.ceil(total / limit) };
}

function withPagingStep<T extends Page>(result: T): T & { next_step?: string } {
  if (result.items.length === 0 || isLastPage(result) === true) return result;
  const next = `call list_videos with page ${result.page + 1}`;
  const step = isLastPage(result) === false ? `More: ${next}.` : `There may be more: ${next} to see.`;
  return { ...result, next_step: step };
}

/** Whether this page is the last, from whatever the service says; undefined when it says nothing usable. */
function isLastPage(result: Page): boolean | undefined {
  const hasMore = result["has_more"] ?? result["hasMore"];
  const pages = pagesOf(result);
  if (typeof hasMore === "boolean") return !hasMore;
  if (pages !== undefined) return result.page >= pages;
  if ("next_page" in result) return result["next_page"] === null;
  // A short page is the last one; a full page without totals may or may not be.
  return result.items.length < result.limit ? true : undefined;
}

function pagesOf(result: { limit: number } & Record<string, unknown>): number | undefined {
  const total = count(result["total"]);
  return count(result["total_pages"]) ?? (total !== undefined ? Math.ceil(total / result.limit) : undefined);
}

function count(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}
