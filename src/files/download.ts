/**
 * Fetching finished media, to memory (a preview) or to a file: no credentials (media may sit on a third-party
 * CDN), public addresses only (public-address.ts), at most 3 redirects, a size cap and one deadline.
 */
import { createHash, randomBytes } from "node:crypto";
import { constants, createWriteStream } from "node:fs";
import { copyFile, link, mkdir, open, readdir, unlink } from "node:fs/promises";
import path from "node:path";
import { buffer } from "node:stream/consumers";
import { pipeline } from "node:stream/promises";
import type { Agent, Dispatcher } from "undici";

import { fix } from "../advice.js";
import { AbortedError, GenerationError, NetworkError, TimeoutError } from "../api/errors.js";
import { capped } from "../api/http.js";
import { headerValue } from "../api/rate-budget.js";
import { joinSignals } from "../api/sleep.js";
import { errorCode } from "./local-path.js";
import { NonPublicAddressError, checkPublicUrl, createPublicAgent, showUrl } from "./public-address.js";
import { SNIFF_LENGTH, sniffMediaExtension } from "./sniff.js";

export interface FetchMediaOptions {
  /** The media address as the service gave it; only http: and https: are fetched. */
  url: string;
  maxBytes: number;
  signal?: AbortSignal | undefined;
  /** Deadline for the whole fetch, redirects included. Default 120 s. */
  timeoutMs?: number | undefined;
  /** Hosts fetched even on a non-public address: the configured service's own (no scheme or port). */
  allowHosts?: readonly string[] | undefined;
}

export interface DownloadMediaOptions extends FetchMediaOptions {
  /** Folder to save into; created (mode 0o700) when missing. */
  dir: string;
  /** Name stem chosen by the caller (e.g. from the task id); sanitized, never taken from the server. */
  baseName: string;
  /** Picks the extension when the bytes match no known media type: mp4 for video, png for image. */
  expected?: "video" | "image" | undefined;
}

type Response = Dispatcher.ResponseData;

const MAX_REDIRECTS = 3;
const MAX_NAME_SUFFIX = 100;
const DEFAULT_TIMEOUT_MS = 120_000;
const RETRY_DOWNLOAD =
  "Call get_status with download: true to try again (it gives a fresh media URL), or open the URL directly.";

/**
 * Downloads media to `dir` as `sanitizeBaseName(baseName)` plus an extension sniffed from the bytes, via a
 * private temporary file linked into place without ever replacing a file (`name-1.ext` ...); a name already
 * holding the same bytes is returned, `reused: true`. A failure leaves no file.
 */
export async function downloadMedia(opts: DownloadMediaOptions) {
  const name = sanitizeBaseName(opts.baseName);
  return fetchMedia(opts, async (body, response, shown) => {
    await mkdir(opts.dir, { recursive: true, mode: 0o700 });
    const temp = path.join(opts.dir, `.${name}.${randomBytes(8).toString("hex")}.part`);
    // Opened here with "wx", so the cleanup can never race a lazily opened stream.
    const handle = await open(temp, "wx");
    try {
      const hash = createHash("sha256");
      let head = Buffer.alloc(0);
      let bytes = 0;
      const tap = async function* (source: AsyncIterable<Uint8Array>) {
        for await (const chunk of source) {
          bytes += chunk.length;
          if (head.length < SNIFF_LENGTH) head = Buffer.concat([head, chunk]);
          hash.update(chunk);
          yield chunk;
        }
      };
      await pipeline(body, tap, createWriteStream(temp, { fd: handle }));
      if (bytes === 0) throw failure(`${shown} answered with no data; nothing was saved.`);
      const fallback = opts.expected === "video" ? "mp4" : opts.expected === "image" ? "png" : "bin";
      const extension = sniffMediaExtension(head) ?? fallback;
      const sha256 = hash.digest("hex");
      const placed = await place(temp, opts.dir, `${name}.${extension}`, { bytes, sha256 });
      const contentType = headerValue(response.headers, "content-type");
      return { path: path.resolve(placed.path), bytes, sha256, reused: placed.reused, contentType };
    } finally {
      // Once linked into place, the hidden .part name is only a second link to drop.
      await unlink(temp).catch(() => {});
    }
  });
}

/** Fetches media into memory (for a preview) under the same guards and errors as `downloadMedia`. */
export async function fetchMediaBytes(opts: FetchMediaOptions): Promise<Buffer> {
  return fetchMedia(opts, (body) => buffer(body));
}

