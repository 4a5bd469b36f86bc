import * as z from "zod";
import { DEFAULT_HTTP_MAX_BODY_BYTES, MAX_MESSAGE_BYTES } from "../config/index.js";
import { imageFromBase64 } from "../files/local-image.js";
import { MAX_UPLOAD_BYTES } from "../models.js";
import { defineTool, fields, requestDeadline, waitWindowMs } from "./define-tool.js";
import { closeAll, openLocalImages, uploadAll } from "./steps.js";

const MIB = 1024 * 1024;
const MB = MAX_UPLOAD_BYTES / MIB;
/**
 * Room a message needs besides data_base64: the JSON-RPC envelope (about 150 bytes), the filename (255
 * characters, at most 6 bytes each once JSON-escaped) and the client's `_meta`. Base64 text is one byte per
 * character in JSON (a line break in it costs two, hence "on one line").
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
  })
  .superRefine((args, ctx) => {
    const refuse = (path: string, message: string) => ctx.addIssue({ code: "custom", path: [path], message });
    if ((args.path === undefined) === (args.data_base64 === undefined)) {
      refuse("path", "give exactly one of path or data_base64");
    }
    if (args.data_base64 !== undefined && args.filename === undefined)
      refuse("filename", "is required with data_base64");
    if (args.path !== undefined && args.filename !== undefined)
      refuse("filename", "goes only with data_base64");
  });

export const uploadImage = defineTool({
  name: "upload_image",
  title: "Upload reference image",
  description:
    `Upload a JPG, PNG or WebP (type decided by the file's bytes) and get back a hosted url to use as image_url in generate_video ` +
    `or in images of generate_image. Give path for a local file of at most ${MB} MB, or data_base64 for an image of at most ${DATA_MB} MB (the most one message can carry). ` +
    "Costs no credits. generate_video and generate_image also accept local paths directly (image_path / image_paths), so this is only needed to reuse one upload several times.",
  input,
  output: z.object({ url: z.string().describe("The hosted image URL.") }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  async handler(args, deps, context) {
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
  summarize: (result) => `Uploaded: ${result.url}`,
});
