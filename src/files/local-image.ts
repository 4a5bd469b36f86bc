import { createHash } from "node:crypto";
import { constants } from "node:fs";
import type { Stats } from "node:fs";
import { lstat, open, readlink, realpath } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";

import { GenerationError } from "../api/errors.js";
import type { ValidationError } from "../api/errors.js";
import type { UploadSource } from "../api/types.js";
import { MAX_UPLOAD_BYTES } from "../models.js";
import type { UploadMimeType } from "../models.js";
import { isInsideAny, missingFolders } from "./allowed-dirs.js";
import { checkContainer, createContainerCheck } from "./image-container.js";
import {
  checkPathText,
  describeFsError,
  errorCode,
  missingError,
  outsideError,
  refuse,
  resolveUnresolved,
  showPath,
} from "./local-path.js";
import { SNIFF_LENGTH, extensionFor, sniffImageType } from "./sniff.js";

/**
 * An image that passed every check, ready to upload. `close()` releases the file once every stream
 * `open()` returned has settled (no-op for base64).
 */
export interface LocalImage extends UploadSource {
  contentType: UploadMimeType;
  /** Hex SHA-256 of the bytes, to recognise a repeated request. */
  sha256: string;
  /**
   * A fresh stream of exactly `size` bytes from byte 0; it errors with a ValidationError naming the
   * parameter instead if the file changed since it was checked. Throws once `close()` was called.
   */
  open(): Readable;
  /** Destroys the streams still open, waits until their pending reads are done, then closes the file. */
  close(): Promise<void>;
}

export interface OpenLocalImageOptions {
  /** The allowed folders, ideally from `resolveAllowedDirs`; resolved again, missing ones ignored. */
  allowedDirs: readonly string[];
  /** The upload folders as configured (GENERATION_ALLOWED_DIRS): a refusal names those that do not exist. */
  configuredDirs?: readonly string[] | undefined;
  /** The tool parameter the path came from, named first in every refusal (e.g. "image_path"). */
  param: string;
  /** Defaults to MAX_UPLOAD_BYTES (10 MiB). */
  maxBytes?: number | undefined;
  /** What a leading `~/` expands to; defaults to the user's home directory. */
  home?: string | undefined;
}

export interface ImageFromBase64Options {
  /** The tool parameter holding the data (e.g. "data_base64"), named first in every refusal. */
  param: string;
  maxBytes?: number | undefined;
}

const CHUNK_BYTES = 64 * 1024;
const MAX_STEM_CHARS = 100;
const TYPES_TEXT = "a JPG, PNG or WebP image";
// O_NOFOLLOW refuses a final component swapped for a symlink after the checks; O_NONBLOCK keeps a FIFO
// swapped in from blocking the open. Both are absent on Windows, where the checks before still hold.
const OPEN_FLAGS =
  constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0);

/**
 * Opens a local image for upload after checking, in this order: `inputPath` is a non-empty string
 * without NUL bytes; it is absolute (relative paths are refused, since the server's working directory
 * means nothing to the user; a leading `~/` or a bare `~` is expanded to the home directory, any other
 * `~name` is refused; `file://` URLs are refused and `%xx` is never decoded); its real path (all
 * symlinks resolved) is inside one of `allowedDirs`; it is a regular file with a single link (a hard
 * link's other names may lie outside the allowed folders), opened by that real path with O_NOFOLLOW and
 * checked again on the open handle; its size is 1..maxBytes; its content is a JPG, PNG or WebP by magic
 * bytes whose container ends exactly where the image ends (see image-container.ts). Every refusal is a
 * `ValidationError` whose message starts with `param`. Whether a file outside the allowed folders
 * exists is never revealed; a missing file inside them is reported as missing.
 *
 * The caller must `close()` the result once the upload is done.
 */