/** A file name stem safe everywhere: `A-Za-z0-9._-`, no dots at the ends, 100 characters, else `media`. */
export function sanitizeBaseName(baseName: string): string {
  const cleaned = baseName
    .replace(/[^A-Za-z0-9._-]+/g, "_")
    .replace(/^\.+/, "")
    .slice(0, 100)
    .replace(/\.+$/, "");
  return cleaned.length > 0 ? cleaned : "media";
}

async function fetchMedia<T>(
  opts: FetchMediaOptions,
  read: (body: AsyncIterable<Uint8Array>, response: Response, shown: string) => Promise<T>,
): Promise<T> {
  if (opts.signal?.aborted) throw new AbortedError();
  const start = mediaUrl(opts.url, "The media address");
  const allowHosts = opts.allowHosts ?? [];
  checkPublicUrl(start, allowHosts);
  // Timers fire at once above 2^31-1 ms; NaN falls back to the default.
  const wanted = Math.ceil(opts.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const timeoutMs = Math.min(Math.max(wanted, 1), 2 ** 31 - 1) || DEFAULT_TIMEOUT_MS;
  const deadline = joinSignals([opts.signal], timeoutMs);
  // A private agent: whatever the API client installs globally (auth headers, interceptors) stays out.
  const agent = await createPublicAgent({ allowHosts });
  let response: Response | undefined;
  try {
    const reached = await follow(start, agent, allowHosts, deadline.signal);
    response = reached.response;
    const shown = showUrl(reached.url);
    const status = response.statusCode;
    if (status < 200 || status > 299) {
      throw failure(`${shown} answered HTTP ${status}; nothing was saved.`, RETRY_DOWNLOAD, status);
    }
    // Content-Length may be missing or lie: the body is capped as it is read too.
    const tooBig = () => tooLarge(shown, opts.maxBytes);
    if (Number(headerValue(response.headers, "content-length") ?? 0) > opts.maxBytes) throw tooBig();
    return await read(capped(response.body, opts.maxBytes, tooBig), response, shown);
  } catch (error) {
    if (opts.signal?.aborted) throw new AbortedError("The download was cancelled; nothing was saved.");
    if (error instanceof GenerationError) throw error;
    const code = errorCode(error);
    if (deadline.timedOut() || /^UND_ERR_\w*TIMEOUT$/.test(code ?? "")) {
      throw new TimeoutError(
        `Downloading ${showUrl(start)} did not finish within ${Math.round(timeoutMs / 1000)} s; nothing was saved.`,
        { cause: error, nextStep: RETRY_DOWNLOAD },
      );
    }
    if ("dir" in opts && isLocalFsError(error)) {
      const step = `Ask the user to ${fix("output_dir")}, then download again.`;
      throw failure(`Could not save the download in ${String(opts.dir)} (${String(code)}).`, step);
    }
    const detail = error instanceof Error ? error.message : String(error);
    throw new NetworkError(`Downloading ${showUrl(start)} failed: ${detail}; nothing was saved.`, {
      cause: error,
      nextStep: RETRY_DOWNLOAD,
    });
  } finally {
    deadline.release();
    // Destroying an unread body emits an abort error: our own decision, not a failure.
    response?.body.on("error", () => {}).destroy();
    await agent.destroy();
  }
}

async function follow(start: URL, agent: Agent, allowHosts: readonly string[], signal: AbortSignal) {
  let url = start;
  let hop: string | undefined;
  for (let hops = 0; hops <= MAX_REDIRECTS; hops++) {
    // Only these headers: no Authorization, no cookies, nothing of the API client's.
    const headers = { accept: "*/*", "user-agent": "generation-mcp" };
    const target = `${showUrl(url)}${hop === undefined ? "" : ` (${hop})`}`;
    const response = await agent
      .request({ origin: url.origin, path: `${url.pathname}${url.search}`, method: "GET", signal, headers })
      .catch((error: unknown) => {
        // The connect-time refusal knows only the host; the message also names the URL and the hop.
        if (!(error instanceof NonPublicAddressError)) throw error;
        throw new NonPublicAddressError(target, error.detail, error.host, error.address);
      });
    if (![301, 302, 303, 307, 308].includes(response.statusCode)) return { url, response };
    response.body.on("error", () => {}).destroy();
    const location = headerValue(response.headers, "location");
    if (location === undefined) {
      const message = `${showUrl(url)} answered HTTP ${response.statusCode} without a Location; nothing was saved.`;
      throw failure(message, RETRY_DOWNLOAD, response.statusCode);
    }
    hop = `redirected from ${showUrl(url)}`;
    url = mediaUrl(location, `The redirect from ${showUrl(url)}`, url);
    checkPublicUrl(url, allowHosts, hop);
  }
  throw failure(
    `Downloading ${showUrl(start)} was redirected more than ${MAX_REDIRECTS} times; nothing was saved.`,
  );
}

function mediaUrl(raw: string, context: string, base?: URL): URL {
  const url = URL.parse(raw, base?.href);
  if (url === null || !/^https?:$/.test(url.protocol)) {
    throw failure(
      url === null
        ? `${context} is not a valid URL; nothing was saved.`
        : `${context} leads to a ${url.protocol} address; only http and https are downloaded, nothing was saved.`,
      "Open the media URL yourself if you trust it; the server downloads only http(s) addresses.",
    );
  }
  // Credentials in the address would become an Authorization header.
  url.username = url.password = "";
  return url;
}

/** Links `temp` under the first free numbered name, unless one holds the same bytes (even after a gap). */
async function place(temp: string, dir: string, file: string, expected: { bytes: number; sha256: string }) {
  const present = new Set(await readdir(dir));
  const names = Array.from({ length: MAX_NAME_SUFFIX + 1 }, (_, n) =>
    n === 0 ? file : file.replace(/(\.\w+)$/, `-${n}$1`),
  );
  for (const name of names.filter((name) => present.has(name))) {
    if (await holdsSame(path.join(dir, name), expected)) return { path: path.join(dir, name), reused: true };
  }
  for (const name of names) {
    const candidate = path.join(dir, name);
    if (await linkExclusive(temp, candidate)) return { path: candidate, reused: false };
    // Taken since the listing, perhaps by a concurrent download of the same media.
    if (!present.has(name) && (await holdsSame(candidate, expected)))
      return { path: candidate, reused: true };
  }
  throw failure(
    `${dir} already holds ${file} and ${MAX_NAME_SUFFIX} numbered copies; nothing was saved.`,
    `Ask the user to move or delete old downloads from ${dir}, then download again.`,
  );
}

// A regular file (not a symlink, nor a FIFO that would hang the open) holding exactly these bytes.
async function holdsSame(file: string, expected: { bytes: number; sha256: string }): Promise<boolean> {
  const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(
    () => undefined,
  );
  try {
    const stats = await handle?.stat();
    if (handle === undefined || !stats?.isFile() || stats.size !== expected.bytes) return false;
    const hash = createHash("sha256");
    for await (const chunk of handle.createReadStream({ autoClose: false })) hash.update(chunk as Buffer);
    return hash.digest("hex") === expected.sha256;
  } catch {
    return false;
  } finally {
    await handle?.close().catch(() => {});
  }
}

// link() fails with EEXIST where rename() would replace; COPYFILE_EXCL where there are no hard links (FAT).
async function linkExclusive(temp: string, candidate: string): Promise<boolean> {
  try {
    await link(temp, candidate);
    return true;
  } catch (error) {
    if (errorCode(error) === "EEXIST") return false;
    if (!["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS"].includes(errorCode(error) ?? "")) throw error;
  }
  return copyFile(temp, candidate, constants.COPYFILE_EXCL).then(
    () => true,
    async (error: unknown) => {
      if (errorCode(error) === "EEXIST") return false;
      await unlink(candidate).catch(() => {});
      throw error;
    },
  );
}

// File system errors name the path or the file call they concern: ours, not the network's.
function isLocalFsError(error: unknown): boolean {
  const { path, syscall } = (error ?? {}) as { path?: unknown; syscall?: unknown };
  return (
    path !== undefined ||
    ["open", "write", "close", "fsync", "link", "mkdir", "copyfile"].includes(String(syscall))
  );
}

function tooLarge(shown: string, maxBytes: number): GenerationError {
  return failure(
    `${shown} is larger than the ${maxBytes}-byte download limit; nothing was saved.`,
    "Open the media URL directly instead of downloading it through the server.",
  );
}

function failure(message: string, nextStep = RETRY_DOWNLOAD, status?: number): GenerationError {
  return new GenerationError("internal_error", message, {
    nextStep,
    ...(status !== undefined && { status }),
  });
}
