/**
 * What makes a build fresh: a hash of every file the build reads, recorded in dist/.build-stamp by
 * scripts/build.mjs once a build succeeds. `npm test` (pretest) and `npm pack` (prepack) rebuild only when
 * the hash of the inputs today differs from the stamp, so CI builds once and a newcomer never tests a
 * stale bin.
 */
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";

/** Relative to the repository root: the stamp, and the build outputs that must exist beside it. */
export const STAMP_FILE = "dist/.build-stamp";
export const BUILD_OUTPUTS = ["dist/mcp/tool-list.js", "dist/bundle/cli.js"];

// Folders read whole, and single files: the sources, how they are compiled and bundled, and the
// dependency versions the bundle inlines (package-lock.json).
const INPUT_DIRS = ["src"];
const INPUT_FILES = [
  "package.json",
  "package-lock.json",
  "scripts/build.mjs",
  "scripts/build-stamp.mjs",
  "scripts/bundle.mjs",
  "scripts/viewer.mjs",
];
const isTsconfig = (name) => /^tsconfig(\..+)?\.json$/.test(name);

function walk(root, dir, into) {
  for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) walk(root, rel, into);
    else if (entry.isFile()) into.push(rel);
  }
}

/** The build's input files under `root`, as sorted POSIX paths relative to it. */
export function listBuildInputs(root) {
  const files = [];
  for (const dir of INPUT_DIRS) if (existsSync(path.join(root, dir))) walk(root, dir, files);
  for (const file of INPUT_FILES) if (existsSync(path.join(root, file))) files.push(file);
  for (const name of readdirSync(root)) if (isTsconfig(name)) files.push(name);
  return files.sort();
}

/** sha256 over every input's path and bytes: a rename, an added or removed file all change it. */
export function hashBuildInputs(root) {
  const hash = createHash("sha256");
  for (const file of listBuildInputs(root)) {
    const bytes = readFileSync(path.join(root, file));
    hash.update(`${file}\0${bytes.length}\0`);
    hash.update(bytes);
  }
  return hash.digest("hex");
}

/**
 * Whether the build under `root` matches its inputs: `{ fresh, hash, reason }`, where `reason` says
 * why a build is needed (or that none is).
 */
export function buildState(root) {
  const hash = hashBuildInputs(root);
  const missing = BUILD_OUTPUTS.find((file) => !existsSync(path.join(root, file)));
  if (missing) return { fresh: false, hash, reason: `${missing} is missing` };
  const stampPath = path.join(root, STAMP_FILE);
  if (!existsSync(stampPath)) return { fresh: false, hash, reason: `no ${STAMP_FILE}` };
  const stamped = readFileSync(stampPath, "utf8").trim();
  if (stamped !== hash) return { fresh: false, hash, reason: "build inputs changed since the last build" };
  return { fresh: true, hash, reason: `inputs match ${STAMP_FILE} (${hash.slice(0, 12)})` };
}
