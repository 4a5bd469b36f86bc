/**
 * The build stamp decides whether `npm test` rebuilds. A stale build taken for fresh would test (and
 * pack) old code, so: every input change must change the hash, and a build counts as fresh only when its
 * stamp matches the inputs as they are now. Runs on a temporary copy of the real inputs; never builds.
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
// @ts-expect-error -- a plain ESM script run by npm (scripts/build.mjs imports it)
import { STAMP_FILE, buildState, hashBuildInputs, listBuildInputs } from "../../scripts/build-stamp.mjs";

const repo = path.resolve(import.meta.dirname, "../..");
let root: string;

const write = (file: string, text: string) => {
  mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
  writeFileSync(path.join(root, file), text);
};
const append = (file: string, text: string) =>
  writeFileSync(path.join(root, file), readFileSync(path.join(root, file), "utf8") + text);

beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), "generation-mcp-stamp-"));
  for (const item of [
    "src",
    "scripts",
    "package.json",
    "package-lock.json",
    "tsconfig.json",
    "tsconfig.build.json",
  ])
    cpSync(path.join(repo, item), path.join(root, item), { recursive: true });
  // Files that are not build inputs.
  write("README.md", "# readme\n");
  write("test/a.test.ts", "export {};\n");
  write("bench/run.mjs", "\n");
});

afterEach(() => rmSync(root, { recursive: true, force: true }));

describe("build inputs", () => {
  it("are the sources, the build scripts, package.json, the lock file and every tsconfig", () => {
    const inputs: string[] = listBuildInputs(root);
    for (const file of [
      "src/cli.ts",
      "src/sandbox/index.ts",
      "scripts/bundle.mjs",
      "scripts/build.mjs",
      "package.json",
      "package-lock.json",
      "tsconfig.json",
      "tsconfig.build.json",
    ])
      expect(inputs).toContain(file);
    expect(inputs.filter((file) => !/^(src\/|scripts\/|package|tsconfig)/.test(file))).toEqual([]);
    expect(inputs).not.toContain("scripts/demo.mjs");
  });

  it("hash differently after any edit, addition, removal or rename, and the same otherwise", () => {
    const base: string = hashBuildInputs(root);
    expect(hashBuildInputs(root)).toBe(base);

    const changes: Array<[string, () => void, () => void]> = [
      ["a byte in a source", () => append("src/cli.ts", " "), () => undefined],
      ["a new source file", () => write("src/tools/new-tool.ts", "export {};\n"), () => undefined],
      [
        "a source renamed",
        () => renameSync(path.join(root, "src/models.ts"), path.join(root, "src/m.ts")),
        () => undefined,
      ],
      ["a source removed", () => rmSync(path.join(root, "src/api/sleep.ts")), () => undefined],
      ["the bundler", () => append("scripts/bundle.mjs", "\n"), () => undefined],
      ["a tsconfig", () => append("tsconfig.build.json", "\n"), () => undefined],
      ["a new tsconfig", () => write("tsconfig.extra.json", "{}\n"), () => undefined],
      ["package.json", () => append("package.json", "\n"), () => undefined],
      ["the lock file", () => append("package-lock.json", "\n"), () => undefined],
    ];
    for (const [what, change] of changes) {
      const before: string = hashBuildInputs(root);
      change();
      expect(hashBuildInputs(root), what).not.toBe(before);
    }

    const before: string = hashBuildInputs(root);
    append("README.md", "more\n");
    write("test/b.test.ts", "export {};\n");
    write("dist/bundle/cli.js", "// built\n");
    expect(hashBuildInputs(root)).toBe(before);
  });
});

describe("buildState", () => {
  const stamp = () => write(STAMP_FILE, `${hashBuildInputs(root)}\n`);
  const outputs = () => {
    write("dist/mcp/tool-list.js", "export {};\n");
    write("dist/bundle/cli.js", "#!/usr/bin/env node\n");
  };

  it("is fresh only while the stamp matches the inputs and the outputs exist", () => {
    expect(buildState(root)).toMatchObject({ fresh: false, reason: "dist/mcp/tool-list.js is missing" });
    outputs();
    expect(buildState(root)).toMatchObject({ fresh: false, reason: `no ${STAMP_FILE}` });
    stamp();
    expect(buildState(root)).toMatchObject({ fresh: true, hash: hashBuildInputs(root) });

    append("src/cli.ts", "\n");
    expect(buildState(root)).toMatchObject({
      fresh: false,
      reason: "build inputs changed since the last build",
    });
    stamp();
    expect(buildState(root).fresh).toBe(true);

    rmSync(path.join(root, "dist/bundle/cli.js"));
    expect(buildState(root)).toMatchObject({ fresh: false, reason: "dist/bundle/cli.js is missing" });
  });

  it("lets `build.mjs --if-stale` skip a fresh build without touching it", () => {
    outputs();
    stamp();
    const run = spawnSync(process.execPath, [path.join(root, "scripts/build.mjs"), "--if-stale"], {
      cwd: root,
      encoding: "utf8",
    });
    expect(run.status).toBe(0);
    expect(run.stderr).toMatch(/^build: up to date, not rebuilding/);
    expect(readFileSync(path.join(root, "dist/bundle/cli.js"), "utf8")).toBe("#!/usr/bin/env node\n");
  });
});
