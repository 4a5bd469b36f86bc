import * as z from "zod";
import { DEFAULT_HTTP_MAX_BODY_BYTES, MAX_MESSAGE_BYTES } from "../config/index.js";
import { imageFromBase64, type LocalImage } from "../files/local-image.js";
import { MAX_UPLOAD_BYTES } from "../models.js";
import {
  defineTool,
  fields,
  foreground,
  guidanceFields,
  requestDeadline,
  waitWindowMs,
  type ServerDeps,
  type ToolContext,
} from "./define-tool.js";
import { closeAll, openLocalImages, uploadAll } from "./steps.js";

const MIB = 1024 * 1024;
const MB = MAX_UPLOAD_BYTES / MIB;
/**
 * Room a message needs besides data_base64: the envelope, the filename (255 characters, at most 6 bytes each
 * once JSON-escaped) and `_meta`. Base64 is a byte a character in JSON (a line break costs two).
 */
const ENVELOPE_BYTES = 16 * 1024;
/** Longest data_base64 that fits one stdio message with its envelope. */
export const MAX_DATA_BASE64_CHARS = MAX_MESSAGE_BYTES - ENVELOPE_BYTES;
/** Largest image data_base64 can carry (about 7.5 MB); a larger one (up to MAX_UPLOAD_BYTES) goes by path. */
export const MAX_DATA_BASE64_BYTES = Math.floor(MAX_DATA_BASE64_CHARS / 4) * 3;
const megabytes = (bytes: number) => (Math.floor((bytes / MIB) * 10) / 10).toFixed(1);
const DATA_MB = megabytes(MAX_DATA_BASE64_BYTES);
/** Over Streamable HTTP the body limit (4 MiB by default) is lower: about 3 MB of image. */
const HTTP_DATA_MB = megabytes(((DEFAULT_HTTP_MAX_BODY_BYTES - ENVELOPE_BYTES) / 4) * 3);

const input = z
  .strictObject({
    path: fields
      .localPath(
        `Absolute path of a local JPG, PNG or WebP (at most ${MB} MB) inside an allowed folder (GENERATION_ALLOWED_DIRS or the client's roots).`,
      )
      .optional(),
    data_base64: z
      .string()
      .min(1, "must not be empty")
      .max(
        MAX_DATA_BASE64_CHARS,
        `must be at most ${MAX_DATA_BASE64_CHARS} characters (an image of about ${DATA_MB} MB), the most one message can carry; for a larger image (up to ${MB} MB) save it to a file and pass its path instead`,
      )
      .describe(
        `The image bytes as standard base64 on one line (a data: URL prefix is accepted): at most ${MAX_DATA_BASE64_CHARS} characters, ` +
          `an image of at most ${DATA_MB} MB (${MAX_DATA_BASE64_BYTES} bytes), the most one stdio message can carry ` +
          `(about ${HTTP_DATA_MB} MB over HTTP by default). ` +
          `For a larger image (up to ${MB} MB) pass path instead. Needs filename.`,
      )
      .optional(),
    filename: z
      .string()
      .min(1, "must not be empty")
      .max(255, "must be at most 255 characters")
      .describe("File name to upload data_base64 under, e.g. cat.png (the type is decided by the bytes).")
      .optional(),
    from_user: z
      .boolean()
      .describe(
        "true: the picture is on the person's machine (or was shown in the chat) where this server cannot read it. " +
          "Makes a link for one picture that the person opens in a browser; where the client can, it opens the link itself and the answer is url. " +
          "Otherwise the answer is status waiting_for_upload with upload_url to hand to the person and upload_id to wait on.",
      )
      .optional(),
    upload_id: z
      .string()
      .regex(/^[A-Za-z0-9_-]{22}$/, "is not an upload_id handed out by upload_image")
      .describe(
        "The upload_id of a link handed out before (from_user): answers url once the person has sent the picture.",
      )
      .optional(),
    wait: z
      .boolean()
      .describe(
        "With upload_id: wait for the picture within the wait window (default true); false only looks.",
      )
      .optional(),
    timeout_seconds: fields.timeout.optional(),
  })
  .superRefine((args, ctx) => {
    const refuse = (path: string, message: string) => ctx.addIssue({ code: "custom", path: [path], message });
    const given = [args.path, args.data_base64, args.from_user || undefined, args.upload_id];
    if (given.filter((value) => value !== undefined).length !== 1) {
      refuse("path", "give exactly one of path, data_base64, from_user: true or upload_id");
    }
    if (args.data_base64 !== undefined && args.filename === undefined)
      refuse("filename", "is required with data_base64");
    if (args.data_base64 === undefined && args.filename !== undefined)
      refuse("filename", "goes only with data_base64");
    if (args.wait !== undefined && args.upload_id === undefined) refuse("wait", "goes only with upload_id");
    if (args.timeout_seconds !== undefined && !args.from_user && args.upload_id === undefined)
      refuse("timeout_seconds", "goes only with from_user or upload_id");
  });

