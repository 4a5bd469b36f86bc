import * as z from "zod";
import { imageFromBase64 } from "../files/local-image.js";
import { MAX_UPLOAD_BYTES } from "../models.js";
import { localPathField } from "./common.js";
import { defineTool } from "./define-tool.js";
import { closeAll, openLocalImages, uploadAll } from "./local-images.js";

const MB = MAX_UPLOAD_BYTES / (1024 * 1024);

const input = z
  .strictObject({
    path: localPathField(
      `Absolute path of a local JPG, PNG or WebP (at most ${MB} MB) inside an allowed folder (GENERATION_ALLOWED_DIRS or the client's roots).`,
    ).optional(),
    data_base64: z
      .string()
      .min(1, "must not be empty")
      .describe(
        `The image bytes as base64 (a data: URL prefix is accepted), at most ${MB} MB decoded; needs filename.`,
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
    const given = Number(args.path !== undefined) + Number(args.data_base64 !== undefined);
    if (given !== 1) {
      ctx.addIssue({ code: "custom", path: ["path"], message: "give exactly one of path or data_base64" });
    }
    if (args.data_base64 !== undefined && args.filename === undefined) {
      ctx.addIssue({ code: "custom", path: ["filename"], message: "is required with data_base64" });
    }
    if (args.path !== undefined && args.filename !== undefined) {
      ctx.addIssue({ code: "custom", path: ["filename"], message: "goes only with data_base64" });
    }
  });

export const uploadImage = defineTool({
  name: "upload_image",
  title: "Upload reference image",
  description:
    `Upload a JPG, PNG or WebP (at most ${MB} MB, type decided by the file's bytes) and get back a hosted url to use as image_url in generate_video ` +
    "or in images of generate_image. Costs no credits. generate_video and generate_image also accept local paths directly (image_path / image_paths), so this is only needed to reuse one upload several times.",
  input,
  output: z.object({ url: z.string().describe("The hosted image URL.") }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  async handler(args, deps, context) {
    const images =
      args.data_base64 !== undefined
        ? [imageFromBase64(args.data_base64, args.filename, { param: "data_base64" })]
        : await openLocalImages([args.path ?? ""], "path", deps);
    try {
      const [url] = await uploadAll(images, deps, context);
      return { url: url ?? "" };
    } finally {
      await closeAll(images);
    }
  },
  summarize: (result) => `Uploaded: ${result.url}`,
});
