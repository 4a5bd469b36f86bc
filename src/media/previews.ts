/**
 * Image previews the model can see: each finished image (or a video's still) fetched by the server under
 * the download guards, decoded, scaled to at most `maxSide` pixels on its longest side and re-encoded as
 * JPEG small enough that all previews of one result fit a fixed budget. A preview that cannot be made is
 * a note saying why, never a failed call.
 *
 * sharp (libvips) is an optional native dependency, loaded on the first preview only, in a worker process
 * (preview-engine.ts): a server that never makes one never loads it, and one installed without it answers
 * "previews unavailable".
 */
import type { ImageContent } from "@modelcontextprotocol/server";
import { AbortedError } from "../api/errors.js";
import { fetchMediaBytes } from "../files/download.js";
import { SNIFF_LENGTH, sniffMediaExtension } from "../files/sniff.js";
import { defaultEngine, inProcessEngine, type PreviewEngine } from "./preview-engine.js";
import { PreviewError, type Sharp } from "./preview-transform.js";

export { MAX_INPUT_PIXELS, PreviewError } from "./preview-transform.js";

/** At most this many previews per result; more images are named in a note. */
export const MAX_PREVIEWS = 4;
/**
 * Base64 characters all previews of one result may take together: 160 kB, far below Claude Desktop's 1 MB
 * cap on a tool result, and about 20k tokens even for a client that counts base64 as text (Claude Code
 * estimates 1 token per 8 characters against its 25k-token output limit).
 */
export const PREVIEW_BUDGET_CHARS = 160_000;
/** The largest source file fetched for a preview (a 4k photo as PNG is some 20-30 MB). */
export const MAX_SOURCE_BYTES = 40 * 1024 * 1024;
/** All previews of one result together: they come on top of the call's own wait. */
export const PREVIEW_DEADLINE_MS = 10_000;
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
  /** Runs sharp in this process, loaded by this function (tests: a missing library). */
  loadSharp?: () => Promise<Sharp>;
  /** Where previews are decoded; default: the worker process of the built server (preview-engine.ts). */
  engine?: PreviewEngine;
}

export interface Previews {
  images: ImageContent[];
  /** One line per preview that could not be made (or was left out), saying why. */
  notes: string[];
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
  const engine =
    options.loadSharp !== undefined
      ? inProcessEngine(options.loadSharp)
      : (options.engine ?? defaultEngine());
  let missing: string | undefined;
  try {
    missing = await engine.unavailable();
  } catch (error) {
    // The decoder could not even start: the call still answers, without previews.
    return { images: [], notes: [`No preview: ${reasonOf(error)}`] };
  }
  if (missing !== undefined) {
    return {
      images: [],
      notes: [
        `No preview: previews are unavailable because the optional image library sharp is not installed ` +
          `with this copy of generation-mcp (${missing}). Install sharp beside it for previews, or set ` +
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
      images.push(await previewOne(engine, source.url, { ...options, budget, deadline }));
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

async function previewOne(engine: PreviewEngine, url: string, options: OneOptions): Promise<ImageContent> {
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
  const left = options.deadline - Date.now();
  if (left <= 0) throw new PreviewError(`the ${PREVIEW_DEADLINE_MS / 1000} s preview time ran out.`);
  const jpeg = await engine.transform(bytes, { maxSide: options.maxSide, budget: options.budget }, left);
  return { type: "image", data: jpeg.toString("base64"), mimeType: "image/jpeg" };
}

// Download errors end with advice about saving; a preview note wants the cause only.
function reasonOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/[;,]? ?nothing was (saved|fetched)\.?$/, ".").replace(/\.\.$/, ".");
}
