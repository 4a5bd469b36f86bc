/**
 * A path argument becomes an open handle on a regular file whose real path lies in an allowed folder, or a
 * refusal naming the parameter; whether a file outside the allowed folders exists is never revealed.
 */
import { constants, type Stats } from "node:fs";
import { lstat, open, readlink, realpath, type FileHandle } from "node:fs/promises";
import path from "node:path";

import { fix } from "../advice.js";
import { ValidationError } from "../api/errors.js";
import { expandHome, isInsideAny, missingFolders, realDirectory } from "./allowed-dirs.js";

export interface OpenInsideOptions {
  /** The allowed folders, ideally from `resolveAllowedDirs`; resolved again, missing ones ignored. */
  allowedDirs: readonly string[];
  /** The upload folders as configured (GENERATION_ALLOWED_DIRS): a refusal names those that do not exist. */
  configuredDirs?: readonly string[] | undefined;
  /** The tool parameter the path came from, named first in every refusal (e.g. "image_path"). */
  param: string;
  /** What a leading `~/` expands to. */
  home: string;
}

// O_NOFOLLOW refuses a last component swapped for a symlink after the checks, O_NONBLOCK a FIFO's block.
const OPEN_FLAGS =
  constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0);
// Symlinks followed while judging a path that does not resolve; realpath(3) gives up at 40 too.
const MAX_LINK_HOPS = 40;
const MAX_PATH_CHARS = 4096;

/**
 * Opens `input` once it is an absolute path (`~/` expanded, `%xx` never decoded) whose real path is in an
 * allowed folder, and a regular file (opening some devices has side effects) with one link (a hard link's
 * other names may lie outside), checked again on the handle.
 */
