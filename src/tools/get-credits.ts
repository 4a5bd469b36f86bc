import * as z from "zod";
import { sanitizeValue } from "../redact.js";
import { readDeadline } from "./deadline.js";
import { defineTool } from "./define-tool.js";

export const getCredits = defineTool({
  name: "get_credits",
  title: "Get credits",
  description:
    "Show the account's remaining credits, whether it has paid access (needed for vendor-video-2-0, vendor-video-2-0-fast and images) " +
    "and its subscription status, exactly as the service reports them. Free: costs no credits. Check it before an expensive generation.",
  input: z.strictObject({}),
  output: z.record(z.string(), z.unknown()).describe("The service's credits fields as received."),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: true },
  async handler(_args, deps, context) {
    const data = await deps.api.getCredits({
      signal: context.signal,
      priority: "foreground",
      deadline: readDeadline(context, deps),
    });
    return sanitizeValue(data) as Record<string, unknown>;
  },
  summarize(result) {
    // Values are the service's: strings are quoted so they read as data, never as instructions.
    return `Credits: ${Object.entries(result)
      .map(
        ([key, value]) =>
          `${key}=${typeof value === "number" || typeof value === "boolean" ? String(value) : JSON.stringify(value)}`,
      )
      .join(", ")}`;
  },
});