export async function openLocalImage(inputPath: unknown, opts: OpenLocalImageOptions): Promise<LocalImage> {
  const { param } = opts;
  const maxBytes = opts.maxBytes ?? MAX_UPLOAD_BYTES;
  const allowedDirs = await realAllowedDirs(opts.allowedDirs);
  const requested = checkPathText(inputPath, param, opts.home ?? os.homedir());
  const shown = showPath(requested);
  const outside = async (): Promise<ValidationError> =>
    outsideError(param, shown, allowedDirs, await missingFolders(opts.configuredDirs ?? []));
  if (allowedDirs.length === 0) throw await outside();

  let real: string;
  try {
    real = await realpath(requested);
  } catch {
    // Judged by where the path would lie once its existing part is resolved: a missing file behind a
    // symlink out of the allowed folders reads the same as any outside path.
    const missing = await resolveUnresolved(requested);
    if (missing === undefined || !isInsideAny(missing.wouldBe, allowedDirs)) throw await outside();
    throw missingError(param, shown, missing);
  }
  if (!isInsideAny(real, allowedDirs)) throw await outside();

  let checked: Stats;
  try {
    checked = await lstat(real);
  } catch (error) {
    throw refuse(param, `${shown} ${describeFsError(errorCode(error))}. Check the path and call again.`);
  }
  // Refused before opening: opening some devices has side effects.
  if (!checked.isFile()) throw notRegularFile(param, shown, checked);

  let handle: FileHandle;
  try {
    handle = await open(real, OPEN_FLAGS);
  } catch (error) {
    if (errorCode(error) === "ELOOP") throw changedError(param, shown);
    throw refuse(param, `${shown} ${describeFsError(errorCode(error))}. Check the path and call again.`);
  }

  try {
    const opened = await handle.stat();
    if (!opened.isFile()) throw notRegularFile(param, shown, opened);
    if (opened.dev !== checked.dev || opened.ino !== checked.ino) throw changedError(param, shown);
    if (!(await openedInside(handle, real, allowedDirs))) throw changedError(param, shown);
    if (opened.nlink > 1) throw hardLinkError(param, shown, opened.nlink);

    const size = opened.size;
    if (size === 0) throw refuse(param, `${shown} is empty (0 bytes). Give ${TYPES_TEXT} file.`);
    if (size > maxBytes) throw tooLarge(param, shown, size, maxBytes);

    const header = Buffer.alloc(Math.min(SNIFF_LENGTH, size));
    await handle.read(header, 0, header.length, 0);
    const contentType = sniffImageType(header);
    if (contentType === undefined) throw notAnImage(param, shown);

    // One pass over the file: the hash and the container check see the same bytes.
    const hash = createHash("sha256");
    const container = createContainerCheck(contentType, size);
    // One reused buffer: neither keeps a chunk, so this pass allocates 64 KiB whatever the file's size.
    const scratch = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, size));
    const failure = readFailure(param, shown);
    for await (const chunk of readExactly(handle, size, failure, scratch)) {
      hash.update(chunk);
      container.update(chunk);
    }
    const problem = container.finish();
    if (problem !== undefined) throw refuse(param, `${shown} ${problem}`);
    const sha256 = hash.digest("hex");

    return {
      filename: sanitizeUploadFilename(path.basename(requested), contentType),
      contentType,
      size,
      sha256,
      ...trackedStreams(handle, () => verifiedStream(handle, size, sha256, failure)),
    };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/**
 * Checks base64 image data the way `openLocalImage` checks a file: strict standard base64 (A-Z a-z
 * 0-9 + /, optional `=` padding, line breaks tolerated), optionally behind a `data:image/...;base64,`
 * prefix; the size is bounded from the text length before anything is decoded; the type comes from the
 * decoded bytes, and the container must end where the image ends. `filename` only names the upload
 * (sanitized, extension replaced by the real type).
 */
export function imageFromBase64(
  data: unknown,
  filename: string | undefined,
  opts: ImageFromBase64Options,
): LocalImage {
  const { param } = opts;
  const maxBytes = opts.maxBytes ?? MAX_UPLOAD_BYTES;
  if (typeof data !== "string") throw refuse(param, `must be a string of base64 data.`);

  let text = data;
  if (/^data:/i.test(text)) text = stripDataUrlPrefix(text, param);

  // Bound before any copy or decode: 4 characters carry 3 bytes; whitespace is allowed a generous share.
  const maxEncodedChars = Math.ceil(maxBytes / 3) * 4;
  if (text.length > maxEncodedChars * 1.1 + 1024) throw tooLargeBase64(param, maxBytes);
  const compact = text.replace(/[\t\n\r ]+/g, "");
  if (compact.length === 0) throw refuse(param, `is empty. Give ${TYPES_TEXT} encoded as base64.`);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) {
    throw refuse(
      param,
      "is not valid base64: only A-Z, a-z, 0-9, '+', '/' and trailing '=' padding are accepted (not the URL-safe alphabet). Encode the file with standard base64 and call again.",
    );
  }
  const padding = compact.endsWith("==") ? 2 : compact.endsWith("=") ? 1 : 0;
  if ((padding > 0 && compact.length % 4 !== 0) || compact.length % 4 === 1) {
    throw refuse(
      param,
      "is not valid base64: its length is wrong, so it was cut short. Send the whole file.",
    );
  }
  const size = Math.floor(((compact.length - padding) * 3) / 4);
  if (size > maxBytes) throw tooLargeBase64(param, maxBytes);
  if (size === 0) throw refuse(param, `is empty. Give ${TYPES_TEXT} encoded as base64.`);

  const bytes = Buffer.from(compact, "base64");
  const contentType = sniffImageType(bytes.subarray(0, SNIFF_LENGTH));
  if (contentType === undefined) throw notAnImage(param, "the decoded data");
  const problem = checkContainer(contentType, bytes);
  if (problem !== undefined) throw refuse(param, `the decoded data ${problem}`);

  return {
    filename: sanitizeUploadFilename(filename ?? "", contentType),
    contentType,
    size: bytes.length,
    sha256: createHash("sha256").update(bytes).digest("hex"),
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
  let cleaned = "";
  for (const char of name) {
    const code = char.codePointAt(0)!;
    if (isInvisible(code)) continue;
    cleaned += '"\\/:*?<>|'.includes(char) ? "_" : char;
  }
  let stem = cleaned
    .replace(/\.[A-Za-z0-9]{1,5}$/, "")
    .trim()
    .replace(/^\.+/, "");
  stem = Array.from(stem).slice(0, MAX_STEM_CHARS).join("").trim().replace(/\.+$/, "");
  return `${stem.length > 0 ? stem : "image"}.${extensionFor(contentType)}`;
}

