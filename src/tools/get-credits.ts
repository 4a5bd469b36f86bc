import * as z from "zod";
import { renderAdvice } from "../advice.js";
import { sanitizeValue } from "../redact.js";
import { defineTool, foreground } from "./define-tool.js";

const allowance = z
  .object({
    daily_limit: z
      .number()
      .describe("Estimated credits this caller may start per UTC day (GENERATION_DAILY_CREDITS)."),
    used_today: z.number().optional().describe("Estimated credits this caller started today (UTC)."),
    remaining_today: z.number().optional().describe("What is left of today's limit."),
    resets_at: z.string().describe("When the count starts again: the next midnight UTC, ISO 8601."),
    known: z
      .literal(false)
      .optional()
      .describe(
        "Present (false) when this server cannot tell today's spend (its spend record cannot be read or written): used_today and remaining_today are then absent, and no start is sent until it can.",
      ),
    reason: z.string().optional().describe("Why the allowance is unknown (with known: false)."),
    next_step: z.string().optional().describe("What to do about it (with known: false)."),
  })
  .describe("This server's daily spend limit for this caller; present only when one is set.");

export const getCredits = defineTool({
  name: "get_credits",
  title: "Get credits",
  description:
    "Show the account's remaining credits, whether it has paid access (needed for vendor-video-2-0, vendor-video-2-0-fast and images) " +
    "and its subscription status, exactly as the service reports them. Free: costs no credits. Check it before an expensive generation.",
  input: z.strictObject({}),
  output: z
    .looseObject({ allowance: allowance.optional() })
    .describe("The service's credits fields as received, and allowance when a daily limit is set."),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: true },
  async handler(_args, deps, context) {
    const fields = sanitizeValue(await deps.api.getCredits(foreground(context, deps))) as Record<
      string,
      unknown
    >;
    // `allowance` is this server's: a field of that name from the service is kept under another name.
    const { allowance: theirs, ...rest } = fields;
    const kept = theirs === undefined ? rest : { ...rest, service_allowance: theirs };
    if (deps.daily === undefined) return kept;
    const ours = await deps.daily.allowance(deps.callerId);
    if (!("known" in ours)) return { ...kept, allowance: ours };
    return { ...kept, allowance: { ...ours, next_step: renderAdvice(ours.next_step, deps.advice) } };
  },
  summarize(result) {
    // Values are the service's: strings are quoted so they read as data, never as instructions.
    const { allowance: ours, ...service } = result;
    const line = `Credits: ${Object.entries(service)
      .map(
        ([key, value]) =>
          `${key}=${typeof value === "number" || typeof value === "boolean" ? String(value) : JSON.stringify(value)}`,
      )
      .join(", ")}`;
    if (ours === undefined) return line;
    if (ours.known === false) {
      return `${line}\nDaily allowance (this server's limit for you, ${ours.daily_limit} credits a day): unknown. ${ours.reason ?? ""}\nNext step: ${ours.next_step ?? ""}`;
    }
    return `${line}\nDaily allowance (this server's limit for you): ${ours.remaining_today} of ${ours.daily_limit} credits left today (${ours.used_today} started); resets at ${ours.resets_at}.`;
  },
});
