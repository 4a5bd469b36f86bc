import * as z from "zod";
import { renderAdvice } from "../advice.js";
import { findPaidAccess } from "../api/shapes.js";
import { PRICE_LIST, isUsable } from "../models.js";
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

const UNKNOWN_ACCESS = "The service's credits answer does not say whether this account has paid access.";

const model = z.object({
  id: z.string().describe("The model id, as generate_video's or generate_image's model parameter takes it."),
  kind: z.enum(["video", "image"]).describe("video (generate_video) or image (generate_image)."),
  credits_per_second: z.number().optional().describe("Video: credits per second of video."),
  credits_per_second_1080p: z.number().optional().describe("Video: credits per second at resolution 1080p."),
  credits_per_image: z.number().optional().describe("Image: credits per image."),
  needs_paid_access: z.boolean().describe("Whether it needs paid access (a paid plan)."),
  usable: z
    .boolean()
    .nullable()
    .describe(
      "Whether this account may use it: true when it needs no paid access or the account has it; null when the service's answer does not say (see reason).",
    ),
  reason: z.string().optional().describe("Why usable is null."),
});

export const getCredits = defineTool({
  name: "get_credits",
  title: "Get credits",
  description:
    "Show the account's remaining credits, paid access and subscription status, exactly as the service reports them, " +
    "and the models this account may use with their prices (models). Free: costs no credits. Check it before an expensive generation.",
  input: z.strictObject({}),
  output: z
    .looseObject({
      models: z.array(model).describe("Every model of the price list, with whether this account may use it."),
      allowance: allowance.optional(),
    })
    .describe(
      "The service's credits fields as received (its own models and allowance fields renamed service_models and service_allowance), models, and allowance when a daily limit is set.",
    ),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: true },
  async handler(_args, deps, context) {
    const answer = await deps.api.getCredits(foreground(context, deps));
    const fields = sanitizeValue(answer) as Record<string, unknown>;
    // `models` and `allowance` are this server's: service fields of those names are kept under other names.
    const { allowance: theirAllowance, models: theirModels, ...rest } = fields;
    const paid = findPaidAccess(fields);
    const models = PRICE_LIST.map((price) => {
      const usable = isUsable(price, paid);
      return { ...price, usable: usable ?? null, ...(usable === undefined && { reason: UNKNOWN_ACCESS }) };
    });
    const kept = {
      ...rest,
      ...(theirModels !== undefined && { service_models: theirModels }),
      ...(theirAllowance !== undefined && { service_allowance: theirAllowance }),
      models,
    };
    if (deps.daily === undefined) return kept;
    const ours = await deps.daily.allowance(deps.callerId);
    if (!("known" in ours)) return { ...kept, allowance: ours };
    return { ...kept, allowance: { ...ours, next_step: renderAdvice(ours.next_step, deps.advice) } };
  },
  summarize(result) {
    // Values are the service's: strings are quoted so they read as data, never as instructions.
    const { allowance: ours, models, ...service } = result;
    const field = ([key, value]: [string, unknown]) =>
      `${key}=${typeof value === "number" || typeof value === "boolean" ? String(value) : JSON.stringify(value)}`;
    const line = `Credits: ${Object.entries(service).map(field).join(", ")}\n${describeModels(models)}`;
    if (ours === undefined) return line;
    if (ours.known === false) {
      return `${line}\nDaily allowance (this server's limit for you, ${ours.daily_limit} credits a day): unknown. ${ours.reason ?? ""}\nNext step: ${ours.next_step ?? ""}`;
    }
    return `${line}\nDaily allowance (this server's limit for you): ${ours.remaining_today} of ${ours.daily_limit} credits left today (${ours.used_today} started); resets at ${ours.resets_at}.`;
  },
});

function describeModels(models: z.output<typeof model>[]): string {
  const lines = models.map((entry) => {
    const price =
      entry.kind === "video"
        ? `${entry.credits_per_second} credits/s${entry.credits_per_second_1080p === undefined ? "" : `, ${entry.credits_per_second_1080p} at 1080p`}`
        : `${entry.credits_per_image} credits/image`;
    const usable = entry.usable === null ? "usable: unknown" : entry.usable ? "usable" : "not usable";
    return `- ${entry.id} (${entry.kind}, ${price}, ${entry.needs_paid_access ? "paid access" : "no paid access needed"}: ${usable})`;
  });
  const unknown = models.find((entry) => entry.reason !== undefined)?.reason;
  return [
    "Models and prices (usable: this account may use it):",
    ...lines,
    ...(unknown ? [unknown] : []),
  ].join("\n");
}
