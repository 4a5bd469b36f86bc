import * as z from "zod";
import { PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX, PAGE_LIMIT_MIN } from "../models.js";
import { sanitizeValue } from "../redact.js";
import { defineTool } from "./define-tool.js";

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
  })
  .catchall(z.unknown())
  .describe("Plus the service's totals (total, total_pages ...) when it gives any.");

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
    const page = await deps.api.listVideos(
      { page: args.page ?? 1, limit: args.limit ?? PAGE_LIMIT_DEFAULT },
      { signal: context.signal, priority: "foreground" },
    );
    const totals = sanitizeValue(page.totals) as Record<string, unknown>;
    const items = page.items.map((item) => sanitizeValue(item) as Record<string, unknown>);
    return { ...totals, items, page: page.page, limit: page.limit };
  },
  summarize(result) {
    const total = typeof result["total"] === "number" ? ` of ${result["total"]}` : "";
    const lines = result.items.map((item) => {
      const id = String(item["video_id"] ?? item["id"] ?? "?");
      const status = String(item["status"] ?? "?");
      const url = typeof item["video_url"] === "string" ? ` ${item["video_url"]}` : "";
      return `- ${id} ${status}${url}`;
    });
    return [`Page ${result.page}, ${result.items.length} item(s)${total}:`, ...lines].join("\n");
  },
});
