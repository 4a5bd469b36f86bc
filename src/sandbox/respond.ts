/** Writing answers: the one place where headers, dripping, huge bodies and lingering closes happen. */
import type { ServerResponse } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import type { DataPatch, Drip, Malformed } from "./faults.js";
import { JSON_CONTENT_TYPE } from "./http.js";
import type { SandboxResponse } from "./http.js";
import type { RequestRecord } from "./types.js";

const HTML_ERROR_PAGE =
  "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n<body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>\n";

export function malformedResponse(malformed: Malformed): SandboxResponse {
  const json = { "Content-Type": JSON_CONTENT_TYPE };
  switch (malformed.kind) {
    case "invalid-json":
      return { status: malformed.status, headers: json, body: Buffer.from('{"data":{"video_id":"vid_tr') };
    case "html":
      return {
        status: malformed.status,
        headers: { "Content-Type": "text/html; charset=utf-8" },
        body: Buffer.from(HTML_ERROR_PAGE),
      };
    case "empty":
      return { status: malformed.status, headers: json, body: Buffer.alloc(0) };
    case "no-data":
      return { status: malformed.status, headers: json, body: Buffer.from('{"ok":true}') };
    case "huge":
      return { status: malformed.status, headers: json, body: Buffer.alloc(0), hugeBytes: malformed.bytes };
  }
}

/** The patchNext fault: the answer's `data` object shallow-merged with the patch, removed keys deleted. */
export function patchedResponse(response: SandboxResponse, { patch, remove }: DataPatch): SandboxResponse {
  const data: Record<string, unknown> = { ...(response.data as Record<string, unknown>), ...patch };
  for (const key of remove) delete data[key];
  return { ...response, data, body: Buffer.from(JSON.stringify({ data, error: null }), "utf8") };
}

export async function writeResponse(
  res: ServerResponse,
  record: RequestRecord,
  response: SandboxResponse,
  headers: Record<string, string>,
  overrides: Record<string, string> | undefined,
  drip: Drip | undefined,
  shutdown: AbortSignal,
): Promise<void> {
  if (res.destroyed || res.headersSent) return;
  const huge = response.hugeBytes;
  const length = huge ?? response.body.length;
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.setHeader("Content-Length", String(length));
  for (const [name, value] of Object.entries(overrides ?? {})) {
    if (value === "") res.removeHeader(name);
    else res.setHeader(name, value);
  }
  res.statusCode = response.status;
  record.status = response.status;
  // An abrupt close is Node's own for `Connection: close`: end, then destroy as soon as the answer is
  // written. What the client still sends then meets a closed socket, and the kernel answers with a reset.
  if (response.closeConnection && !response.closeAbruptly) lingerThenClose(res);
  if (response.headOnly) {
    res.end();
    return;
  }
  if (huge !== undefined) return writeHuge(res, huge);
  if (!drip || response.body.length === 0) {
    res.end(response.body);
    return;
  }
  res.flushHeaders();
  const size = Math.ceil(response.body.length / drip.chunks);
  for (let offset = 0; offset < response.body.length; offset += size) {
    if (offset > 0) {
      try {
        await sleep(drip.chunkDelayMs, undefined, { signal: shutdown });
      } catch {
        return;
      }
    }
    if (res.destroyed) return;
    res.write(response.body.subarray(offset, offset + size));
  }
  res.end();
}

/** A syntactically valid envelope padded to `bytes`, streamed so its size costs the sandbox no memory. */
async function writeHuge(res: ServerResponse, bytes: number): Promise<void> {
  const head = Buffer.from('{"data":{"padding":"');
  const tail = Buffer.from('"},"error":null}');
  let padding = Math.max(0, bytes - head.length - tail.length);
  res.setHeader("Content-Length", String(head.length + padding + tail.length));
  const block = Buffer.alloc(64 * 1024, "x");
  res.write(head);
  while (padding > 0) {
    if (res.destroyed) return;
    const piece = padding >= block.length ? block : block.subarray(0, padding);
    padding -= piece.length;
    if (!res.write(piece)) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          res.off("drain", done);
          res.off("close", done);
          resolve();
        };
        res.on("drain", done);
        res.on("close", done);
      });
    }
  }
  if (!res.destroyed) res.end(tail);
}

/** How long a cut-off request may keep sending (and be discarded) after its answer, before the socket goes. */
export const LINGER_MS = 1000;

/**
 * Answering early and closing at once makes the kernel reset the connection while the client is still
 * sending, and a reset can destroy our answer before the client reads it. So, like Apache's lingering
 * close: send the answer, half-close, discard (never store) what still arrives for a moment, then close.
 * Node would otherwise destroy the socket as soon as a `Connection: close` answer is written.
 */
function lingerThenClose(res: ServerResponse): void {
  const socket = res.req.socket;
  socket.destroySoon = () => {
    socket.end();
    res.req.resume();
    socket.resume();
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    timer.unref();
    socket.once("close", () => clearTimeout(timer));
  };
}
