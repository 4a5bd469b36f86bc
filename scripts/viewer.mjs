/**
 * Builds the MCP Apps viewer into one self-contained HTML string: src/ui/viewer-app.ts bundled for the
 * browser (esbuild, minified) and inlined into src/ui/viewer.html at its marker. scripts/bundle.mjs puts
 * the result into the server bundle, so serving it reads no file at run time.
 *
 * Usage: import { buildViewerHtml } from "./viewer.mjs"   (or run it: prints the HTML's size)
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const MARKER = /<script>\s*\/\* viewer-app \*\/\s*<\/script>/;

/** The viewer's HTML, script inlined; throws when the template lost its marker. */
export async function buildViewerHtml() {
  const template = readFileSync(path.join(root, "src", "ui", "viewer.html"), "utf8");
  if (!MARKER.test(template)) throw new Error("src/ui/viewer.html: the viewer-app script marker is missing");
  const result = await build({
    entryPoints: [path.join(root, "src", "ui", "viewer-app.ts")],
    bundle: true,
    write: false,
    format: "iife",
    platform: "browser",
    target: "es2020",
    minify: true,
    legalComments: "none",
    logLevel: "warning",
  });
  const script = result.outputFiles[0].text.trim();
  // The template's own comment says how it is built; the host gets the page without it.
  const page = template.replace(/<!--[\s\S]*?-->\s*/, "");
  return page.replace(MARKER, () => `<script>${script}</script>`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const html = await buildViewerHtml();
  process.stdout.write(`viewer: ${Buffer.byteLength(html)} bytes\n`);
}
