import { realpath, stat } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** Folders under the home directory allowed when GENERATION_ALLOWED_DIRS is unset (if they exist). */
export const DEFAULT_ALLOWED_HOME_FOLDERS = ["Pictures", "Downloads", "Desktop"] as const;

export interface AllowedDirsInput {
  /**
   * GENERATION_ALLOWED_DIRS already split (see `parseDirList`). `undefined` = unset: the defaults apply
   * (~/Pictures, ~/Downloads, ~/Desktop and the output folder). When set, it replaces the defaults
   * entirely, so `[]` (the variable set to "") allows no local folder but the client's roots.
   * Entries must be absolute; a leading `~/` is expanded to `home`.
   */
  configured: readonly string[] | undefined;
  /** MCP client roots: `file://` URIs or absolute paths. Other schemes are ignored. */
  roots: readonly string[];
  /** GENERATION_OUTPUT_DIR; allowed by default so generated images can be reused as references. */
  outputDir: string;
  home: string;
  /** Told about each entry that is dropped (not absolute, missing, not a folder), e.g. to log it. */
  onSkipped?: ((entry: string, reason: string) => void) | undefined;
}

/**
 * Splits a path list (GENERATION_ALLOWED_DIRS) on the platform's `path.delimiter`, dropping empty
 * entries. `undefined` stays `undefined` (unset = defaults), `""` gives `[]`.
 */
export function parseDirList(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  return value
    .split(path.delimiter)
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0);
}

/**
 * The folders local files may be read from, as real paths (symlinks resolved), without duplicates.
 * Entries that do not exist or are not folders are dropped, so resolve again per request: the output
 * folder may be created later and the client's roots can change.
 */
export async function resolveAllowedDirs(input: AllowedDirsInput): Promise<string[]> {
  const skip = (entry: string, reason: string): void => input.onSkipped?.(entry, reason);
  const candidates: string[] = [];
  if (input.configured === undefined) {
    for (const folder of DEFAULT_ALLOWED_HOME_FOLDERS) candidates.push(path.join(input.home, folder));
    candidates.push(expandHome(input.outputDir, input.home));
  } else {
    candidates.push(...input.configured.map((entry) => expandHome(entry, input.home)));
  }
  for (const root of input.roots) {
    const rootPath = rootToPath(root);
    if (rootPath === undefined) skip(root, "not a file:// URI or absolute path");
    else candidates.push(rootPath);
  }

  const allowed: string[] = [];
  for (const candidate of candidates) {
    // A relative entry would depend on the working directory the MCP client happened to start us in.
    if (!path.isAbsolute(candidate)) {
      skip(candidate, "not an absolute path");
      continue;
    }
    const real = await realDirectory(candidate);
    if (real === undefined) skip(candidate, "does not exist or is not a folder");
    else if (!allowed.includes(real)) allowed.push(real);
  }
  return allowed;
}

/**
 * The entries of a configured folder list (GENERATION_ALLOWED_DIRS, already absolute) that are not folders
 * now: resolveAllowedDirs drops them, so the start-up warning and the upload refusals name them instead.
 */
export async function missingFolders(configured: readonly string[]): Promise<string[]> {
  const found = await Promise.all(configured.map((entry) => realDirectory(entry)));
  return configured.filter((_, index) => found[index] === undefined);
}

/**
 * Whether `childReal` is `parentReal` or lies below it. Both must already be real, normalized paths;
 * the comparison adds a trailing separator so `/data/allowed-evil` is not inside `/data/allowed`.
 */
export function isInside(childReal: string, parentReal: string): boolean {
  if (childReal === parentReal) return true;
  const prefix = parentReal.endsWith(path.sep) ? parentReal : parentReal + path.sep;
  return childReal.startsWith(prefix);
}

/** Whether `childReal` is inside any of `parentsReal` (see `isInside`). */
export function isInsideAny(childReal: string, parentsReal: readonly string[]): boolean {
  return parentsReal.some((parent) => isInside(childReal, parent));
}

function expandHome(entry: string, home: string): string {
  if (entry === "~") return home;
  if (entry.startsWith("~/") || (path.sep === "\\" && entry.startsWith("~\\"))) {
    return path.join(home, entry.slice(2));
  }
  return entry;
}

function rootToPath(root: string): string | undefined {
  if (/^file:/i.test(root)) {
    try {
      return fileURLToPath(new URL(root));
    } catch {
      // Remote hosts and encoded separators are refused by fileURLToPath: not a local folder.
      return undefined;
    }
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(root)) return undefined;
  return path.isAbsolute(root) ? root : undefined;
}

async function realDirectory(candidate: string): Promise<string | undefined> {
  try {
    const real = await realpath(candidate);
    return (await stat(real)).isDirectory() ? real : undefined;
  } catch {
    // Missing or unreadable folders are dropped by design (reported through onSkipped by the caller).
    return undefined;
  }
}