export async function openInside(input: unknown, opts: OpenInsideOptions) {
  const { param } = opts;
  const allowedDirs = (await Promise.all(opts.allowedDirs.map(realDirectory))).filter(
    (dir) => dir !== undefined,
  );
  const requested = checkPathText(input, param, opts.home);
  const shown = showPath(requested);
  const outside = async () =>
    outsideError(param, shown, allowedDirs, await missingFolders(opts.configuredDirs ?? []));
  const unreadable = (error: unknown) =>
    refuse(param, `${shown} ${describeFsError(errorCode(error))}. Check the path and call again.`);
  if (allowedDirs.length === 0) throw await outside();
  const real = await realpath(requested).catch(() => undefined);
  if (real === undefined) {
    // Judged by where it would lie: a missing file behind a symlink out reads like any outside path.
    const missing = await resolveUnresolved(requested);
    if (missing === undefined || !isInsideAny(missing.wouldBe, allowedDirs)) throw await outside();
    throw missingError(param, shown, missing);
  }
  if (!isInsideAny(real, allowedDirs)) throw await outside();
  const checked = await lstat(real).catch((error: unknown) => Promise.reject(unreadable(error)));
  if (!checked.isFile()) throw notRegularFile(param, shown, checked);
  const handle = await open(real, OPEN_FLAGS).catch((error: unknown) =>
    Promise.reject(errorCode(error) === "ELOOP" ? changedError(param, shown) : unreadable(error)),
  );
  try {
    const opened = await handle.stat();
    if (!opened.isFile()) throw notRegularFile(param, shown, opened);
    const same = opened.dev === checked.dev && opened.ino === checked.ino;
    if (!same || !(await openedInside(handle, real, allowedDirs))) throw changedError(param, shown);
    if (opened.nlink > 1) {
      throw refuse(
        param,
        `${shown} is a hard link (the file has ${opened.nlink} names), so its other names may lie outside the allowed folders; it was not read.`,
        "Copy the file into the allowed folder (a copy has a single name, unlike a hard link) and call again with the copy's path.",
      );
    }
    return { handle, requested, shown, size: opened.size };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** A refusal naming the parameter first; `nextStep` replaces the generic "fix the parameter". */
export function refuse(param: string, message: string, nextStep?: string): ValidationError {
  return new ValidationError(`${param}: ${message}`, nextStep === undefined ? {} : { nextStep });
}

export function changedError(param: string, shown: string): ValidationError {
  return refuse(
    param,
    `${shown} changed while it was being checked or read (it grew, shrank or was rewritten).`,
    "Wait until the program writing the file has finished saving it, then call again. The service did not receive a complete copy, and nothing was charged.",
  );
}

export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === "string" ? code : undefined;
}

function checkPathText(input: unknown, param: string, home: string): string {
  if (typeof input !== "string") throw refuse(param, "must be a string holding an absolute file path.");
  const give = "Give the absolute path of the image file.";
  if (input.length === 0) throw refuse(param, `is empty. ${give}`);
  if (input.length > MAX_PATH_CHARS)
    throw refuse(param, `is longer than ${MAX_PATH_CHARS} characters. ${give}`);
  if (input.includes("\0")) throw refuse(param, "contains a NUL byte. Give a plain absolute file path.");
  if (/^file:/i.test(input)) {
    throw refuse(param, `${showPath(input)} is a URL. Give a plain absolute file path, not a file:// URL.`);
  }
  const expanded = expandHome(input, home);
  if (expanded.startsWith("~")) {
    throw refuse(
      param,
      `${showPath(input)} starts with '~name', which is not expanded. Give the full absolute path instead.`,
    );
  }
  if (!path.isAbsolute(expanded)) {
    throw refuse(
      param,
      `${showPath(input)} is a relative path. Give the absolute path of the file (e.g. starting with / or ~/).`,
    );
  }
  return expanded;
}

/** Where a path that does not resolve would lie, with what is known about why it does not. */
interface UnresolvedPath {
  /** The path with every existing symlink resolved: a real folder followed by names that do not exist. */
  wouldBe: string;
  /** The error of the first name that could not be looked up (ENOENT, ENOTDIR, EACCES, ...). */
  code: string | undefined;
  /** When a folder above the file is missing, in the caller's own spelling: the deepest existing folder... */
  existing?: string;
  /** ...and the first missing one. */
  firstMissing?: string;
}

/** Resolves `requested` as far as it exists, following a dangling symlink; undefined for a symlink loop. */
async function resolveUnresolved(requested: string): Promise<UnresolvedPath | undefined> {
  let pending = requested;
  for (let hops = 0; hops <= MAX_LINK_HOPS; hops++) {
    let existing = pending;
    const rest: string[] = [];
    let real: string | undefined;
    while ((real = await realpath(existing).catch(() => undefined)) === undefined) {
      if (path.dirname(existing) === existing) return undefined;
      rest.unshift(path.basename(existing));
      existing = path.dirname(existing);
    }
    // Resolves now although it did not a moment ago: it appeared meanwhile; judge where it is.
    if (rest.length === 0) return { wouldBe: real, code: undefined };
    const first = path.join(real, rest[0]!);
    const stats = await lstat(first).catch((error: unknown) => errorCode(error));
    if (typeof stats === "string" || stats === undefined) {
      const own =
        hops === 0 && rest.length > 1 ? { existing, firstMissing: path.join(existing, rest[0]!) } : {};
      return { wouldBe: path.join(real, ...rest), code: stats, ...own };
    }
    // Not a link, so its path would have resolved a moment ago: it appeared meanwhile.
    if (!stats.isSymbolicLink()) return { wouldBe: path.join(real, ...rest), code: undefined };
    const target = await readlink(first).catch(() => undefined);
    if (target === undefined) return undefined;
    pending = path.resolve(real, target, ...rest.slice(1));
  }
  return undefined;
}

/** Says which folders are allowed, which configured ones (`missing`) do not exist, and every way to give access. */
function outsideError(
  param: string,
  shown: string,
  allowedDirs: readonly string[],
  missing: readonly string[],
): ValidationError {
  const viaBase64 =
    "If you already hold the image's bytes yourself, call upload_image with data_base64 and filename instead and use the url it returns.";
  const missingList = missing.map(showPath).join(", ");
  // A configured folder that does not exist is most often a typo or a folder not made yet: say so first.
  const create =
    missing.length === 0
      ? ""
      : `If the image is in ${missingList}, ask the user to create that folder or correct its spelling in the setting. `;
  if (allowedDirs.length === 0) {
    const why =
      missing.length === 0
        ? "none of the upload folders exists"
        : `the upload folders configured (${missingList}) do not exist`;
    return refuse(
      param,
      `${shown} cannot be read: no folder is allowed for uploads (${why}, and the client offers no roots).`,
      `${create}Ask the user to allow the image's folder, then call again: ${fix("allowed_dirs")}, or to add it as a root / workspace folder in a client that supports MCP roots. ${viaBase64}`,
    );
  }
  const alsoMissing =
    missing.length === 0 ? "" : ` Configured but not found on this machine: ${missingList}.`;
  return refuse(
    param,
    `${shown} is outside the allowed folders (${allowedDirs.join(", ")}), so it was not read.${alsoMissing}`,
    `${create}Ask the user which way to give access, then call again: (1) ${fix("allowed_dirs")}; (2) add the folder as a root / workspace folder in a client that supports MCP roots; or (3) move or copy the file into one of the allowed folders. ${viaBase64}`,
  );
}

function missingError(param: string, shown: string, missing: UnresolvedPath): ValidationError {
  const { code, existing, firstMissing } = missing;
  const what =
    code !== undefined && code !== "ENOENT"
      ? describeFsError(code)
      : firstMissing === undefined
        ? "does not exist"
        : `does not exist: the folder ${showPath(firstMissing)} does not exist either (the deepest existing folder on that path is ${showPath(existing ?? "")})`;
  return refuse(
    param,
    `${shown} ${what}.`,
    "Check the path: the spelling, the folder and the extension (.jpg / .jpeg / .png / .webp). List the folder's files if you can, then call again with the exact path.",
  );
}

function describeFsError(code: string | undefined): string {
  const known: Record<string, string> = {
    ENOENT: "does not exist",
    ENOTDIR: "does not exist: a part of the path is a file, not a folder",
    EACCES: "cannot be read (permission denied)",
    EPERM: "cannot be read (permission denied)",
    ELOOP: "has too many levels of symbolic links",
    ENAMETOOLONG: "is too long for the file system",
    ENXIO: "is a socket or device, not an image file",
  };
  return known[code ?? ""] ?? `cannot be read (${code ?? "unknown error"})`;
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
  return refuse(
    param,
    `${shown} is ${kind}, not an image file. Give the path of a JPG, PNG or WebP image file.`,
  );
}

// O_NOFOLLOW guards only the last component: on Linux the kernel tells where the descriptor really points.
async function openedInside(handle: FileHandle, real: string, allowedDirs: readonly string[]) {
  const target = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => undefined);
  if (target !== undefined) return isInsideAny(target, allowedDirs);
  // No /proc (other systems, some containers): the portable, weaker re-check.
  try {
    const [again, opened] = await Promise.all([realpath(real), handle.stat()]);
    const now = await lstat(again);
    return isInsideAny(again, allowedDirs) && now.dev === opened.dev && now.ino === opened.ino;
  } catch {
    return false;
  }
}

/** Quotes and cuts a path for a message: hostile paths may carry newlines or escapes meant for the model. */
export function showPath(value: string): string {
  return JSON.stringify(value.length > 200 ? `${value.slice(0, 200)}…` : value);
}
