import { mkdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { isInside, isInsideAny, missingFolders, resolveAllowedDirs } from "../../src/files/allowed-dirs.js";
import { makeTempDir } from "./fixtures.js";

describe("isInside", () => {
  it("needs a separator after the parent, so siblings sharing a prefix are outside", () => {
    expect(isInside("/tmp/x/allowed/a.png", "/tmp/x/allowed")).toBe(true);
    expect(isInside("/tmp/x/allowed/sub/a.png", "/tmp/x/allowed")).toBe(true);
    expect(isInside("/tmp/x/allowed-evil/a.png", "/tmp/x/allowed")).toBe(false);
    expect(isInside("/tmp/x/allowedx", "/tmp/x/allowed")).toBe(false);
    expect(isInside("/tmp/x", "/tmp/x/allowed")).toBe(false);
  });

  it("counts the folder itself and handles a parent with a trailing separator or the root", () => {
    expect(isInside("/tmp/x/allowed", "/tmp/x/allowed")).toBe(true);
    expect(isInside("/tmp/x/allowed/a", "/tmp/x/allowed/")).toBe(true);
    expect(isInside("/etc/passwd", "/")).toBe(true);
    expect(isInsideAny("/b/c", ["/a", "/b"])).toBe(true);
    expect(isInsideAny("/c/d", ["/a", "/b"])).toBe(false);
    expect(isInsideAny("/c/d", [])).toBe(false);
  });
});

describe("resolveAllowedDirs", () => {
  let base: string;
  let cleanup: () => Promise<void>;
  let home: string;

  beforeEach(async () => {
    ({ dir: base, cleanup } = await makeTempDir("allowed-dirs-"));
    home = path.join(base, "home");
    await mkdir(path.join(home, "Pictures"), { recursive: true });
    await mkdir(path.join(home, "Desktop"), { recursive: true });
  });
  afterEach(() => cleanup());

  it("defaults to the existing home folders plus the output folder", async () => {
    const output = path.join(base, "out");
    await mkdir(output);
    const dirs = await resolveAllowedDirs({ configured: undefined, roots: [], outputDir: output, home });
    expect(dirs).toEqual([path.join(home, "Pictures"), path.join(home, "Desktop"), output]);
  });

  it("drops a missing output folder and reports what it skipped", async () => {
    const skipped: string[] = [];
    const dirs = await resolveAllowedDirs({
      configured: undefined,
      roots: [],
      outputDir: path.join(base, "missing"),
      home,
      onSkipped: (entry) => skipped.push(entry),
    });
    expect(dirs).toEqual([path.join(home, "Pictures"), path.join(home, "Desktop")]);
    expect(skipped).toContain(path.join(home, "Downloads"));
    expect(skipped).toContain(path.join(base, "missing"));
  });

  it("lets the configured list replace the defaults, expanding ~/ and dropping relative entries and files", async () => {
    const data = path.join(base, "data");
    await mkdir(data);
    await writeFile(path.join(base, "file.txt"), "x");
    const dirs = await resolveAllowedDirs({
      configured: [data, "~/Pictures", "relative/dir", path.join(base, "file.txt"), data],
      roots: [],
      outputDir: path.join(home, "Desktop"),
      home,
    });
    expect(dirs).toEqual([data, path.join(home, "Pictures")]);
  });

  it("adds MCP roots given as file URIs or paths and ignores other schemes", async () => {
    const rootA = path.join(base, "root a");
    const rootB = path.join(base, "rootB");
    await mkdir(rootA);
    await mkdir(rootB);
    const dirs = await resolveAllowedDirs({
      configured: [],
      roots: [pathToFileURL(rootA).href, rootB, "https://example.com/x", "file://remote-host/share", "rel"],
      outputDir: base,
      home,
    });
    expect(dirs).toEqual([rootA, rootB]);
  });

  it("returns real paths, so a symlinked folder is compared by its target", async () => {
    const real = path.join(base, "real");
    await mkdir(real);
    await symlink(real, path.join(base, "alias"));
    const dirs = await resolveAllowedDirs({
      configured: [path.join(base, "alias")],
      roots: [],
      outputDir: base,
      home,
    });
    expect(dirs).toEqual([real]);
  });

  it("missingFolders names the configured entries that are no folder, which resolveAllowedDirs drops", async () => {
    const data = path.join(base, "data");
    await mkdir(data);
    await writeFile(path.join(base, "file.txt"), "x");
    const configured = [data, path.join(base, "typo"), path.join(base, "file.txt")];
    expect(await missingFolders(configured)).toEqual([path.join(base, "typo"), path.join(base, "file.txt")]);
    expect(await resolveAllowedDirs({ configured, roots: [], outputDir: base, home })).toEqual([data]);
    expect(await missingFolders([])).toEqual([]);
  });
});
