/**
 * Untrusted image bytes into a JPEG preview with sharp: decompression bombs refused from the header, then
 * scaled and re-encoded to fit a base64 budget. The built server runs this file as a process of its own
 * (previews.ts), so libvips' memory goes back when it ends and a crash costs one preview, never the server.
 */
import type SharpModule from "sharp";

export type Sharp = typeof SharpModule;
export type WorkerRequest =
  { id: number; probe: true } | { id: number; bytes: Uint8Array; maxSide: number; budget: number };
/** `unavailable` when sharp cannot be loaded; a probe that found it gets `{ id }` alone. */
export type WorkerReply = { id: number; jpeg?: Uint8Array; error?: string; unavailable?: string };

/** Refused before decoding: above this many pixels an image is treated as a decompression bomb. */
export const MAX_INPUT_PIXELS = 50_000_000;
const QUALITIES = [80, 65, 50];
const SHRINK_STEP = 0.7;
const MIN_SIDE = 160;

/** A preview that cannot be made; the message is the reason shown to the user. */
export class PreviewError extends Error {
  override name = "PreviewError";
}

/** Imports sharp; rejects when the optional library is not installed. */
export async function importSharp(): Promise<Sharp> {
  const sharp = (await import("sharp")).default;
  // libvips' operation cache keeps decoded images alive between calls; previews never repeat an operation.
  sharp.cache(false);
  return sharp;
}

/** Answers requests with the library `load` gives, loaded on the first request and kept. */
export function answerer(load: () => Promise<Sharp>): (request: WorkerRequest) => Promise<WorkerReply> {
  let loading: Promise<Sharp> | undefined;
  return async (request) => {
    const sharp = await (loading ??= load()).catch((error: unknown) => firstLine(error));
    if (typeof sharp === "string") return { id: request.id, unavailable: sharp };
    if ("probe" in request) return { id: request.id };
    try {
      const bytes = Buffer.from(request.bytes.buffer, request.bytes.byteOffset, request.bytes.byteLength);
      return { id: request.id, jpeg: await preview(sharp, bytes, request.maxSide, request.budget) };
    } catch (error) {
      const reason = error instanceof PreviewError ? error.message : decodeFailure(error).message;
      return { id: request.id, error: reason };
    }
  };
}

/**
 * Scaled to fit `maxSide`, flattened on white, as JPEG: in one pipeline, which fits `budget` for nearly every
 * image; otherwise from the pixels decoded once, at falling quality and then smaller sizes until it fits.
 */
async function preview(sharp: Sharp, bytes: Buffer, maxSide: number, budget: number): Promise<Buffer> {
  // The header only, so a small file claiming a huge canvas is refused before any pixel is decoded.
  const { width = 0, height = 0 } = await sharp(bytes, { limitInputPixels: false })
    .metadata()
    .catch((error: unknown) => Promise.reject(decodeFailure(error)));
  if (width * height === 0) throw new PreviewError("the image has no readable dimensions.");
  if (width * height > MAX_INPUT_PIXELS) {
    throw new PreviewError(
      `the image claims ${width}x${height} pixels, above the ${MAX_INPUT_PIXELS / 1_000_000}-megapixel ` +
        "preview limit, so it was not decoded.",
    );
  }
  const fits = (jpeg: Buffer) => 4 * Math.ceil(jpeg.length / 3) <= budget;
  const scaled = () =>
    sharp(bytes, { limitInputPixels: MAX_INPUT_PIXELS, failOn: "error" })
      .autoOrient()
      .resize({ width: maxSide, height: maxSide, fit: "inside", withoutEnlargement: true })
      .flatten({ background: "#ffffff" })
      .toColourspace("srgb")
      .removeAlpha();
  try {
    const direct = await scaled().jpeg({ quality: QUALITIES[0] }).toBuffer();
    if (fits(direct)) return direct;
    const { data, info } = await scaled().raw().toBuffer({ resolveWithObject: true });
    const side = Math.max(info.width, info.height);
    const raw = { raw: { width: info.width, height: info.height, channels: 3 as const } };
    for (let scale = 1; scale === 1 || side * scale >= MIN_SIDE; scale *= SHRINK_STEP) {
      for (const quality of scale === 1 ? QUALITIES.slice(1) : QUALITIES) {
        const width = Math.max(1, Math.round(info.width * scale));
        const height = Math.max(1, Math.round(info.height * scale));
        const pixels = scale < 1 ? sharp(data, raw).resize({ width, height }) : sharp(data, raw);
        const jpeg = await pixels.jpeg({ quality }).toBuffer();
        if (fits(jpeg)) return jpeg;
      }
    }
  } catch (error) {
    throw decodeFailure(error);
  }
  throw new PreviewError(`even a ${MIN_SIDE}-pixel preview would exceed its share of the result size.`);
}

function decodeFailure(error: unknown): PreviewError {
  return new PreviewError(`the image could not be decoded (${firstLine(error)}).`);
}

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return (message.split("\n")[0] ?? message).slice(0, 200);
}

// Only as the forked worker (previews.ts sets the variable): the in-process path imports the code above.
if (process.env["GENERATION_PREVIEW_WORKER"] === "1") {
  const answer = answerer(importSharp);
  process.on(
    "message",
    (request: WorkerRequest) => void answer(request).then((reply) => process.send?.(reply)),
  );
  // The server went away (or stopped the worker): nothing is left to do.
  process.on("disconnect", () => process.exit(0));
}
