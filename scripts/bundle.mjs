#!/usr/bin/env node
/**
 * Bundles the server for a fast cold start (a client spawns it at every session start): one ESM entry,
 * dist/bundle/cli.js (the package's bin), plus chunks for what a session may never need, loaded on first
 * use: the sandbox and undici (first request). Resolving and parsing hundreds
 * of files in node_modules was most of the start-up time of the unbundled build.
 *
 * Usage: node scripts/bundle.mjs   (`npm run build` runs tsc, then this)
 */
import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";
import { buildViewerHtml } from "./viewer.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const outdir = path.join(root, "dist", "bundle");
const { version } = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
// The tool list as tools/list answers it, computed from the tsc build of the same source.
const { describeTools } = await import(pathToFileURL(path.join(root, "dist", "mcp", "tool-list.js")).href);
// The MCP Apps viewer as one self-contained page, served from memory (src/ui/viewer.ts).
const viewerHtml = await buildViewerHtml();

rmSync(outdir, { recursive: true, force: true });
const result = await build({
  // The preview worker is its own entry: the server forks it (src/media/preview-engine.ts).
  entryPoints: {
    cli: path.join(root, "src", "cli.ts"),
    "preview-worker": path.join(root, "src", "media", "preview-worker.ts"),
  },
  outdir,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  minify: true,
  legalComments: "none",
  chunkNames: "chunks/[name]-[hash]",
  // sharp is native (libvips binaries per platform): it cannot be bundled. It is an optional dependency,
  // imported with import() on the first image preview only, in the preview worker (src/media/preview-worker.ts).
  external: ["sharp"],
  define: {
    __GENERATION_MCP_VERSION__: JSON.stringify(version),
    __GENERATION_MCP_TOOLS__: JSON.stringify(describeTools()),
    __GENERATION_MCP_VIEWER_HTML__: JSON.stringify(viewerHtml),
  },
  // Bundled CommonJS dependencies call require() for Node's built-ins; give ESM chunks one.
  banner: {
    js: 'import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);',
  },
  metafile: true,
  logLevel: "warning",
});

const outputs = Object.entries(result.metafile.outputs).filter(([file]) => file.endsWith(".js"));
const entry = outputs.find(([file]) => file.endsWith("bundle/cli.js"));
process.stderr.write(
  `bundle: dist/bundle/cli.js ${Math.round((entry?.[1].bytes ?? 0) / 1024)} KiB at start, ` +
    `${outputs.length - 2} lazy chunk(s) and the preview worker, ${Math.round(outputs.reduce((n, [, o]) => n + o.bytes, 0) / 1024)} KiB in all; ` +
    `viewer page ${Buffer.byteLength(viewerHtml)} bytes\n`,
);
