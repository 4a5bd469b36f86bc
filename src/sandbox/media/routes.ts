import type { IncomingMessage } from "node:http";
import { POSTER_HEIGHT, POSTER_WIDTH } from "../answers.js";
import type { SandboxContext } from "../context.js";
import { HttpError } from "../http.js";
import type { SandboxResponse } from "../http.js";
import { IMAGE_CONTENT_TYPES, renderImage, seedOf } from "./images.js";
import { encodePng } from "./png.js";
import { SAMPLE_VIDEO_CONTENT_TYPE, SAMPLE_VIDEO_MP4 } from "./sample-video.js";
import { serveBytes } from "./serve.js";

/**
 * Media lives outside /api/v1, like files on a CDN: no auth, no rate limit, GET and HEAD with Range. A
 * file name is `<id>.<ext>`; an extension that does not match the record is a 404, as a CDN would answer.
 */
export type MediaHandler = (
  ctx: SandboxContext,
  req: IncomingMessage,
  file: string,
) => Promise<SandboxResponse>;

function splitName(file: string): { id: string; extension: string } {
  const dot = file.lastIndexOf(".");
  if (dot <= 0) throw missing(file);
  let id: string;
  try {
    id = decodeURIComponent(file.slice(0, dot));
  } catch {
    throw missing(file);
  }
  return { id, extension: file.slice(dot + 1) };
}

function missing(file: string): HttpError {
  return new HttpError(404, "not_found", `No media file "${file}"`);
}

function range(req: IncomingMessage): string | undefined {
  return req.headers.range;
}

export const serveVideo: MediaHandler = async (ctx, req, file) => {
  const { id, extension } = splitName(file);
  // Only a completed task has a video; a running or failed one has nothing to download yet.
  if (extension !== "mp4" || !ctx.store.findCompletedVideo(id)) throw missing(file);
  return serveBytes(req.method ?? "GET", range(req), SAMPLE_VIDEO_MP4, SAMPLE_VIDEO_CONTENT_TYPE);
};

/** The still the nested status answer links as `result.cover.url`; like the video, only once completed. */
export const servePoster: MediaHandler = async (ctx, req, file) => {
  const { id, extension } = splitName(file);
  const task = extension === "png" ? ctx.store.findCompletedVideo(id) : undefined;
  if (!task) throw missing(file);
  // "poster:" keeps posters apart from image records in the shared cache, whatever ids the generator makes.
  const bytes = await ctx.images.get(`poster:${id}`, () =>
    encodePng(POSTER_WIDTH, POSTER_HEIGHT, seedOf(task.request.prompt)),
  );
  return serveBytes(req.method ?? "GET", range(req), bytes, "image/png");
};

export const serveImage: MediaHandler = async (ctx, req, file) => {
  const { id, extension } = splitName(file);
  const record = ctx.store.findImage(id);
  if (!record || extension !== record.request.outputFormat) throw missing(file);
  const format = record.request.outputFormat;
  const seed = seedOf(record.request.prompt);
  // Keyed by what the bytes depend on, not by id: the same prompt at the same size renders once (a 4k PNG
  // takes the sandbox about 150 ms, which would otherwise hide the client's own cost in the previews bench).
  const key = `image:${format}:${record.width}x${record.height}:${seed}`;
  const bytes = await ctx.images.get(key, () => renderImage(format, record.width, record.height, seed));
  return serveBytes(req.method ?? "GET", range(req), bytes, IMAGE_CONTENT_TYPES[format]);
};

export const serveUpload: MediaHandler = async (ctx, req, file) => {
  const { id, extension } = splitName(file);
  const record = ctx.store.findUpload(id);
  if (!record || extension !== record.extension) throw missing(file);
  return serveBytes(req.method ?? "GET", range(req), record.bytes, record.contentType);
};