const output = z.object({
  url: z.string().optional().describe("The hosted image URL, to use as image_url or in images."),
  status: z.literal("waiting_for_upload").optional().describe("The person has not sent the picture yet."),
  upload_id: z.string().optional().describe("The link's id: call again with it (and wait: true) to get url."),
  upload_url: z
    .string()
    .optional()
    .describe("The link to hand to the person: it opens a page to send one picture."),
  expires_at: z.string().optional().describe("When the link stops working (ISO time)."),
  ...guidanceFields,
});

type Args = z.output<typeof input>;
type Waiting = z.input<typeof output>;

export const uploadImage = defineTool({
  name: "upload_image",
  title: "Upload reference image",
  description:
    `Upload a JPG, PNG or WebP (type decided by the file's bytes) and get back a hosted url to use as image_url in generate_video ` +
    `or in images of generate_image. Give path for a local file of at most ${MB} MB, or data_base64 for an image of at most ${DATA_MB} MB (the most one message can carry). ` +
    "For a picture this server cannot read (on the person's own machine, or one shown in the chat) give from_user: true instead: the person gets a link to send it from a browser, never base64 spelled out by you. " +
    "Costs no credits. generate_video and generate_image also accept local paths directly (image_path / image_paths).",
  input,
  output,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  async handler(args, deps, context) {
    if (args.from_user || args.upload_id !== undefined) return fromPerson(args, deps, context);
    const base64 = { param: "data_base64", maxBytes: MAX_DATA_BASE64_BYTES };
    const images =
      args.data_base64 === undefined
        ? await openLocalImages([args.path ?? ""], "path", deps)
        : [imageFromBase64(args.data_base64, args.filename, base64)];
    try {
      const [url] = await uploadAll(images, deps, context, requestDeadline(context, waitWindowMs(deps)));
      return { url: url ?? "" };
    } finally {
      await closeAll(images);
    }
  },
  summarize: (result) =>
    result.url === undefined
      ? `Waiting for the person's picture.\n${result.next_step}`
      : `Uploaded: ${result.url}`,
});

/** A picture from the person: a link made (or one made before), opened by the client if it can, waited on. */
async function fromPerson(args: Args, deps: ServerDeps, context: ToolContext): Promise<Waiting> {
  const windowMs = waitWindowMs(deps, args.timeout_seconds);
  const until = context.startedAt + windowMs;
  const waitOn = async (id: string, deadline: number, declined = false, uploadUrl?: string) => {
    const options = foreground(context, deps, requestDeadline(context, windowMs));
    const upload = async (image: LocalImage) => (await deps.api.upload(image, options)).url;
    const progress = (waited: number) =>
      void context.progress(`upload_id ${id}: no picture yet after ${waited} s`);
    const link = await deps.uploads.wait(id, { deadline, signal: context.signal, upload, progress });
    return link.url === undefined ? waiting({ ...link, url: uploadUrl }, declined) : { url: link.url };
  };
  if (args.upload_id !== undefined) return waitOn(args.upload_id, args.wait === false ? 0 : until);
  // The client calls again with the person's answer to opening the link (2026-07-28).
  const { linkAnswer } = context;
  if (linkAnswer !== undefined) return waitOn(linkAnswer.id, until, linkAnswer.answer === "declined");
  const link = await deps.uploads.create();
  const message = "Choose the picture to send to your assistant (a JPG, PNG or WebP of at most 10 MB).";
  const answer = await context.openLink({ ...link, message }, until);
  return answer === "accepted"
    ? waitOn(link.id, until, false, link.url)
    : waiting(link, answer === "declined");
}

function waiting(
  link: { id: string; url?: string | undefined; expiresAt: number },
  declined: boolean,
): Waiting {
  const expires = new Date(link.expiresAt).toISOString();
  const how =
    link.url === undefined
      ? `The person has not sent the picture yet; the link handed out before works until ${expires}.`
      : `Give the person this link to open in a browser and choose the picture: ${link.url} (one picture, until ${expires}).`;
  return {
    status: "waiting_for_upload",
    upload_id: link.id,
    ...(link.url !== undefined && { upload_url: link.url }),
    expires_at: expires,
    next_step: `${how} Then call upload_image with upload_id "${link.id}" and wait: true to get the hosted url.`,
    notes: [
      ...(declined ? ["The person declined to open the link when asked."] : []),
      ...(link.url === undefined
        ? []
        : [`From a terminal the same link takes: curl -T picture.png ${link.url}`]),
      "Nothing reaches the service before the picture is sent and checked; an upload costs no credits.",
    ],
  };
}