/**
 * `open` and `close` over one file handle. Every stream is tracked until it has closed: a Readable.from
 * stream emits 'close' only after its generator returned, so after 'close' no read of the handle is
 * pending. `close()` destroys what is still open, waits for those 'close' events, and only then closes
 * the handle: closing it under a pending read fails that read with EBADF.
 */
function trackedStreams(
  handle: FileHandle,
  generate: () => AsyncGenerator<Buffer, void, undefined>,
): Pick<LocalImage, "open" | "close"> {
  const live = new Map<Readable, Promise<void>>();
  let closing: Promise<void> | undefined;
  return {
    open() {
      if (closing !== undefined) throw new Error("LocalImage.open() called after close()");
      const stream = Readable.from(generate(), { objectMode: false });
      // Whoever reads the stream sees its error through its own listener or iterator; this one only
      // keeps an error that nobody reads any more (after the reader let go) from crashing the process.
      stream.on("error", () => {});
      const closed = new Promise<void>((resolve) => stream.once("close", resolve));
      live.set(stream, closed);
      void closed.then(() => live.delete(stream));
      return stream;
    },
    close() {
      closing ??= (async () => {
        for (const stream of live.keys()) stream.destroy();
        await Promise.all(live.values());
        await handle.close();
      })();
      return closing;
    },
  };
}

/**
 * Reads exactly `size` bytes in bounded chunks and fails if the file is now shorter or longer. With
 * `scratch`, every chunk is a view of that one buffer, valid only until the next one is read; without
 * it every chunk is a fresh buffer, which a consumer may keep (a socket write queue does).
 */
async function* readExactly(
  handle: FileHandle,
  size: number,
  failure: ReadFailure,
  scratch?: Buffer,
): AsyncGenerator<Buffer, void, undefined> {
  let position = 0;
  while (position < size) {
    const length = Math.min(CHUNK_BYTES, size - position);
    const buffer = scratch ?? Buffer.allocUnsafe(length);
    const bytesRead = await readAt(handle, buffer, length, position, failure);
    if (bytesRead === 0) throw failure.changed();
    position += bytesRead;
    yield buffer.subarray(0, bytesRead);
  }
  if ((await readAt(handle, Buffer.alloc(1), 1, size, failure)) !== 0) throw failure.changed();
}

interface ReadFailure {
  changed: () => ValidationError;
  unreadable: (error: unknown) => ValidationError;
}

function readFailure(param: string, shown: string): ReadFailure {
  return {
    changed: () => changedError(param, shown),
    unreadable: (error) =>
      refuse(
        param,
        `${shown} could not be read (${errorCode(error) ?? "read error"}).`,
        "Check that the file is readable (disk, permissions, network share), then call again.",
      ),
  };
}

// A failing read becomes a refusal naming the parameter, so an I/O error is not mistaken for a network
// failure (and retried) by the HTTP layer the stream feeds.
async function readAt(
  handle: FileHandle,
  buffer: Buffer,
  length: number,
  position: number,
  failure: ReadFailure,
): Promise<number> {
  try {
    return (await handle.read(buffer, 0, length, position)).bytesRead;
  } catch (error) {
    if (error instanceof GenerationError) throw error;
    throw failure.unreadable(error);
  }
}

