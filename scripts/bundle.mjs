#!/usr/bin/env node
/**
 * Bundles the server for a fast cold start (a client spawns it at every session start): one ESM entry,
 * dist/bundle/cli.js (the package's bin), plus chunks for what a session may never need, loaded on first
 * use: the sandbox and undici (first request). Resolving and parsing hundreds
 * of files in node_modules was most of the start-up time of the unbundled build.
 *
 * The start-up path is one chunk (`oneStartupChunk` below): each ESM file loaded costs its own resolve,
 * read, compile and link. The MCP SDK is bundled as it is published: no module of it is swapped.
 *
 * Usage: node scripts/bundle.mjs   (`npm run build` runs tsc, then this)
 *        node scripts/bundle.mjs --readable DIR   the same bundle unminified into DIR, for CPU profiles whose
 *                                                 function names read (BENCH_BIN=DIR/cli.js bench/run.mjs)
 */
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";
import { buildViewerHtml } from "./viewer.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const readableAt = process.argv.indexOf("--readable");
const readable = readableAt >= 0 ? path.resolve(process.argv[readableAt + 1] ?? "") : undefined;
const outdir = readable ?? path.join(root, "dist", "bundle");
const { version } = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
// The tool list as tools/list answers it, computed from the tsc build of the same source.
const { describeTools } = await import(pathToFileURL(path.join(root, "dist", "mcp", "tool-list.js")).href);
// The MCP Apps viewer as one self-contained page, served from memory (src/ui/viewer.ts).
const viewerHtml = await buildViewerHtml();

/**
 * One chunk for the start-up path. esbuild puts each module in the chunk of the set of entry points that
 * reach it, dynamic imports included, and does not know that a lazy part is only ever loaded after cli.ts
 * (evanw/esbuild#3780). The modules of the start-up path, each reached by cli.ts and by a different subset
 * of the lazy parts, came out as ~20 small chunks, and each ESM file costs its own resolve, read, compile
 * and link (~0.7 ms apiece on the bench machine). So every module that src/ imports lazily (the HTTP
 * server, the sandbox, Redis, OAuth, tools/call ...) is made to import cli.ts's own static imports first:
 * all start-up modules are then reached by the same entries and share one chunk. Nothing runs twice or
 * earlier: by the time a lazy part loads, cli.ts has loaded them all.
 */
const srcDir = path.join(root, "src");
const cliSource = readFileSync(path.join(srcDir, "cli.ts"), "utf8");
const startupImports = [...cliSource.matchAll(/^import\s+(?!type\b)[^;]*?\sfrom\s+"(\.\/[^"]+)\.js";/gm)].map(
  (match) => match[1],
);
const startupModules = new Set(startupImports.map((specifier) => path.join(srcDir, `${specifier}.ts`)));
const lazyModules = new Set();
for (const file of readdirSync(srcDir, { recursive: true })) {
  if (!String(file).endsWith(".ts")) continue;
  const full = path.join(srcDir, String(file));
  for (const match of readFileSync(full, "utf8").matchAll(/\bimport\(\s*"(\.{1,2}\/[^"]+)\.js"\s*\)/g)) {
    const target = path.resolve(path.dirname(full), `${match[1]}.ts`);
    if (!startupModules.has(target)) lazyModules.add(target);
  }
}
const STARTUP = "generation-mcp:startup-modules";
const oneStartupChunk = {
  name: "one-startup-chunk",
  setup(build) {
    build.onResolve({ filter: new RegExp(`^${STARTUP}$`) }, () => ({ path: STARTUP, namespace: "startup" }));
    build.onLoad({ filter: /.*/, namespace: "startup" }, () => ({
      contents: startupImports.map((specifier) => `import ${JSON.stringify(`${specifier}.js`)};`).join("\n"),
      loader: "ts",
      resolveDir: srcDir,
    }));
    build.onLoad({ filter: /\.ts$/ }, (args) =>
      lazyModules.has(args.path)
        ? { contents: `import "${STARTUP}";\n${readFileSync(args.path, "utf8")}`, loader: "ts" }
        : undefined,
    );
  },
};

rmSync(outdir, { recursive: true, force: true });
const result = await build({
  // The preview worker is its own entry: the server forks it (src/media/previews.ts).
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
  minify: readable === undefined,
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
  plugins: [oneStartupChunk],
  metafile: true,
  logLevel: "warning",
});

// What went where, for `npx esbuild --analyze`-style reading (dist/bundle-meta.json is not shipped).
writeFileSync(path.join(outdir, "..", "bundle-meta.json"), JSON.stringify(result.metafile));
const outputs = Object.entries(result.metafile.outputs).filter(([file]) => file.endsWith(".js"));
const entry = outputs.find(([file]) => path.resolve(file) === path.join(outdir, "cli.js"));
/**
 * What a stdio session loads before it answers: cli.js and every chunk it imports statically (the stdio
 * serving and the runtime are among cli.ts's static imports).
 */
function loadedAtStart(sources) {
  const entries = new Set(sources.map((source) => path.join(root, source)));
  const byFile = new Map(outputs.map(([file, output]) => [file, output]));
  const seen = new Set();
  const visit = (file) => {
    if (seen.has(file) || !byFile.has(file)) return;
    seen.add(file);
    for (const imported of byFile.get(file).imports)
      if (imported.kind === "import-statement") visit(imported.path);
  };
  for (const [file, output] of outputs) {
    if (output.entryPoint !== undefined && entries.has(path.resolve(output.entryPoint))) visit(file);
  }
  return { files: seen.size, bytes: [...seen].reduce((n, file) => n + byFile.get(file).bytes, 0) };
}
const stdioStart = loadedAtStart(["src/cli.ts"]);
const kib = (bytes) => Math.round(bytes / 1024);
process.stderr.write(
  `bundle: ${path.relative(root, path.join(outdir, "cli.js"))} ${kib(entry?.[1].bytes ?? 0)} KiB; ` +
    `a stdio session loads ${kib(stdioStart.bytes)} KiB in ${stdioStart.files} files before it answers; ` +
    `${outputs.length - 2} lazy chunk(s) and the preview worker, ${kib(outputs.reduce((n, [, o]) => n + o.bytes, 0))} KiB in all; ` +
    `viewer page ${Buffer.byteLength(viewerHtml)} bytes\n`,
);
