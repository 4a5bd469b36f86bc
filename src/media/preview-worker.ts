/**
 * The preview worker: a child process of the server (forked by preview-engine.ts) that decodes untrusted
 * image bytes with sharp and answers JPEG previews over the IPC channel. Keeping libvips out of the server
 * means its working memory goes back to the system when the worker ends (it is stopped after a quiet
 * while), and a crash or a hang of the native decoder costs one preview, never the server.
 *
 * In: { id, bytes, maxSide, budget } or { id, probe: true }. Out: { id, jpeg } or { id, error } or
 * { id, unavailable } (sharp is not installed), or { id } for a probe that found sharp.
 */
import { PreviewError, importSharp, transformImage, type Sharp } from "./preview-transform.js";

export type WorkerRequest =
  { id: number; probe: true } | { id: number; bytes: Uint8Array; maxSide: number; budget: number };

export type WorkerReply = { id: number; jpeg?: Uint8Array; error?: string; unavailable?: string };

let sharp: Promise<Sharp> | undefined;

process.on("message", (request: WorkerRequest) => void handle(request));
// The server went away (or stopped the worker): nothing is left to do.
process.on("disconnect", () => process.exit(0));

async function handle(request: WorkerRequest): Promise<void> {
  sharp ??= importSharp();
  let library: Sharp;
  try {
    library = await sharp;
  } catch (error) {
    return send({ id: request.id, unavailable: firstLine(error) });
  }
  if ("probe" in request) return send({ id: request.id });
  try {
    const bytes = Buffer.from(request.bytes.buffer, request.bytes.byteOffset, request.bytes.byteLength);
    const jpeg = await transformImage(library, bytes, { maxSide: request.maxSide, budget: request.budget });
    send({ id: request.id, jpeg });
  } catch (error) {
    const reason =
      error instanceof PreviewError ? error.message : `the image could not be decoded (${firstLine(error)}).`;
    send({ id: request.id, error: reason });
  }
}

function send(reply: WorkerReply): void {
  process.send?.(reply);
}

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return (message.split("\n")[0] ?? message).slice(0, 200);
}
