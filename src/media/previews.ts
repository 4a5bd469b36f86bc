/**
 * Image previews the model can see: each finished image (or a video's still) fetched by the server under
 * the download guards, decoded, scaled to at most `maxSide` pixels on its longest side and re-encoded as
 * JPEG small enough that all previews of one result fit a fixed budget. A preview that cannot be made is
 * a note saying why, never a failed call.
 *
 * sharp (libvips) is an optional native dependency, imported on the first preview only: a server that
 * never makes one never loads it, and one installed without it answers "previews unavailable".
 */
import type { ImageContent } from "@modelcontextprotocol/sdk/types.js";
import type SharpModule from "sharp";
import type { Sharp as SharpPipeline } from "sharp";
import { AbortedError } from "../api/errors.js";
import { fetchMediaBytes } from "../files/download.js";
import { SNIFF_LENGTH, sniffMediaExtension } from "../files/sniff.js";

type Sharp = typeof SharpModule;

/** At most this many previews per result; more images are named in a note. */
export const MAX_PREVIEWS = 4;
/**
 * Base64 characters all previews of one result may take together: 160 kB, far below Claude Desktop's 1 MB
 * cap on a tool result, and about 20k tokens even for a client that counts base64 as text (Claude Code
 * estimates 1 token per 8 characters against its 25k-token output limit).
 */
export const PREVIEW_BUDGET_CHARS = 160_000;
/** Refused before decoding: above this many pixels an image is treated as a decompression bomb. */
export const MAX_INPUT_PIXELS = 50_000_000;
/** The largest source file fetched for a preview (a 4k photo as PNG is some 20-30 MB). */
export const MAX_SOURCE_BYTES = 40 * 1024 * 1024;
/** All previews of one result together: they come on top of the call's own wait. */
export const PREVIEW_DEADLINE_MS = 10_000;
const QUALITIES = [80, 65, 50];
const SHRINK_STEP = 0.7;
const MIN_SIDE = 160;
const PREVIEWABLE = new Set(["png", "jpg", "webp", "gif"]);

export interface PreviewSource {
  url: string;
  /** How the note names it: "image 2", "the video's still". */
  label: string;
}

export interface PreviewOptions {
  maxSide: number;
  /** Hosts a fetch may reach even on a non-public address: the service's own (see ServerDeps). */
  allowHosts: readonly string[];
  signal: AbortSignal;
  /** Replaces the lazy `import("sharp")` (tests: a missing library). */
  loadSharp?: () => Promise<Sharp>;
}

export interface Previews {
  images: ImageContent[];
  /** One line per preview that could not be made (or was left out), saying why. */
  notes: string[];
}

/** A preview that cannot be made; the message is the reason shown to the user. */
export class PreviewError extends Error {
  override name = "PreviewError";
}

let loading: Promise<Sharp> | undefined;

/** Imports sharp once per process; a failed import stays failed (installing it needs a restart anyway). */
export function loadSharp(): Promise<Sharp> {
  loading ??= import("sharp").then((module) => {
    const sharp = module.default;
    // libvips' operation cache keeps decoded images alive between calls; previews never repeat an operation.
    sharp.cache(false);
    return sharp;
  });
  return loading;
}

export async function makePreviews(
  sources: readonly PreviewSource[],
  options: PreviewOptions,
): Promise<Previews> {
  const chosen = sources.slice(0, MAX_PREVIEWS);
  const notes =
    sources.length > chosen.length
      ? [`Previews show the first ${chosen.length} of ${sources.length} images.`]
      : [];
  if (chosen.length === 0) return { images: [], notes };
  let sharp: Sharp;
  try {
    sharp = await (options.loadSharp ?? loadSharp)();
  } catch (error) {
    const detail = error instanceof Error ? error.message.split("\n")[0] : String(error);
    return {
      images: [],
      notes: [
        `No preview: previews are unavailable because the optional image library sharp is not installed ` +
          `with this copy of generation-mcp (${detail}). Install sharp beside it for previews, or set ` +
          "GENERATION_PREVIEWS=off to leave this note out.",
      ],
    };
  }
  const images: ImageContent[] = [];
  const deadline = Date.now() + PREVIEW_DEADLINE_MS;
  const budget = Math.floor(PREVIEW_BUDGET_CHARS / chosen.length);
  // One at a time: four 4k images decoded at once would quadruple the memory peak for little gain.
  for (const source of chosen) {
    try {
      images.push(await previewOne(sharp, source.url, { ...options, budget, deadline }));
    } catch (error) {
      // A cancelled call or a shutdown still answers with the finished media, only without previews.
      if (error instanceof AbortedError || options.signal.aborted) {
        notes.push("No preview: the call was cancelled or the server is stopping.");
        break;
      }
      notes.push(`No preview of ${source.label}: ${reasonOf(error)}`);
    }
  }
  return { images, notes };
}

interface OneOptions extends PreviewOptions {
  budget: number;
  deadline: number;
}

async function previewOne(sharp: Sharp, url: string, options: OneOptions): Promise<ImageContent> {
  const timeoutMs = options.deadline - Date.now();
  if (timeoutMs <= 0) throw new PreviewError(`the ${PREVIEW_DEADLINE_MS / 1000} s preview time ran out.`);
  const bytes = await fetchMediaBytes({
    url,
    maxBytes: MAX_SOURCE_BYTES,
    signal: options.signal,
    timeoutMs,
    allowHosts: options.allowHosts,
  });
  const kind = sniffMediaExtension(bytes.subarray(0, SNIFF_LENGTH));
  if (kind === undefined || !PREVIEWABLE.has(kind)) {
    throw new PreviewError("the file is not a PNG, JPEG, WebP or GIF image.");
  }
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
async function encodeWithin(
  sharp: Sharp,
  bytes: Buffer,
  options: { maxSide: number; budget: number },
): Promise<ImageContent> {
  const [best, ...lower] = QUALITIES;
  const direct = await decoding(() =>
    scaledPipeline(sharp, bytes, options.maxSide).jpeg({ quality: best }).toBuffer(),
  );
  if (base64Length(direct.length) <= options.budget) return jpegContent(direct);
  const { data, info } = await decoding(() =>
    scaledPipeline(sharp, bytes, options.maxSide).raw().toBuffer({ resolveWithObject: true }),
  );
  const image: RawImage = { data, width: info.width, height: info.height, channels: 3 };
  for (const quality of lower) {
    const jpeg = await encodeRaw(sharp, image, 1, quality);
    if (base64Length(jpeg.length) <= options.budget) return jpegContent(jpeg);
  }
  for (
    let scale = SHRINK_STEP;
    Math.max(image.width, image.height) * scale >= MIN_SIDE;
    scale *= SHRINK_STEP
  ) {
    for (const quality of QUALITIES) {
      const jpeg = await encodeRaw(sharp, image, scale, quality);
      if (base64Length(jpeg.length) <= options.budget) return jpegContent(jpeg);
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

function jpegContent(jpeg: Buffer): ImageContent {
  return { type: "image", data: jpeg.toString("base64"), mimeType: "image/jpeg" };
}

function base64Length(bytes: number): number {
  return 4 * Math.ceil(bytes / 3);
}

// Download errors end with advice about saving; a preview note wants the cause only.
function reasonOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/[;,]? ?nothing was (saved|fetched)\.?$/, ".").replace(/\.\.$/, ".");
}

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return (message.split("\n")[0] ?? message).slice(0, 200);
}
