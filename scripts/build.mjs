#!/usr/bin/env node
/**
 * The build: tsc -> dist/, then esbuild -> dist/bundle/ (scripts/bundle.mjs), then dist/.build-stamp.
 *
 * Usage: node scripts/build.mjs              (`npm run build`: always builds)
 *        node scripts/build.mjs --if-stale   (`npm test`, `npm pack`: builds only when an input changed)
 *
 * The stamp is the hash of the inputs taken before the build, written only if the build succeeded and
 * the inputs still hash the same afterwards: an edit made while tsc ran must not pass for built.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { STAMP_FILE, buildState, hashBuildInputs } from "./build-stamp.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const say = (line) => process.stderr.write(`build: ${line}\n`);

function run(script, args) {
  const result = spawnSync(process.execPath, [script, ...args], { cwd: root, stdio: "inherit" });
  if (result.status !== 0) {
    say(`failed: ${path.relative(root, script)} ${args.join(" ")}`.trimEnd());
    process.exit(result.status ?? 1);
  }
}

if (process.argv.includes("--if-stale")) {
  const state = buildState(root);
  if (state.fresh) {
    say(`up to date, not rebuilding (${state.reason})`);
    process.exit(0);
  }
  say(`building (${state.reason})`);
}

const stamp = path.join(root, STAMP_FILE);
const before = hashBuildInputs(root);
rmSync(stamp, { force: true });
run(createRequire(import.meta.url).resolve("typescript/bin/tsc"), ["-p", "tsconfig.build.json"]);
run(path.join(root, "scripts", "bundle.mjs"), []);
if (hashBuildInputs(root) === before) {
  mkdirSync(path.dirname(stamp), { recursive: true });
  writeFileSync(stamp, `${before}\n`);
  say(`done, ${STAMP_FILE} written (${before.slice(0, 12)})`);
} else {
  say("inputs changed during the build; no stamp written, so the next `npm test` builds again");
}
