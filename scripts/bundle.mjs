#!/usr/bin/env node
/**
 * Bundles the tsc output (dist/cli.js and everything it imports, dependencies included) into one file, for
 * a fast cold start: a client spawns the server at every session, and module resolution plus parsing of
 * ~300 files was most of its start-up time.
 *
 *   dist/generation-mcp.bundle.cjs  the whole program, one CommonJS file (minified)
 *   dist/generation-mcp.mjs         the bin: compiles the bundle with V8's code cache (see LAUNCHER below)
 *
 * Two dependencies that only matter once a request goes out are loaded on first use instead of at start:
 * `undici` (the HTTP client; ~50 ms of top-level work) and `form-data` (uploads). See LAZY_MODULES.
 *
 * Usage: node scripts/bundle.mjs   (run after `tsc -p tsconfig.build.json`; `npm run build` does both)
 */
import { chmodSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dist = path.join(root, "dist");
const BUNDLE = "generation-mcp.bundle.cjs";
const LAUNCHER = "generation-mcp.mjs";

/**
 * Stand-ins bundled in place of a dependency: they export the same names, and load the real module (also
 * bundled, under a private specifier) the first time one of them is used.
 */
const require = createRequire(import.meta.url);
const LAZY_MODULES = {
  undici: `
    const UNDICI_EXPORTS = ${JSON.stringify(Object.keys(require("undici")))};
    let real;
    const load = () => (real ??= require("lazy-real:undici"));
    // The process-wide HTTP agent is built at start-up, but nothing is sent before the first tool call:
    // the stand-in builds the real Agent when it is first touched and forwards everything to it.
    function lazyInstance(make) {
      let instance;
      const get = () => (instance ??= make());
      return new Proxy(Object.create(null), {
        get(_, key) {
          // Closing an agent that never sent anything needs no agent (and no undici).
          if (instance === undefined && (key === "close" || key === "destroy")) {
            return (callback) => (callback ? void queueMicrotask(() => callback(null)) : Promise.resolve());
          }
          const target = get();
          const value = Reflect.get(target, key, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
        set(_, key, value) { return Reflect.set(get(), key, value); },
        has(_, key) { return Reflect.has(get(), key); },
        getPrototypeOf() { return Reflect.getPrototypeOf(get()); },
      });
    }
    class Agent {
      constructor(...args) { return lazyInstance(() => new (load().Agent)(...args)); }
    }
    exports.Agent = Agent;
    for (const key of UNDICI_EXPORTS) {
      if (key !== "Agent") Object.defineProperty(exports, key, { enumerable: true, get: () => load()[key] });
    }
  `,
  "form-data": `
    let real;
    const load = () => (real ??= require("lazy-real:form-data"));
    function FormData(...args) { return new (load())(...args); }
    module.exports = FormData;
    module.exports.default = FormData;
  `,
};

const lazyPlugin = {
  name: "lazy-modules",
  setup(b) {
    const names = Object.keys(LAZY_MODULES).map((n) => n.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&"));
    const filter = new RegExp(`^(${names.join("|")})$`);
    b.onResolve({ filter }, (args) =>
      args.pluginData?.real ? undefined : { path: args.path, namespace: "lazy-stand-in" },
    );
    b.onLoad({ filter: /.*/, namespace: "lazy-stand-in" }, (args) => ({
      contents: LAZY_MODULES[args.path],
      loader: "js",
      resolveDir: root,
    }));
    b.onResolve({ filter: /^lazy-real:/ }, async (args) => {
      const resolved = await b.resolve(args.path.slice("lazy-real:".length), {
        kind: "require-call",
        resolveDir: root,
        pluginData: { real: true },
      });
      if (resolved.errors.length > 0) return { errors: resolved.errors };
      return { path: resolved.path };
    });
  },
};

const result = await build({
  entryPoints: [path.join(dist, "cli.js")],
  outfile: path.join(dist, BUNDLE),
  bundle: true,
  platform: "node",
  target: "node20",
  format: "cjs",
  minify: true,
  keepNames: false,
  legalComments: "none",
  // The CLI reads its version with createRequire(import.meta.url)("../package.json"): from dist/ that is
  // still the package root, so it keeps working in the bundle.
  define: { "import.meta.url": "__bundleUrl", "import.meta.dirname": "__dirname" },
  banner: { js: 'var __bundleUrl = require("node:url").pathToFileURL(__filename).href;' },
  plugins: [lazyPlugin],
  metafile: true,
  logLevel: "warning",
});

/**
 * The bin. Node 20 has no compile cache of its own (module.enableCompileCache came in Node 22), so it
 * compiles the bundle through vm.Script with V8's code cache, kept per user under the platform's cache
 * folder and keyed by Node version, V8-relevant flags and the bundle's size, mtime and inode. A server that has run 3 s without
 * a usable cache writes it; every later start skips parsing and compiling. Any problem with the cache
 * (unreadable, rejected, read-only folder) only means a normal compile. NODE_DISABLE_COMPILE_CACHE=1 turns
 * it off, as for Node's own compile cache.
 */
const launcher = `#!/usr/bin/env node
// generation-mcp bin (generated by scripts/bundle.mjs): runs ${BUNDLE} with V8's code cache.
import { mkdirSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import vm from "node:vm";

const file = path.join(path.dirname(fileURLToPath(import.meta.url)), ${JSON.stringify(BUNDLE)});
const source = readFileSync(file, "utf8");
let cacheFile;
let cachedData;
if (process.env.NODE_DISABLE_COMPILE_CACHE !== "1") {
  try {
    const home = os.homedir();
    const base =
      process.platform === "win32"
        ? path.join(process.env.LOCALAPPDATA || path.join(home, "AppData", "Local"), "generation-mcp", "Cache")
        : process.platform === "darwin"
          ? path.join(home, "Library", "Caches", "generation-mcp")
          : path.join(process.env.XDG_CACHE_HOME || path.join(home, ".cache"), "generation-mcp");
    const stat = statSync(file);
    // V8 rejects a cache made under other V8 flags; keep one per set of flags instead of overwriting.
    let flags = 2166136261;
    for (const ch of process.execArgv.join(" ") + " " + (process.env.NODE_OPTIONS || "")) {
      flags = Math.imul(flags ^ ch.charCodeAt(0), 16777619) >>> 0;
    }
    const key = [process.version, process.arch, stat.size, Math.round(stat.mtimeMs), stat.ino, flags.toString(36)].join("-");
    cacheFile = path.join(base, "v8-" + key.replace(/[^\\w.-]/g, "_") + ".cache");
    cachedData = readFileSync(cacheFile);
  } catch {
    cachedData = undefined;
  }
}
const wrapper = "(function (exports, require, module, __filename, __dirname) {" + source.replace(/^#!.*/, "") + "\\n})";
const script = new vm.Script(wrapper, {
  filename: file,
  cachedData,
  importModuleDynamically: vm.constants?.USE_MAIN_CONTEXT_DEFAULT_LOADER,
});
if (cacheFile && (cachedData === undefined || script.cachedDataRejected)) {
  let saved = false;
  const save = () => {
    if (saved) return;
    saved = true;
    try {
      const data = script.createCachedData();
      mkdirSync(path.dirname(cacheFile), { recursive: true, mode: 0o700 });
      const tmp = cacheFile + "." + process.pid + ".tmp";
      writeFileSync(tmp, data, { mode: 0o600 });
      renameSync(tmp, cacheFile);
      // Old builds' caches: keep the few most recent.
      const dir = path.dirname(cacheFile);
      const old = readdirSync(dir)
        .filter((f) => f.startsWith("v8-") && f.endsWith(".cache"))
        .map((f) => ({ f, t: statSync(path.join(dir, f)).mtimeMs }))
        .sort((a, b) => b.t - a.t)
        .slice(8);
      for (const { f } of old) unlinkSync(path.join(dir, f));
    } catch {
      // A read-only or missing cache folder only costs the next start its compile time.
    }
  };
  // Written once the server has been up a few seconds, so the code of its start-up and first exchange
  // (initialize, tools/list) is compiled and in the cache; short runs (--help, --version) write nothing.
  setTimeout(save, 3000).unref();
}
const module = { exports: {} };
script.runInThisContext()(module.exports, createRequire(file), module, file, path.dirname(file));
`;
writeFileSync(path.join(dist, LAUNCHER), launcher);
chmodSync(path.join(dist, LAUNCHER), 0o755);

const bytes = result.metafile.outputs[path.relative(process.cwd(), path.join(dist, BUNDLE))]?.bytes;
process.stderr.write(
  `bundle: dist/${LAUNCHER} -> dist/${BUNDLE}${bytes ? ` (${(bytes / 1024).toFixed(0)} KiB)` : ""}\n`,
);
