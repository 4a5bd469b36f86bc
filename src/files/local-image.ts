/**
 * Images for upload, from a local path or base64: a JPG, PNG or WebP by content, at most 10 MB, whose
 * container ends where the image ends, hashed to recognise a repeated request. Every refusal is a
 * `ValidationError` whose message starts with the parameter's name.
 */
import { createHash } from "node:crypto";
import { once } from "node:events";
import type { FileHandle } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";

import type { UploadSource } from "../api/types.js";
import { MAX_UPLOAD_BYTES, type UploadMimeType } from "../models.js";
import { checkContainer } from "./image-container.js";
import { changedError, errorCode, openInside, refuse, type OpenInsideOptions } from "./local-path.js";
import { extensionFor, sniffImageType } from "./sniff.js";

/** An image that passed every check, ready to upload. The caller must `close()` it once done. */
export interface LocalImage extends UploadSource {
  contentType: UploadMimeType;
  /** Hex SHA-256 of the bytes. */
  sha256: string;
  /**
   * A fresh stream of exactly `size` bytes from byte 0; it errors with a ValidationError naming the
   * parameter instead if the file changed since it was checked. Throws once `close()` was called.
   */
  open(): Readable;
  /** Destroys the streams still open, waits until their pending reads are done, then closes the file. */
  close(): Promise<void>;
}

export interface OpenLocalImageOptions extends Omit<OpenInsideOptions, "home"> {
  /** Defaults to MAX_UPLOAD_BYTES (10 MiB). */
  maxBytes?: number | undefined;
  /** What a leading `~/` expands to; defaults to the user's home directory. */
  home?: string | undefined;
}

const CHUNK_BYTES = 64 * 1024;
const TYPES_TEXT = "a JPG, PNG or WebP image";

