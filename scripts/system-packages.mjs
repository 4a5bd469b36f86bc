#!/usr/bin/env node
/**
 * The Debian packages the tests need beyond `npm ci`: redis-server (the shared-state tests), chromium (the
 * viewer and sign-in pages in a headless browser; CHROMIUM_PATH may name another binary) and ffmpeg (video
 * contact sheets). Run before the tests (`pretest`, `npm run test:clients`): when any is missing it prints
 * ONE line naming them and the command that installs them, and exits 1, instead of dozens of failed tests.
 */
import { accessSync, constants } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** Package -> the binaries that stand for it (any one will do). */
const PACKAGES = {
  "redis-server": ["redis-server"],
  chromium: ["chromium", "chromium-browser"],
  ffmpeg: ["ffmpeg"],
};

const executable = (file) => {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/** The packages of PACKAGES with no binary on `env.PATH` (chromium: or at `env.CHROMIUM_PATH`). */
export function missingPackages(env = process.env) {
  const dirs = (env.PATH ?? "").split(path.delimiter).filter((dir) => dir !== "");
  const onPath = (name) => dirs.some((dir) => executable(path.join(dir, name)));
  const named = (name) => name === "chromium" && Boolean(env.CHROMIUM_PATH) && executable(env.CHROMIUM_PATH);
  return Object.entries(PACKAGES)
    .filter(([name, binaries]) => !named(name) && !binaries.some(onPath))
    .map(([name]) => name);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const missing = missingPackages();
  if (missing.length > 0) {
    console.error(
      `The tests need the Debian packages ${missing.join(", ")}, missing here: ` +
        `sudo apt-get install -y ${missing.join(" ")}`,
    );
    process.exitCode = 1;
  }
}
