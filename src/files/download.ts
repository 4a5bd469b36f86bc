import { createHash, randomBytes } from "node:crypto";
import { constants, createWriteStream } from "node:fs";
import { copyFile, link, mkdir, open, readdir, unlink } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { fix } from "../advice.js";
import type { Agent, Dispatcher } from "undici";

import { AbortedError, GenerationError, NetworkError, TimeoutError } from "../api/errors.js";
import { headerValue } from "../api/headers.js";
import { NonPublicAddressError, checkPublicUrl, createPublicAgent } from "./public-address.js";
import type { MediaExtension } from "./sniff.js";
import { SNIFF_LENGTH, sniffMediaExtension } from "./sniff.js";

export interface DownloadMediaOptions extends FetchMediaOptions {
  /** Folder to save into; created (mode 0o700) when missing. */
  dir: string;
  /** Name stem chosen by the caller (e.g. from the task id); sanitized, never taken from the server. */
  baseName: string;
  /** Picks the extension when the bytes match no known media type: mp4 for video, png for image. */
  expected?: "video" | "image" | undefined;
}

export interface DownloadedMedia {
  /** Absolute path of the file holding the media: a new file, or an identical earlier one (`reused`). */
  path: string;
  bytes: number;
  /** SHA-256 of the bytes, lowercase hex. */
  sha256: string;
  /** True when `path` already held exactly these bytes and nothing new was written. */
  reused: boolean;
  /** The Content-Type header as received (informational; the extension comes from the bytes). */
  contentType: string | undefined;
}

const MAX_REDIRECTS = 3;
const MAX_NAME_SUFFIX = 100;
const HASH_CHUNK_BYTES = 1 << 20;
const MAX_BASE_NAME_CHARS = 100;
const DEFAULT_TIMEOUT_MS = 120_000;
const MAX_TIMER_MS = 2_147_483_647;
const LOCAL_SYSCALLS = new Set(["open", "write", "close", "fsync", "link", "mkdir", "copyfile", "unlink"]);
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const RETRY_DOWNLOAD =
  "Call get_status with download: true to try again (it gives a fresh media URL), or open the URL directly.";

/**
 * Downloads finished media to `dir` and returns where it landed. The request carries no credentials
 * (media may live on a third-party CDN) and reaches public addresses only, unless the host is in
 * `allowHosts` (checked on the URL and on every redirect hop, and again on each address DNS returns at
 * connect time); at most 3 redirects are followed, to http(s) only; the size is capped from
 * Content-Length and again while streaming. The file is named `sanitizeBaseName(baseName)` plus an
 * extension sniffed from the first bytes, written to a temporary file and linked into place without ever
 * replacing an existing file (`name-1.ext`, `name-2.ext` ... on collision). Saving is idempotent by
 * content: when `name.ext` or a numbered sibling already holds the same bytes, that path is returned with
 * `reused: true` and no new file is left. Any failure leaves no file behind.
 *
 * Errors: `AbortedError` when `signal` aborts, `TimeoutError`, `NetworkError`, `NonPublicAddressError`
 * (code `internal_error`) for a refused private target, and `GenerationError` with code `internal_error`
 * for non-2xx answers (with `status`), other refused addresses or redirects, oversize media and local
 * write failures.
 */
export async function downloadMedia(opts: DownloadMediaOptions): Promise<DownloadedMedia> {
  const name = sanitizeBaseName(opts.baseName);
  return withMediaResponse(
    opts,
    (shown, status) => `Downloading ${shown} failed: HTTP ${status}; nothing was saved.`,
    async (response, shown) => {
      let tempPath: string | undefined;
      try {
        await localStep(opts.dir, () => mkdir(opts.dir, { recursive: true, mode: 0o700 }));
        const temp = path.join(opts.dir, `.${name}.${randomBytes(8).toString("hex")}.part`);
        // Created here with "wx" so the cleanup below can never race a lazily opened stream.
        const handle = await localStep(opts.dir, () => open(temp, "wx"));
        tempPath = temp;

        let bytes = 0;
        const hash = createHash("sha256");
        const head: Buffer[] = [];
        let headLength = 0;
        await pipeline(
          response.body,
          async function* capAndSniff(source: AsyncIterable<Buffer>) {
            for await (const chunk of source) {
              bytes += chunk.length;
              if (bytes > opts.maxBytes) throw tooLarge(shown, opts.maxBytes);
              hash.update(chunk);
              if (headLength < SNIFF_LENGTH) {
                head.push(chunk);
                headLength += chunk.length;
              }
              yield chunk;
            }
          },
          createWriteStream(temp, { fd: handle }),
        );
        if (bytes === 0) {
          throw new GenerationError("internal_error", `${shown} answered with no data; nothing was saved.`, {
            nextStep: RETRY_DOWNLOAD,
          });
        }

        const extension = sniffMediaExtension(Buffer.concat(head)) ?? fallbackExtension(opts.expected);
        const sha256 = hash.digest("hex");
        const placed = await localStep(opts.dir, () =>
          placeIdempotently(temp, { dir: opts.dir, name, extension, bytes, sha256 }),
        );
        tempPath = undefined;
        await unlink(temp).catch(() => {
          // The media is safely in place; a leftover hidden .part link is harmless and not worth failing for.
        });
        return {
          path: path.resolve(placed.path),
          bytes,
          sha256,
          reused: placed.reused,
          contentType: headerValue(response.headers, "content-type"),
        };
      } catch (error) {
        if (tempPath !== undefined) await unlink(tempPath).catch(() => {});
        throw error;
      }
    },
  );
}

