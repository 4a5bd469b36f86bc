/**
 * The part of a preview that decodes untrusted bytes: refuse decompression bombs from the header, then
 * scale and re-encode as a JPEG that fits a base64 budget. It runs in the preview worker process
 * (preview-worker.ts) in the built server, so the native decoder's memory and any crash of it stay out of
 * the server, and in-process where there is no worker file (the unbundled sources under test).
 */
import type SharpModule from "sharp";
import type { Sharp as SharpPipeline } from "sharp";

export type Sharp = typeof SharpModule;

/** Refused before decoding: above this many pixels an image is treated as a decompression bomb. */
export const MAX_INPUT_PIXELS = 50_000_000;
const QUALITIES = [80, 65, 50];
const SHRINK_STEP = 0.7;
const MIN_SIDE = 160;

/** A preview that cannot be made; the message is the reason shown to the user. */
export class PreviewError extends Error {
  override name = "PreviewError";
}

export interface TransformOptions {
  maxSide: number;
  /** Base64 characters the JPEG may take. */
  budget: number;
}

/** Imports sharp with the settings previews want; rejects when the optional library is not installed. */
export async function importSharp(): Promise<Sharp> {
  const sharp = (await import("sharp")).default;
  // libvips' operation cache keeps decoded images alive between calls; previews never repeat an operation.
  sharp.cache(false);
  return sharp;
}

/** The JPEG preview of `bytes`, or a PreviewError saying why there is none. */
export async function transformImage(
  sharp: Sharp,
  bytes: Buffer,
  options: TransformOptions,
): Promise<Buffer> {
  await refuseBombs(sharp, bytes);
  return encodeWithin(sharp, bytes, options);
}

/** Reads the header only, so a small file claiming a huge canvas is refused before any pixel is decoded. */
async function refuseBombs(sharp: Sharp, bytes: Buffer): Promise<void> {
  let width: number | undefined;
  let height: number | undefined;
  try {
    ({ width, height } = await sharp(bytes, { limitInputPixels: false }).metadata());
  } catch (error) {
    throw new PreviewError(`the image could not be decoded (${firstLine(error)}).`);
  }
  if (width === undefined || height === undefined) {
    throw new PreviewError("the image has no readable dimensions.");
  }
  if (width * height > MAX_INPUT_PIXELS) {
    throw new PreviewError(
      `the image claims ${width}x${height} pixels, above the ${MAX_INPUT_PIXELS / 1_000_000}-megapixel ` +
        "preview limit, so it was not decoded.",
    );
  }
}

interface RawImage {
  data: Buffer;
  width: number;
  height: number;
  channels: 3;
}

/** Oriented, scaled to fit `maxSide` (never enlarged), flattened on white, sRGB without alpha. */
function scaledPipeline(sharp: Sharp, bytes: Buffer, maxSide: number): SharpPipeline {
  return sharp(bytes, { limitInputPixels: MAX_INPUT_PIXELS, failOn: "error" })
    .autoOrient()
    .resize({ width: maxSide, height: maxSide, fit: "inside", withoutEnlargement: true })
    .flatten({ background: "#ffffff" })
    .toColourspace("srgb")
    .removeAlpha();
}

/**
 * JPEG at the best quality in one pipeline, which fits the budget for nearly every image; otherwise the
 * scaled pixels once, then falling quality and smaller sizes from them until it fits.
 */
async function encodeWithin(sharp: Sharp, bytes: Buffer, options: TransformOptions): Promise<Buffer> {
  const [best, ...lower] = QUALITIES;
  const direct = await decoding(() =>
    scaledPipeline(sharp, bytes, options.maxSide).jpeg({ quality: best }).toBuffer(),
  );
  if (base64Length(direct.length) <= options.budget) return direct;
  const { data, info } = await decoding(() =>
    scaledPipeline(sharp, bytes, options.maxSide).raw().toBuffer({ resolveWithObject: true }),
  );
  const image: RawImage = { data, width: info.width, height: info.height, channels: 3 };
  for (const quality of lower) {
    const jpeg = await encodeRaw(sharp, image, 1, quality);
    if (base64Length(jpeg.length) <= options.budget) return jpeg;
  }
  for (
    let scale = SHRINK_STEP;
    Math.max(image.width, image.height) * scale >= MIN_SIDE;
    scale *= SHRINK_STEP
  ) {
    for (const quality of QUALITIES) {
      const jpeg = await encodeRaw(sharp, image, scale, quality);
      if (base64Length(jpeg.length) <= options.budget) return jpeg;
    }
  }
  throw new PreviewError(`even a ${MIN_SIDE}-pixel preview would exceed its share of the result size.`);
}

function encodeRaw(sharp: Sharp, image: RawImage, scale: number, quality: number): Promise<Buffer> {
  const { width, height, channels } = image;
  let pipeline = sharp(image.data, { raw: { width, height, channels } });
  if (scale < 1) {
    pipeline = pipeline.resize({
      width: Math.max(1, Math.round(width * scale)),
      height: Math.max(1, Math.round(height * scale)),
    });
  }
  return pipeline.jpeg({ quality }).toBuffer();
}

async function decoding<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    throw new PreviewError(`the image could not be decoded (${firstLine(error)}).`);
  }
}

function base64Length(bytes: number): number {
  return 4 * Math.ceil(bytes / 3);
}

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return (message.split("\n")[0] ?? message).slice(0, 200);
}