/** Opens a local image after the path checks of `openInside` and the content checks above. */
export async function openLocalImage(inputPath: unknown, opts: OpenLocalImageOptions): Promise<LocalImage> {
  const { param } = opts;
  const maxBytes = opts.maxBytes ?? MAX_UPLOAD_BYTES;
  const { handle, requested, shown, size } = await openInside(inputPath, {
    ...opts,
    home: opts.home ?? os.homedir(),
  });
  try {
    if (size === 0) throw refuse(param, `${shown} is empty (0 bytes). Give ${TYPES_TEXT} file.`);
    if (size > maxBytes) {
      throw refuse(
        param,
        `${shown} is ${size} bytes, over the ${limit(maxBytes)} upload limit. Resize or recompress the image and call again.`,
      );
    }
    // Read whole (at most maxBytes, and only while checking): type, container and hash see the same bytes.
    const bytes = Buffer.allocUnsafe(size);
    // Into one buffer of the file's size: the chunks are its parts, so the file is never held twice.
    for await (const chunk of readExactly(handle, size, param, shown, bytes)) void chunk;
    const image = inspect(bytes, param, shown, path.basename(requested));
    return { ...image, ...streams(handle, () => verified(handle, image, param, shown)) };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/**
 * Checks base64 image data the way `openLocalImage` checks a file: strict standard base64 (line breaks
 * tolerated, optionally behind a `data:image/...;base64,` prefix), its size bounded from the text length
 * before anything is decoded. `filename` only names the upload.
 */
export function imageFromBase64(
  data: unknown,
  filename: string | undefined,
  opts: { param: string; maxBytes?: number | undefined },
): LocalImage {
  const { param } = opts;
  const maxBytes = opts.maxBytes ?? MAX_UPLOAD_BYTES;
  if (typeof data !== "string") throw refuse(param, `must be a string of base64 data.`);
  let text = data;
  if (/^data:/i.test(text)) {
    const comma = text.indexOf(",");
    const header = comma > 0 && comma <= 200 ? text.slice(5, comma) : "";
    if (!/^image\/[a-z0-9.+-]+(;[a-z0-9-]+=[a-z0-9.+-]+)*;base64$/i.test(header)) {
      throw refuse(
        param,
        "starts with 'data:' but is not a 'data:image/...;base64,' URL. Send the plain base64 of the file, or that prefix followed by it.",
      );
    }
    text = text.slice(comma + 1);
  }
  const tooLarge = () =>
    refuse(
      param,
      `decodes to more than the ${limit(maxBytes)} upload limit. Resize or recompress the image and call again.`,
    );
  // Bounded before any copy or decode: 4 characters carry 3 bytes; whitespace gets a generous share.
  if (text.length > Math.ceil(maxBytes / 3) * 4 * 1.1 + 1024) throw tooLarge();
  const compact = text.replace(/[\t\n\r ]+/g, "");
  const empty = () => refuse(param, `is empty. Give ${TYPES_TEXT} encoded as base64.`);
  if (compact.length === 0) throw empty();
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) {
    throw refuse(
      param,
      "is not valid base64: only A-Z, a-z, 0-9, '+', '/' and trailing '=' padding are accepted (not the URL-safe alphabet). Encode the file with standard base64 and call again.",
    );
  }
  const padding = compact.length - compact.replace(/=+$/, "").length;
  if ((padding > 0 && compact.length % 4 !== 0) || compact.length % 4 === 1) {
    throw refuse(
      param,
      "is not valid base64: its length is wrong, so it was cut short. Send the whole file.",
    );
  }
  const size = Math.floor(((compact.length - padding) * 3) / 4);
  if (size > maxBytes) throw tooLarge();
  if (size === 0) throw empty();
  return imageFromBytes(Buffer.from(compact, "base64"), filename, param, "the decoded data");
}

/** Checks bytes already in memory the way `openLocalImage` checks a file; `shown` names them in a refusal. */
export function imageFromBytes(bytes: Buffer, filename: string | undefined, param: string, shown: string) {
  if (bytes.length > MAX_UPLOAD_BYTES)
    throw refuse(param, `${shown} is over the ${limit(MAX_UPLOAD_BYTES)} upload limit.`);
  return {
    ...inspect(bytes, param, shown, filename ?? ""),
    open: () => Readable.from([bytes], { objectMode: false }),
    close: async () => {},
  };
}

/**
 * The file name sent with an upload: control and format characters removed, characters that upset
 * multipart headers or file systems replaced, at most 100 characters before the extension, and the
 * extension always that of the sniffed type (fallback `image.<ext>`).
 */
export function sanitizeUploadFilename(name: string, contentType: UploadMimeType): string {
  const cleaned = name
    .replace(/[\p{Cc}\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/gu, "")
    .replace(/["\\/:*?<>|]/g, "_");
  const stem = Array.from(
    cleaned
      .replace(/\.[A-Za-z0-9]{1,5}$/, "")
      .trim()
      .replace(/^\.+/, ""),
  )
    .slice(0, 100)
    .join("")
    .trim()
    .replace(/\.+$/, "");
  return `${stem.length > 0 ? stem : "image"}.${extensionFor(contentType)}`;
}

function inspect(bytes: Buffer, param: string, shown: string, name: string) {
  const contentType = sniffImageType(bytes);
  if (contentType === undefined) {
    throw refuse(
      param,
      `${shown} is not ${TYPES_TEXT} (judged by its content, not its name). Convert it to JPG, PNG or WebP and call again.`,
    );
  }
  const problem = checkContainer(contentType, bytes);
  if (problem !== undefined) throw refuse(param, `${shown} ${problem}`);
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  return { filename: sanitizeUploadFilename(name, contentType), contentType, size: bytes.length, sha256 };
}

/**
 * `open` and `close` over one file handle: `close` destroys the streams still open and waits until each has
 * closed (a Readable.from stream closes once its generator returned, so no read of the handle is pending).
 */
function streams(handle: FileHandle, generate: () => AsyncGenerator<Buffer>) {
  const live = new Set<Readable>();
  let closing: Promise<void> | undefined;
  return {
    open() {
      if (closing !== undefined) throw new Error("LocalImage.open() called after close()");
      const stream = Readable.from(generate(), { objectMode: false });
      // Whoever reads the stream sees its errors; this keeps one nobody reads any more from crashing us.
      stream.on("error", () => {});
      live.add(stream.once("close", () => live.delete(stream)));
      return stream;
    },
    close() {
      closing ??= Promise.all([...live].map((stream) => once(stream.destroy(), "close"))).then(() =>
        handle.close(),
      );
      return closing;
    },
  };
}

// Holds back the last chunk until the whole content matched the checked hash, so a file rewritten in
// between never reaches the service complete: the upload fails instead.
async function* verified(
  handle: FileHandle,
  image: { size: number; sha256: string },
  param: string,
  shown: string,
) {
  const hash = createHash("sha256");
  let pending: Buffer | undefined;
  for await (const chunk of readExactly(handle, image.size, param, shown)) {
    hash.update(chunk);
    if (pending !== undefined) yield pending;
    pending = chunk;
  }
  if (hash.digest("hex") !== image.sha256) throw changedError(param, shown);
  if (pending !== undefined) yield pending;
}

/**
 * Reads exactly `size` bytes in bounded chunks (parts of `into`, when given) and fails if the file is now
 * shorter or longer. A failing read becomes a refusal naming the parameter, so the HTTP layer the stream
 * feeds does not take it for a network failure and retry.
 */
async function* readExactly(handle: FileHandle, size: number, param: string, shown: string, into?: Buffer) {
  const readAt = async (buffer: Buffer, position: number): Promise<number> => {
    try {
      return (await handle.read(buffer, 0, buffer.length, position)).bytesRead;
    } catch (error) {
      const why = `${shown} could not be read (${errorCode(error) ?? "read error"}).`;
      throw refuse(
        param,
        why,
        "Check that the file is readable (disk, permissions, network share), then call again.",
      );
    }
  };
  for (let position = 0; position < size;) {
    const length = Math.min(CHUNK_BYTES, size - position);
    const chunk = into?.subarray(position, position + length) ?? Buffer.allocUnsafe(length);
    const read = await readAt(chunk, position);
    if (read === 0) throw changedError(param, shown);
    position += read;
    yield chunk.subarray(0, read);
  }
  if ((await readAt(Buffer.alloc(1), size)) !== 0) throw changedError(param, shown);
}

function limit(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MB (${bytes} bytes)` : `${bytes}-byte`;
}