export interface FetchMediaOptions {
  /** The media address as the service gave it; only http: and https: are fetched. */
  url: string;
  maxBytes: number;
  signal?: AbortSignal | undefined;
  /** Deadline for the whole fetch, redirects included. Default 120 s. */
  timeoutMs?: number | undefined;
  /**
   * Hosts that may be fetched even on a loopback, private or link-local address: pass the configured
   * service's own host (the sandbox serves media on 127.0.0.1, like its API). Host names or IP literals,
   * no scheme or port; case-insensitive; IPv6 with or without brackets. Absent or empty: public addresses
   * only (see `public-address.ts`).
   */
  allowHosts?: readonly string[] | undefined;
}

/**
 * Fetches media into memory (for a preview) under the same guards as `downloadMedia`: no credentials,
 * public addresses only unless allowed, at most 3 redirects to http(s), the size capped from
 * Content-Length and while reading, one deadline for everything. Errors as for `downloadMedia`.
 */
export async function fetchMediaBytes(opts: FetchMediaOptions): Promise<Buffer> {
  return withMediaResponse(
    opts,
    (shown, status) => `${shown} answered HTTP ${status}.`,
    async (response, shown) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      for await (const chunk of response.body as AsyncIterable<Buffer>) {
        bytes += chunk.length;
        if (bytes > opts.maxBytes) {
          discard(response.body);
          throw tooLarge(shown, opts.maxBytes);
        }
        chunks.push(chunk);
      }
      return Buffer.concat(chunks, bytes);
    },
  );
}

/**
 * The guards both kinds of fetch share: the URL checked (http(s), public unless allowed), one deadline
 * for everything, the caller's signal, a private agent, bounded redirects, a 2xx answer whose declared
 * size fits. `use` reads the body; every failure leaves as `toDownloadError` describes it.
 */
async function withMediaResponse<T>(
  opts: FetchMediaOptions,
  statusMessage: (shown: string, status: number) => string,
  use: (response: Dispatcher.ResponseData, shown: string) => Promise<T>,
): Promise<T> {
  if (opts.signal?.aborted) throw new AbortedError();
  const startUrl = checkMediaUrl(opts.url, "The media address");
  const allowHosts = opts.allowHosts ?? [];
  checkPublicUrl(startUrl, allowHosts);
  const timeoutMs = clampTimeout(opts.timeoutMs);
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error("media deadline reached"));
  }, timeoutMs);
  const onCallerAbort = (): void => controller.abort(opts.signal?.reason);
  opts.signal?.addEventListener("abort", onCallerAbort, { once: true });
  // A private agent: whatever the API client installs globally (auth headers, interceptors) stays out.
  const agent = await createPublicAgent({ allowHosts, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  try {
    const { url, response } = await requestFollowingRedirects(startUrl, agent, allowHosts, controller.signal);
    const shown = showUrl(url);
    if (response.statusCode < 200 || response.statusCode > 299) {
      discard(response.body);
      throw new GenerationError("internal_error", statusMessage(shown, response.statusCode), {
        status: response.statusCode,
        nextStep: RETRY_DOWNLOAD,
      });
    }
    const declared = headerValue(response.headers, "content-length");
    if (declared !== undefined && /^\d+$/.test(declared) && Number(declared) > opts.maxBytes) {
      discard(response.body);
      throw tooLarge(shown, opts.maxBytes);
    }
    return await use(response, shown);
  } catch (error) {
    throw toDownloadError(error, {
      callerAborted: opts.signal?.aborted === true,
      timedOut,
      timeoutMs,
      shown: showUrl(startUrl),
    });
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener("abort", onCallerAbort);
    await agent.destroy();
  }
}

/**
 * A file name stem safe on every platform: only `A-Z a-z 0-9 . _ -`, other runs collapsed to `_`, no
 * leading (or trailing) dots, at most 100 characters, `media` when nothing is left.
 */
export function sanitizeBaseName(baseName: string): string {
  const cleaned = baseName
    .replace(/[^A-Za-z0-9._-]+/g, "_")
    .replace(/^\.+/, "")
    .slice(0, MAX_BASE_NAME_CHARS)
    .replace(/\.+$/, "");
  return cleaned.length > 0 ? cleaned : "media";
}

async function requestFollowingRedirects(
  start: URL,
  agent: Agent,
  allowHosts: readonly string[],
  signal: AbortSignal,
): Promise<{ url: URL; response: Dispatcher.ResponseData }> {
  let url = start;
  let from: URL | undefined;
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    // Only these headers: no Authorization, no cookies, nothing of the API client's.
    const response = await agent
      .request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: "GET",
        signal,
        headers: { accept: "*/*", "user-agent": "generation-mcp" },
      })
      .catch((error: unknown) => {
        throw inContext(error, url, from);
      });
    if (!REDIRECT_STATUSES.has(response.statusCode)) return { url, response };
    const location = headerValue(response.headers, "location");
    discard(response.body);
    if (location === undefined) {
      throw new GenerationError(
        "internal_error",
        `${showUrl(url)} answered HTTP ${response.statusCode} without a Location; nothing was saved.`,
        { status: response.statusCode, nextStep: RETRY_DOWNLOAD },
      );
    }
    from = url;
    url = checkMediaUrl(location, `The redirect from ${showUrl(url)}`, url);
    checkPublicUrl(url, allowHosts, `redirected from ${showUrl(from)}`);
  }
  throw new GenerationError(
    "internal_error",
    `Downloading ${showUrl(start)} was redirected more than ${MAX_REDIRECTS} times; nothing was saved.`,
    { nextStep: RETRY_DOWNLOAD },
  );
}

