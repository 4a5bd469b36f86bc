/**
 * `npm test` on a machine without redis-server, chromium or ffmpeg stops before anything runs, with one line
 * that names what is missing and the apt-get command (scripts/system-packages.mjs, the first step of pretest).
 */
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");
const SCRIPT = path.join(ROOT, "scripts/system-packages.mjs");
const bin = mkdtempSync(path.join(tmpdir(), "system-packages-"));
afterAll(() => rmSync(bin, { recursive: true, force: true }));

/** A PATH of one folder holding just these (stand-in) executables. */
function pathWith(...names: string[]): string {
  const dir = mkdtempSync(path.join(bin, "path-"));
  for (const name of names) {
    writeFileSync(path.join(dir, name), "#!/bin/sh\n");
    chmodSync(path.join(dir, name), 0o755);
  }
  return dir;
}

function check(env: Record<string, string>) {
  const run = spawnSync(process.execPath, [SCRIPT], { env, encoding: "utf8" });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe("the Debian packages the tests need", () => {
  it("names every missing one and the apt-get command in one line, and exits 1", () => {
    const run = check({ PATH: pathWith("redis-server") });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(run.stderr).toContain("chromium, ffmpeg");
    expect(run.stderr).toContain("apt-get install -y chromium ffmpeg");
    expect(run.stderr).not.toContain("redis-server");
  });

  it("says nothing when all are there (chromium under either name, or at CHROMIUM_PATH)", () => {
    expect(check({ PATH: pathWith("redis-server", "chromium-browser", "ffmpeg") })).toEqual({
      code: 0,
      stdout: "",
      stderr: "",
    });
    const chromium = path.join(pathWith("my-chromium"), "my-chromium");
    expect(check({ PATH: pathWith("redis-server", "ffmpeg"), CHROMIUM_PATH: chromium }).code).toBe(0);
  });

  it("runs first in `npm test`, before the build", () => {
    const scripts = (
      JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as {
        scripts: Record<string, string>;
      }
    ).scripts;
    expect(scripts["pretest"]).toMatch(/^node scripts\/system-packages\.mjs && node scripts\/build\.mjs/);
  });
});
