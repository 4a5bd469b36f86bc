/** Media lives outside /api/v1 like a CDN's files: no auth, no rate limit; a wrong `<id>.<ext>` is 404. */
import type { IncomingMessage } from "node:http";
import type { MediaFolder } from "../answers.js";
import type { SandboxContext } from "../context.js";
import { HttpError, decodeSegment, errorResponse, type SandboxResponse } from "../http.js";
import { ENCODERS, IMAGE_TYPES, encodePng, seedOf } from "./images.js";
import { SAMPLE_VIDEO_MP4 } from "./sample-video.js";

const CDN_HEADERS = { "Accept-Ranges": "bytes", "Cache-Control": "public, max-age=3600" };

/**
 * One byte range per request (206), 416 when it starts past the end; a Range that is not one well-formed
 * bytes range is ignored and the whole file sent, as RFC 9110 allows.
 */
export async function serveMedia(
  ctx: SandboxContext,
  req: IncomingMessage,
  folder: MediaFolder,
  file: string,
): Promise<SandboxResponse> {
  const dot = file.lastIndexOf(".");
  const id = dot > 0 ? decodeSegment(file.slice(0, dot)) : undefined;
  const found = id === undefined ? undefined : await find(ctx, folder, id, file.slice(dot + 1));
  if (!found) throw new HttpError(404, "not_found", `No media file "${file}"`);
  const { bytes, type } = found;
  const size = bytes.length;
  const headers: Record<string, string> = { "Content-Type": type, ...CDN_HEADERS };
  const { range: rangeHeader } = req.headers;
  const range = rangeHeader === undefined ? undefined : parseRange(rangeHeader, size);
  if (range === "unsatisfiable") {
    const message = `Range "${rangeHeader}" is outside 0..${size - 1}`;
    const rangeHeaders = { "Content-Range": `bytes */${size}`, "Accept-Ranges": "bytes" };
    return errorResponse(416, "range_not_satisfiable", message, rangeHeaders);
  }
  if (range === undefined) return { status: 200, headers, body: bytes };
  const [start, end] = range;
  headers["Content-Range"] = `bytes ${start}-${end}/${size}`;
  return { status: 206, headers, body: bytes.subarray(start, end + 1) };
}

async function find(ctx: SandboxContext, folder: MediaFolder, id: string, extension: string) {
  const video = ctx.store.findVideo(id);
  const completed = video?.final?.status === "completed" ? video : undefined;
  switch (folder) {
    case "videos":
      return extension === "mp4" && completed ? { bytes: SAMPLE_VIDEO_MP4, type: "video/mp4" } : undefined;
    case "posters": {
      // The still the nested status answer links as `result.cover.url`, at the video's size.
      if (extension !== "png" || !completed) return undefined;
      const render = () => encodePng(320, 180, seedOf(completed.request.prompt));
      // "poster:" keeps posters apart from images in the shared cache, whatever ids the generator makes.
      return { bytes: await ctx.images.get(`poster:${id}`, render), type: "image/png" };
    }
    case "images": {
      const record = ctx.store.images.get(id);
      const format = record?.request.outputFormat;
      if (!record || extension !== format) return undefined;
      const seed = seedOf(record.request.prompt);
      // Keyed by what the bytes depend on: a 4k PNG takes ~150 ms, which would skew the previews bench.
      const key = `image:${format}:${record.width}x${record.height}:${seed}`;
      const bytes = await ctx.images.get(key, () => ENCODERS[format](record.width, record.height, seed));
      return { bytes, type: IMAGE_TYPES[format] };
    }
    case "uploads": {
      const record = ctx.store.uploads.get(id);
      return record && extension === record.extension
        ? { bytes: record.bytes, type: record.contentType }
        : undefined;
    }
  }
}

/** Returns [start, end] inclusive, "unsatisfiable", or undefined to serve the whole file. */
export function parseRange(header: string, size: number): [number, number] | "unsatisfiable" | undefined {
  const [, first = "", last = ""] = /^bytes=(\d*)-(\d*)$/i.exec(header.trim()) ?? [];
  if (first === "" && last === "") return undefined;
  if (first === "")
    return Number(last) === 0 || size === 0 ? "unsatisfiable" : [Math.max(0, size - Number(last)), size - 1];
  const start = Number(first);
  if (last !== "" && Number(last) < start) return undefined;
  if (start >= size) return "unsatisfiable";
  return [start, last === "" ? size - 1 : Math.min(Number(last), size - 1)];
}
