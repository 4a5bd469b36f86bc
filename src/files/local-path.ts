/**
 * The path side of local file intake: the text checks of a path argument, how a path that does not
 * resolve is judged (inside or outside the allowed folders), and the refusals a model can act on.
 */
import { fix } from "../advice.js";
import { lstat, readlink, realpath } from "node:fs/promises";
import path from "node:path";

import { ValidationError } from "../api/errors.js";

const MAX_PATH_CHARS = 4096;
const SHOWN_PATH_CHARS = 200;
// Symlinks followed while judging a path that does not resolve; realpath(3) gives up at 40 too.
const MAX_LINK_HOPS = 40;

/** A refusal naming the parameter first; `nextStep` replaces the generic "fix the parameter". */
export function refuse(param: string, message: string, nextStep?: string): ValidationError {
  return new ValidationError(`${param}: ${message}`, nextStep === undefined ? {} : { nextStep });
}

/**
 * Checks the text of a path argument and returns it absolute: a non-empty string without NUL bytes,
 * not a `file:` URL (and `%xx` is never decoded), `~/` or a bare `~` expanded to `home`, any other
 * `~name` refused, relative paths refused (the server's working directory means nothing to the user).
 */
export function checkPathText(input: unknown, param: string, home: string): string {
  if (typeof input !== "string") throw refuse(param, "must be a string holding an absolute file path.");
  if (input.length === 0) throw refuse(param, "is empty. Give the absolute path of the image file.");
  if (input.length > MAX_PATH_CHARS) {
    throw refuse(
      param,
      `is longer than ${MAX_PATH_CHARS} characters. Give the absolute path of the image file.`,
    );
  }
  if (input.includes("\0")) throw refuse(param, "contains a NUL byte. Give a plain absolute file path.");
  if (/^file:/i.test(input)) {
    throw refuse(param, `${showPath(input)} is a URL. Give a plain absolute file path, not a file:// URL.`);
  }
  let expanded = input;
  if (input === "~") expanded = home;
  else if (input.startsWith("~/") || (path.sep === "\\" && input.startsWith("~\\"))) {
    expanded = path.join(home, input.slice(2));
  } else if (input.startsWith("~")) {
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
export interface UnresolvedPath {
  /** The path with every existing symlink resolved: a real folder followed by names that do not exist. */
  wouldBe: string;
  /** The error of the first name that could not be looked up (ENOENT, ENOTDIR, EACCES, ...). */
  code: string | undefined;
  /** In the caller's own spelling: the deepest folder that exists, when a folder above the file is missing. */
  existingAncestor?: string | undefined;
  /** In the caller's own spelling: the first name that does not exist, when it is a folder above the file. */
  firstMissing?: string | undefined;
}

/**
 * Resolves `requested` (absolute) as far as it exists: the nearest existing ancestor by its real path,
 * then, when the first missing name is a dangling symlink, its target the same way. The result can be
 * judged against the allowed folders without revealing anything about paths outside them: a dangling
 * link pointing outside reads as outside, like the file it would name. `undefined` for a symlink loop.
 */
export async function resolveUnresolved(requested: string): Promise<UnresolvedPath | undefined> {
  let pending = requested;
  for (let hops = 0; hops <= MAX_LINK_HOPS; hops++) {
    let existing = pending;
    const rest: string[] = [];
    let real: string | undefined;
    for (;;) {
      real = await realpath(existing).catch(() => undefined);
      if (real !== undefined) break;
      const parent = path.dirname(existing);
      if (parent === existing) return undefined;
      rest.unshift(path.basename(existing));
      existing = parent;
    }
    // Resolves now although it did not a moment ago: it appeared meanwhile; judge where it is.
    if (rest.length === 0) return { wouldBe: real, code: undefined };
    const first = path.join(real, rest[0]!);
    const ownSpelling = hops === 0 && rest.length > 1;
    let isLink: boolean;
    try {
      isLink = (await lstat(first)).isSymbolicLink();
    } catch (error) {
      return {
        wouldBe: path.join(real, ...rest),
        code: errorCode(error),
        ...(ownSpelling && { existingAncestor: existing, firstMissing: path.join(existing, rest[0]!) }),
      };
    }
    // Not a link, so its path would have resolved a moment ago: it appeared meanwhile.
    if (!isLink) return { wouldBe: path.join(real, ...rest), code: undefined };
    const target = await readlink(first).catch(() => undefined);
    if (target === undefined) return undefined;
    pending = path.resolve(real, target, ...rest.slice(1));
  }
  return undefined;
}

/**
 * The refusal for a path outside the allowed folders (or when none exists). It says which folders are
 * allowed, which configured ones (`missing`) do not exist, and every way to give access, and never whether
 * the file exists.
 */
export function outsideError(
  param: string,
  shown: string,
  allowedDirs: readonly string[],
  missing: readonly string[] = [],
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

/** The refusal for a path inside an allowed folder that does not exist (or cannot be looked up). */
export function missingError(param: string, shown: string, missing: UnresolvedPath): ValidationError {
  const check =
    "Check the path: the spelling, the folder and the extension (.jpg / .jpeg / .png / .webp). List the folder's files if you can, then call again with the exact path.";
  let what: string;
  if (missing.code === "ENOTDIR") what = "does not exist: a part of the path is a file, not a folder";
  else if (missing.code === undefined || missing.code === "ENOENT") {
    what =
      missing.firstMissing === undefined
        ? "does not exist"
        : `does not exist: the folder ${showPath(missing.firstMissing)} does not exist either (the deepest existing folder on that path is ${showPath(missing.existingAncestor ?? "")})`;
  } else what = describeFsError(missing.code);
  return refuse(param, `${shown} ${what}.`, check);
}

export function describeFsError(code: string | undefined): string {
  switch (code) {
    case "ENOENT":
      return "does not exist";
    case "ENOTDIR":
      return "does not exist (a part of the path is not a folder)";
    case "EACCES":
    case "EPERM":
      return "cannot be read (permission denied)";
    case "ELOOP":
      return "has too many levels of symbolic links";
    case "ENAMETOOLONG":
      return "is too long for the file system";
    case "ENXIO":
      return "is a socket or device, not an image file";
    default:
      return `cannot be read (${code ?? "unknown error"})`;
  }
}

export function errorCode(error: unknown): string | undefined {
  if (typeof error === "object" && error !== null && "code" in error && typeof error.code === "string") {
    return error.code;
  }
  return undefined;
}

/** Quotes and cuts a path for a message: hostile paths may carry newlines or escapes meant for the model. */
export function showPath(value: string): string {
  const cut = value.length > SHOWN_PATH_CHARS ? `${value.slice(0, SHOWN_PATH_CHARS)}…` : value;
  return JSON.stringify(cut);
}
