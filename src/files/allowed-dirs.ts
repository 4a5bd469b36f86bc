/** The folders local files may be read from: the configured ones (or the defaults) and the client's roots. */
import { realpath, stat } from "node:fs/promises";
import { homedir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Config } from "../config/index.js";

const DEFAULT_ALLOWED_HOME_FOLDERS = ["Pictures", "Downloads", "Desktop"] as const;

interface AllowedDirsInput {
  /** GENERATION_ALLOWED_DIRS, split; unset: the home folders above and the output folder. */
  configured: readonly string[] | undefined;
  /** MCP client roots: `file://` URIs or absolute paths. Other schemes are ignored. */
  roots: readonly string[];
  /** GENERATION_OUTPUT_DIR; allowed by default so generated images can be reused as references. */
  outputDir: string;
  home: string;
  /** Told about each entry that is dropped (not absolute, missing, not a folder), e.g. to log it. */
  onSkipped?: ((entry: string, reason: string) => void) | undefined;
}

/** The allowed folders as real paths, without entries that are not folders now: resolved per request. */
export async function resolveAllowedDirs(input: AllowedDirsInput): Promise<string[]> {
  const candidates = [
    ...(
      input.configured ?? [...DEFAULT_ALLOWED_HOME_FOLDERS.map((name) => `~/${name}`), input.outputDir]
    ).map((entry) => expandHome(entry, input.home)),
    ...input.roots.map((root) => (/^file:/i.test(root) ? fileUrlPath(root) : undefined) ?? root),
  ];
  // A relative entry would depend on the working directory the MCP client happened to start us in.
  const reals = await Promise.all(candidates.map(realDirectory));
  candidates.forEach((candidate, index) => {
    if (reals[index] !== undefined) return;
    const why = path.isAbsolute(candidate) ? "does not exist or is not a folder" : "not an absolute path";
    input.onSkipped?.(candidate, why);
  });
  return [...new Set(reals.filter((real) => real !== undefined))];
}

/** The upload folders of a configuration that exist now, the client's roots aside (start-up and `check`). */
export function existingUploadFolders({ allowedDirs, outputDir }: Pick<Config, "allowedDirs" | "outputDir">) {
  return resolveAllowedDirs({ configured: allowedDirs, roots: [], outputDir, home: homedir() });
}

/** The configured entries that are not folders now: resolveAllowedDirs drops them, refusals name them. */
export async function missingFolders(configured: readonly string[]): Promise<string[]> {
  const found = await Promise.all(configured.map(realDirectory));
  return configured.filter((_, index) => found[index] === undefined);
}

/** Whether the real path `child` is `parent` or below it (`/data/allowed-evil` is not in `/data/allowed`). */
export function isInside(child: string, parent: string): boolean {
  return child === parent || child.startsWith(parent.endsWith(path.sep) ? parent : parent + path.sep);
}

export function isInsideAny(child: string, parents: readonly string[]): boolean {
  return parents.some((parent) => isInside(child, parent));
}

export function expandHome(entry: string, home: string): string {
  if (entry === "~") return home;
  const homeRelative = entry.startsWith("~/") || (path.sep === "\\" && entry.startsWith("~\\"));
  return homeRelative ? path.join(home, entry.slice(2)) : entry;
}

export async function realDirectory(candidate: string): Promise<string | undefined> {
  if (!path.isAbsolute(candidate)) return undefined;
  const real = await realpath(candidate).catch(() => undefined);
  return real !== undefined && (await stat(real).catch(() => undefined))?.isDirectory() ? real : undefined;
}

// Remote hosts and encoded separators are refused by fileURLToPath: not a local folder.
function fileUrlPath(root: string): string | undefined {
  try {
    return fileURLToPath(new URL(root));
  } catch {
    return undefined;
  }
}
