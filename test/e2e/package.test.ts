/**
 * The package as a user gets it: `npm pack` of the built tree, installed from the tarball into an empty
 * prefix with npm offline (so it can fetch nothing: the bundle must carry every dependency), then the
 * INSTALLED bin driven by the SDK's Client over stdio in sandbox mode. Needs `npm run build` first (pretest).
 */
import { execFileSync } from "node:child_process";
import { existsSync, lstatSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error -- a plain ESM script run by npm (prepack) and here
import { lockedPackages, scanBundle } from "../../scripts/bundle-imports.mjs";
import { CLI } from "../helpers/stdio.js";

const repo = path.resolve(import.meta.dirname, "../..");
const pkg = JSON.parse(readFileSync(path.join(repo, "package.json"), "utf8")) as {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
};

interface PackResult {
  filename: string;
  size: number;
  unpackedSize: number;
  files: Array<{ path: string }>;
}

let work: string;
let packed: PackResult;
let prefix: string;
let installed: string;

// npm's own settings from a surrounding `npm test` (npm_config_*) must not steer the install under test.
const npmEnv = () =>
  Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !/^npm_(config|lifecycle|package)_/i.test(key)),
  ) as Record<string, string>;
// Offline, and without npm's own update check: tests reach nothing beyond 127.0.0.1.
const npm = (args: string[], cwd: string) =>
  execFileSync("npm", [...args, "--offline", "--no-update-notifier"], {
    cwd,
    env: npmEnv(),
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });

beforeAll(() => {
  if (!existsSync(CLI)) throw new Error("dist/bundle/cli.js is missing: run `npm run build` (or `npm test`)");
  work = mkdtempSync(path.join(tmpdir(), "generation-mcp-pack-"));
  const json = npm(["pack", "--ignore-scripts", "--json", "--pack-destination", work], repo);
  packed = (JSON.parse(json) as PackResult[])[0] as PackResult;

  prefix = path.join(work, "prefix");
  npm(
    [
      "install",
      "--global",
      "--prefix",
      prefix,
      "--cache",
      path.join(work, "npm-cache"), // empty: nothing may come from an earlier download either
      "--ignore-scripts",
      "--no-audit",
      "--no-fund",
      path.join(work, packed.filename),
    ],
    work,
  );
  installed = path.join(prefix, "lib", "node_modules", pkg.name);
}, 180_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe.skipIf(process.platform === "win32")("the packed package", () => {
  it("declares no dependencies and holds only the bundle, the agent skill, README and the example config", () => {
    expect(pkg.dependencies ?? {}).toEqual({});
    // The one optional one: sharp (native) for image previews, exact-pinned; without it previews say so.
    expect(pkg.optionalDependencies).toEqual({ sharp: expect.stringMatching(/^\d+\.\d+\.\d+$/) });
    const files = packed.files.map((file) => file.path).sort();
    console.log(
      `${packed.filename}: ${files.length} files, ${(packed.size / 1024).toFixed(0)} KiB packed, ` +
        `${(packed.unpackedSize / 1024).toFixed(0)} KiB unpacked`,
    );
    expect(files).toContain("dist/bundle/cli.js");
    expect(files).toEqual(
      expect.arrayContaining([
        "README.md",
        "mcp.json.example",
        "package.json",
        "skills/generation-mcp/SKILL.md",
      ]),
    );
    const outside = files.filter(
      (file) =>
        !/^(dist\/bundle|skills\/generation-mcp)\//.test(file) &&
        !["README.md", "mcp.json.example", "package.json"].includes(file),
    );
    expect(outside).toEqual([]);
    expect(files.filter((file) => /^(src|test|bench|scripts)\//.test(file) || file.endsWith(".map"))).toEqual(
      [],
    );
  });

  it("installs offline into an empty prefix, with nothing beside it to resolve packages from", () => {
    expect(JSON.parse(readFileSync(path.join(installed, "package.json"), "utf8"))).toMatchObject({
      name: pkg.name,
      version: pkg.version,
    });
    expect(existsSync(path.join(installed, "node_modules"))).toBe(false);
    // Node resolves a bare import by walking up from the installed file; only the global folder (holding
    // this package alone) may be on that way, or a missing dependency could be found by accident.
    const found: string[] = [];
    for (let dir = path.join(installed, "dist", "bundle"); ; dir = path.dirname(dir)) {
      const modules = path.join(dir, "node_modules");
      if (existsSync(modules) && modules !== path.join(prefix, "lib", "node_modules")) found.push(modules);
      if (path.dirname(dir) === dir) break;
    }
    expect(found).toEqual([]);
  });

  it("loads nothing at run time but Node built-ins and its own chunks", () => {
    const scan = scanBundle(path.join(installed, "dist", "bundle"), lockedPackages(repo)) as {
      files: string[];
      builtins: string[];
      optional: string[];
      violations: string[];
    };
    expect(scan.violations).toEqual([]);
    expect(scan.optional).toEqual(["sharp"]);
    expect(scan.files.length).toBeGreaterThan(1);
    // The scan sees esbuild's require shim (form-data requires "stream"), not just import statements.
    expect(scan.builtins).toEqual(expect.arrayContaining(["node:module", "stream"]));
  });

  it("has an executable bin whose first line is the node shebang", () => {
    const bin = path.join(prefix, "bin", pkg.name);
    expect(lstatSync(bin).isSymbolicLink()).toBe(true);
    const target = path.resolve(path.dirname(bin), readlinkSync(bin));
    expect(target).toBe(path.join(installed, "dist", "bundle", "cli.js"));
    expect(statSync(target).mode & 0o111).toBe(0o111);
    expect(readFileSync(target, "utf8").split("\n", 1)[0]).toBe("#!/usr/bin/env node");
  });

  it("answers initialize, tools/list and a sandbox get_credits through the installed bin", async () => {
    const home = path.join(work, "home");
    const transport = new StdioClientTransport({
      command: path.join(prefix, "bin", pkg.name),
      args: ["--sandbox"],
      cwd: work,
      env: {
        // The shebang finds node on PATH: put this Node first.
        PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env["PATH"] ?? ""}`,
        HOME: home,
        GENERATION_STATE_DIR: path.join(home, "state"),
      },
      stderr: "pipe",
    });
    let stderr = "";
    transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const client = new Client({ name: "package-e2e", version: "1.0.0" }, { capabilities: {} });
    try {
      await client.connect(transport);
      expect(client.getServerVersion()).toMatchObject({ name: pkg.name, version: pkg.version });

      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual(
        [
          "generate_image",
          "generate_video",
          "get_credits",
          "get_status",
          "list_videos",
          "upload_image",
        ].sort(),
      );

      const credits = (await client.callTool({ name: "get_credits", arguments: {} })) as CallToolResult;
      expect(credits.isError, JSON.stringify(credits.content)).toBeFalsy();
      expect(credits.structuredContent).toMatchObject({ credits: expect.any(Number) });

      // Installed offline, the optional sharp could not come along: the image is made, the preview is not.
      const image = (await client.callTool({
        name: "generate_image",
        arguments: { prompt: "a kite without preview" },
      })) as CallToolResult;
      expect(image.isError, JSON.stringify(image.content)).toBeFalsy();
      expect(image.structuredContent?.["image_urls"]).toHaveLength(1);
      expect(image.content.filter((item) => item.type === "image")).toEqual([]);
      expect(JSON.stringify(image.content)).toMatch(/No preview: previews are unavailable/);
    } catch (error) {
      throw new Error(`${String(error)}\nserver stderr:\n${stderr}`, { cause: error });
    } finally {
      await client.close();
    }
  }, 60_000);
});