// The connect-time refusal knows only the host; the message should also say which URL, and which hop.
function inContext(error: unknown, url: URL, from: URL | undefined): unknown {
  if (!(error instanceof NonPublicAddressError)) return error;
  const hop = from === undefined ? "" : ` (redirected from ${showUrl(from)})`;
  return new NonPublicAddressError(`${showUrl(url)}${hop}`, error.detail, error.host, error.address);
}

function checkMediaUrl(raw: string, context: string, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(raw, base);
  } catch {
    throw refusedAddress(`${context} is not a valid URL; nothing was saved.`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw refusedAddress(
      `${context} leads to a ${url.protocol} address; only http and https are downloaded, nothing was saved.`,
    );
  }
  // Credentials in the address would become an Authorization header.
  url.username = "";
  url.password = "";
  return url;
}

interface Placement {
  dir: string;
  name: string;
  extension: string;
  bytes: number;
  sha256: string;
}

async function placeIdempotently(
  temp: string,
  target: Placement,
): Promise<{ path: string; reused: boolean }> {
  const { dir, name, extension } = target;
  // Every numbered name is looked at first: the user may have deleted some, and an identical copy may sit
  // after a gap.
  const present = new Set(await readdir(dir));
  for (let suffix = 0; suffix <= MAX_NAME_SUFFIX; suffix++) {
    const fileName = numberedName(name, extension, suffix);
    const candidate = path.join(dir, fileName);
    if (present.has(fileName) && (await holdsSameBytes(candidate, target))) {
      return { path: candidate, reused: true };
    }
  }
  for (let suffix = 0; suffix <= MAX_NAME_SUFFIX; suffix++) {
    const fileName = numberedName(name, extension, suffix);
    const candidate = path.join(dir, fileName);
    if (await linkExclusive(temp, candidate)) return { path: candidate, reused: false };
    // Taken since the listing, perhaps by a concurrent download of the same media.
    if (!present.has(fileName) && (await holdsSameBytes(candidate, target))) {
      return { path: candidate, reused: true };
    }
  }
  throw new GenerationError(
    "internal_error",
    `${dir} already holds ${name}.${extension} and ${MAX_NAME_SUFFIX} numbered copies; nothing was saved.`,
    { nextStep: `Ask the user to move or delete old downloads from ${dir}, then download again.` },
  );
}

function numberedName(name: string, extension: string, suffix: number): string {
  return suffix === 0 ? `${name}.${extension}` : `${name}-${suffix}.${extension}`;
}

/**
 * Whether `file` is a regular file (not a symlink, FIFO or folder) holding exactly the expected bytes;
 * only a file of the same size is hashed. A file that cannot be read does not count as the same: the
 * caller then moves on to another name, never overwriting it.
 */
