import type { SandboxResponse } from "../http.js";
import { errorResponse } from "../http.js";

/**
 * Serves a stored file like a CDN would: one byte range per request (206 + Content-Range), 416 with
 * `Content-Range: bytes *\/size` when the range starts past the end. A Range header that is not a single
 * well-formed bytes range is ignored and the whole file sent, which RFC 9110 allows.
 */
export function serveBytes(
  method: string,
  rangeHeader: string | undefined,
  bytes: Buffer,
  contentType: string,
): SandboxResponse {
  const size = bytes.length;
  const headers: Record<string, string> = {
    "Content-Type": contentType,
    "Accept-Ranges": "bytes",
    "Cache-Control": "public, max-age=3600",
  };
  const headOnly = method === "HEAD";
  const range = rangeHeader === undefined ? undefined : parseRange(rangeHeader, size);
  if (range === "unsatisfiable") {
    return errorResponse(416, "range_not_satisfiable", `Range "${rangeHeader}" is outside 0..${size - 1}`, {
      "Content-Range": `bytes */${size}`,
      "Accept-Ranges": "bytes",
    });
  }
  if (range === undefined) return { status: 200, headers, body: bytes, headOnly };
  const [start, end] = range;
  return {
    status: 206,
    headers: { ...headers, "Content-Range": `bytes ${start}-${end}/${size}` },
    body: bytes.subarray(start, end + 1),
    headOnly,
  };
}

/** Returns [start, end] inclusive, "unsatisfiable", or undefined to serve the whole file. */
export function parseRange(header: string, size: number): [number, number] | "unsatisfiable" | undefined {
  const match = /^bytes=(\d*)-(\d*)$/i.exec(header.trim());
  if (!match) return undefined;
  const [, first = "", last = ""] = match;
  if (first === "" && last === "") return undefined;
  if (first === "") {
    const suffix = Number(last);
    if (suffix === 0 || size === 0) return "unsatisfiable";
    return [Math.max(0, size - suffix), size - 1];
  }
  const start = Number(first);
  if (last !== "" && Number(last) < start) return undefined;
  if (start >= size) return "unsatisfiable";
  const end = last === "" ? size - 1 : Number(last);
  return [start, Math.min(end, size - 1)];
}
