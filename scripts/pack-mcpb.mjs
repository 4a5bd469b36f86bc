#!/usr/bin/env node
/**
 * The Claude Desktop bundle, generation-mcp-<version>.mcpb, packed by the official CLI (@anthropic-ai/mcpb)
 * from a staging folder that holds only what the server needs at run time, so no development files,
 * tests, sources or node_modules can slip in:
 *
 *   manifest.json, icon.png          from mcpb/ (scripts/distribution.mjs, scripts/make-icon.mjs)
 *   server/cli.js, server/chunks/    dist/bundle: the self-contained esbuild bundle, no dependencies
 *   server/package.json              {"type":"module"}: the bundle is ESM
 *   README.md, LICENSE               when present
 *
 * Usage: node scripts/pack-mcpb.mjs [--out FILE]   (default ./generation-mcp-<version>.mcpb)
 * `npm run pack:mcpb` builds if stale and regenerates mcpb/manifest.json first.
 */
import { spawnSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const fail = (message) => {
  process.stderr.write(`pack-mcpb: ${message}\n`);
  process.exit(1);
};

/** The CLI's bin, run with this Node (an npx lookup would be slower and could reach the network). */
function mcpbCli() {
  const entry = createRequire(import.meta.url).resolve("@anthropic-ai/mcpb");
  return path.join(path.dirname(entry), "cli", "cli.js");
}

function stage(dir) {
  const bundle = path.join(root, "dist", "bundle");
  if (!existsSync(path.join(bundle, "cli.js")))
    fail("dist/bundle/cli.js is missing: run `npm run build` first");
  cpSync(path.join(root, "mcpb", "manifest.json"), path.join(dir, "manifest.json"));
  cpSync(path.join(root, "mcpb", "icon.png"), path.join(dir, "icon.png"));
  cpSync(bundle, path.join(dir, "server"), { recursive: true });
  writeFileSync(path.join(dir, "server", "package.json"), `${JSON.stringify({ type: "module" })}\n`);
  for (const doc of ["README.md", "LICENSE"]) {
    if (existsSync(path.join(root, doc))) cpSync(path.join(root, doc), path.join(dir, doc));
  }
}

const { values } = parseArgs({ options: { out: { type: "string" } } });
const { name, version } = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
const out = path.resolve(values.out ?? `${name}-${version}.mcpb`);
const dir = mkdtempSync(path.join(tmpdir(), "generation-mcp-mcpb-"));
try {
  stage(dir);
  mkdirSync(path.dirname(out), { recursive: true });
  // The CLI validates the manifest (schema, icon) before it zips; its report goes to stderr here, since a
  // caller may read stdout.
  const packed = spawnSync(process.execPath, [mcpbCli(), "pack", dir, out], {
    stdio: ["ignore", process.stderr, process.stderr],
  });
  if (packed.status !== 0) fail(`mcpb pack failed (exit ${packed.status ?? packed.signal})`);
  process.stderr.write(`pack-mcpb: ${path.relative(process.cwd(), out)} (${statSync(out).size} bytes)\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