async function holdsSameBytes(file: string, expected: Placement): Promise<boolean> {
  let handle: FileHandle | undefined;
  try {
    // O_NONBLOCK: opening a FIFO planted under the name must not hang the download.
    handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const stats = await handle.stat();
    if (!stats.isFile() || stats.size !== expected.bytes) return false;
    const hash = createHash("sha256");
    const buffer = Buffer.allocUnsafe(Math.min(expected.bytes, HASH_CHUNK_BYTES));
    let total = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, total);
      if (bytesRead === 0) break;
      total += bytesRead;
      if (total > expected.bytes) return false;
      hash.update(buffer.subarray(0, bytesRead));
    }
    return total === expected.bytes && hash.digest("hex") === expected.sha256;
  } catch {
    return false;
  } finally {
    await handle?.close().catch(() => {});
  }
}

// link() and COPYFILE_EXCL both fail with EEXIST instead of replacing, unlike rename().
async function linkExclusive(temp: string, candidate: string): Promise<boolean> {
  try {
    await link(temp, candidate);
    return true;
  } catch (error) {
    const code = errorCode(error);
    if (code === "EEXIST") return false;
    if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP" && code !== "ENOSYS") throw error;
  }
  // File systems without hard links (FAT, some network shares).
  try {
    await copyFile(temp, candidate, constants.COPYFILE_EXCL);
    return true;
  } catch (error) {
    if (errorCode(error) === "EEXIST") return false;
    await unlink(candidate).catch(() => {});
    throw error;
  }
}

async function localStep<T>(dir: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (error instanceof GenerationError) throw error;
    throw new GenerationError(
      "internal_error",
      `Could not save the download in ${dir} (${errorCode(error) ?? String(error)}).`,
      {
        cause: error,
        nextStep: `Ask the user to ${fix("output_dir")}, then download again.`,
      },
    );
  }
}

function toDownloadError(
  error: unknown,
  context: { callerAborted: boolean; timedOut: boolean; timeoutMs: number; shown: string },
): Error {
  if (context.callerAborted) return new AbortedError("The download was cancelled; nothing was saved.");
  if (error instanceof GenerationError) return error;
  const code = errorCode(error);
  if (
    context.timedOut ||
    code === "UND_ERR_HEADERS_TIMEOUT" ||
    code === "UND_ERR_BODY_TIMEOUT" ||
    code === "UND_ERR_CONNECT_TIMEOUT"
  ) {
    return new TimeoutError(
      `Downloading ${context.shown} did not finish within ${Math.round(context.timeoutMs / 1000)} s; nothing was saved.`,
      { cause: error, nextStep: RETRY_DOWNLOAD },
    );
  }
  if (isLocalFsError(error)) {
    return new GenerationError("internal_error", `Could not save the download (${code ?? String(error)}).`, {
      cause: error,
      nextStep: `Ask the user to ${fix("output_dir")}, then download again.`,
    });
  }
  const detail = error instanceof Error ? error.message : String(error);
  return new NetworkError(`Downloading ${context.shown} failed: ${detail}; nothing was saved.`, {
    cause: error,
    nextStep: RETRY_DOWNLOAD,
  });
}

// File system errors carry the path or the file syscall they concern; those are ours, not the network's.
function isLocalFsError(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  if ("path" in error) return true;
  return "syscall" in error && typeof error.syscall === "string" && LOCAL_SYSCALLS.has(error.syscall);
}

function tooLarge(shown: string, maxBytes: number): GenerationError {
  return new GenerationError(
    "internal_error",
    `${shown} is larger than the ${maxBytes}-byte download limit; nothing was saved.`,
    { nextStep: "Open the media URL directly instead of downloading it through the server." },
  );
}

function refusedAddress(message: string): GenerationError {
  return new GenerationError("internal_error", message, {
    nextStep: "Open the media URL yourself if you trust it; the server downloads only http(s) addresses.",
  });
}

// setTimeout wraps above 2^31-1 ms (firing at once) and undici wants whole, finite milliseconds.
function clampTimeout(timeoutMs: number | undefined): number {
  if (timeoutMs === undefined || Number.isNaN(timeoutMs)) return DEFAULT_TIMEOUT_MS;
  return Math.min(Math.max(Math.ceil(timeoutMs), 1), MAX_TIMER_MS);
}

function fallbackExtension(expected: DownloadMediaOptions["expected"]): MediaExtension | "bin" {
  if (expected === "video") return "mp4";
  if (expected === "image") return "png";
  return "bin";
}

// Destroying an unread undici body emits an abort error; it is our own decision, not a failure.
function discard(body: Dispatcher.ResponseData["body"]): void {
  body.on("error", () => {});
  body.destroy();
}

// Signed CDN addresses carry tokens in the query; messages and logs get origin and path only.
function showUrl(url: URL): string {
  const shown = `${url.origin}${url.pathname}`;
  return shown.length > 200 ? `${shown.slice(0, 200)}…` : shown;
}

function errorCode(error: unknown): string | undefined {
  if (typeof error === "object" && error !== null && "code" in error && typeof error.code === "string") {
    return error.code;
  }
  return undefined;
}