// Holds back the last chunk until the whole content matched the checked hash, so a file rewritten in
// between never reaches the service complete: the upload fails instead.
async function* verifiedStream(
  handle: FileHandle,
  size: number,
  sha256: string,
  failure: ReadFailure,
): AsyncGenerator<Buffer, void, undefined> {
  const hash = createHash("sha256");
  let pending: Buffer | undefined;
  for await (const chunk of readExactly(handle, size, failure)) {
    hash.update(chunk);
    if (pending !== undefined) yield pending;
    pending = chunk;
  }
  if (hash.digest("hex") !== sha256) throw failure.changed();
  if (pending !== undefined) yield pending;
}

// O_NOFOLLOW guards only the last component; a folder on the way swapped for a symlink between the
// checks and the open would slip through. On Linux the kernel tells where the descriptor really points.
async function openedInside(
  handle: FileHandle,
  real: string,
  allowedDirs: readonly string[],
): Promise<boolean> {
  if (process.platform === "linux") {
    try {
      const target = await readlink(`/proc/self/fd/${handle.fd}`);
      return isInsideAny(target, allowedDirs);
    } catch {
      // No /proc (some containers): fall through to the portable, weaker re-check.
    }
  }
  try {
    const [again, opened] = await Promise.all([realpath(real), handle.stat()]);
    const now = await lstat(again);
    return isInsideAny(again, allowedDirs) && now.dev === opened.dev && now.ino === opened.ino;
  } catch {
    return false;
  }
}

// Callers should pass real paths already; resolving again costs little and keeps an alias such as
// macOS's /tmp -> /private/tmp from refusing every file.
async function realAllowedDirs(dirs: readonly string[]): Promise<string[]> {
  const resolved = await Promise.all(
    dirs.filter((dir) => path.isAbsolute(dir)).map((dir) => realpath(dir).catch(() => undefined)),
  );
  return resolved.filter((dir): dir is string => dir !== undefined);
}

function stripDataUrlPrefix(text: string, param: string): string {
  const comma = text.indexOf(",");
  const header = comma > 0 && comma <= 200 ? text.slice(5, comma) : "";
  if (!/^image\/[a-z0-9.+-]+(;[a-z0-9-]+=[a-z0-9.+-]+)*;base64$/i.test(header)) {
    throw refuse(
      param,
      "starts with 'data:' but is not a 'data:image/...;base64,' URL. Send the plain base64 of the file, or that prefix followed by it.",
    );
  }
  return text.slice(comma + 1);
}

function isInvisible(code: number): boolean {
  return (
    code < 0x20 ||
    (code >= 0x7f && code <= 0x9f) ||
    (code >= 0x200b && code <= 0x200f) ||
    (code >= 0x202a && code <= 0x202e) ||
    (code >= 0x2066 && code <= 0x2069) ||
    code === 0xfeff
  );
}

function notRegularFile(param: string, shown: string, stats: Stats): ValidationError {
  const kind = stats.isDirectory()
    ? "a folder"
    : stats.isFIFO()
      ? "a pipe (FIFO)"
      : stats.isSocket()
        ? "a socket"
        : stats.isCharacterDevice() || stats.isBlockDevice()
          ? "a device"
          : "not a regular file";
  return refuse(param, `${shown} is ${kind}, not an image file. Give the path of ${TYPES_TEXT} file.`);
}

function changedError(param: string, shown: string): ValidationError {
  return refuse(
    param,
    `${shown} changed while it was being checked or read (it grew, shrank or was rewritten).`,
    "Wait until the program writing the file has finished saving it, then call again. The service did not receive a complete copy, and nothing was charged.",
  );
}

function hardLinkError(param: string, shown: string, links: number): ValidationError {
  return refuse(
    param,
    `${shown} is a hard link (the file has ${links} names), so its other names may lie outside the allowed folders; it was not read.`,
    "Copy the file into the allowed folder (a copy has a single name, unlike a hard link) and call again with the copy's path.",
  );
}

function tooLarge(param: string, shown: string, size: number, maxBytes: number): ValidationError {
  return refuse(
    param,
    `${shown} is ${size} bytes, over the ${describeBytes(maxBytes)} upload limit. Resize or recompress the image and call again.`,
  );
}

function tooLargeBase64(param: string, maxBytes: number): ValidationError {
  return refuse(
    param,
    `decodes to more than the ${describeBytes(maxBytes)} upload limit. Resize or recompress the image and call again.`,
  );
}

function notAnImage(param: string, shown: string): ValidationError {
  return refuse(
    param,
    `${shown} is not ${TYPES_TEXT} (judged by its content, not its name). Convert it to JPG, PNG or WebP and call again.`,
  );
}

function describeBytes(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MB (${bytes} bytes)` : `${bytes}-byte`;
}
