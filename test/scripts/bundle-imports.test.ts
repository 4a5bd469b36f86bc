/**
 * The scanner behind "the bundle imports no npm package" (scripts/bundle-imports.mjs), on hand-written
 * minified code shaped like esbuild's output. test/e2e/package.test.ts runs it on the installed bundle.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error -- a plain ESM script run by npm (prepack) and by the package test
import { findSpecifiers, packageName, scanBundle, tokenize } from "../../scripts/bundle-imports.mjs";

interface Found {
  specifier: string;
  kind: "import" | "dynamic" | "call";
}
const specifiers = (source: string, kind: Found["kind"]) =>
  (findSpecifiers(source) as Found[]).filter((found) => found.kind === kind).map((found) => found.specifier);

describe("findSpecifiers", () => {
  const source = [
    "#!/usr/bin/env node",
    'import{a as h}from"./chunks/chunk.js";import"side-effect";export*from"re-export";',
    'import def,{x}from "spaced";const u=await import("undici"),o=import("opts",{with:{type:"json"}});',
    'var m=h("mime-types"),s=h("stream"),n=require("node:fs");r.debug=e("debug");',
    // Code held in strings, comments and regular expressions is not loaded.
    'var q=\'require("ajv/dist/runtime/uri").default\',t=`require("ajv/dist/runtime/equal") ${h("zod")} x`;',
    '/* import("commented") */ // require("line-comment")',
    'var r=/from"regex"\\/[/"]/g,d=a/2/b,k=(c)/2;e.on("error");f("two","args");Buffer.from("abc");Symbol("destroy");',
    'if(x)return/import("re")/.test(y);var z=`a${`b${h("nested")}`}`;',
  ].join("\n");

  it("finds module syntax and import() with a string", () => {
    expect(specifiers(source, "import")).toEqual(["./chunks/chunk.js", "side-effect", "re-export", "spaced"]);
    expect(specifiers(source, "dynamic")).toEqual(["undici", "opts"]);
  });

  it("finds one-string calls in code, template substitutions included, and nothing in strings or comments", () => {
    expect(specifiers(source, "call")).toEqual(["mime-types", "stream", "node:fs", "zod", "nested"]);
  });

  it("refuses source it cannot follow rather than passing it", () => {
    expect(() => tokenize('var a="open')).toThrow(/unterminated string/);
    expect(() => tokenize("var a=`open ${b}")).toThrow(/unterminated template literal/);
    expect(() => tokenize("function f(){")).toThrow(/unterminated block/);
  });

  it("names the package of a deep specifier", () => {
    expect(packageName("ajv/dist/runtime/uri")).toBe("ajv");
    expect(packageName("@modelcontextprotocol/sdk/server/index.js")).toBe("@modelcontextprotocol/sdk");
  });
});

describe("scanBundle", () => {
  it("reports npm packages and missing chunks, and accepts built-ins, its own files and calls naming no module", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "generation-mcp-scan-"));
    try {
      mkdirSync(path.join(dir, "chunks"));
      writeFileSync(
        path.join(dir, "cli.js"),
        'import{a as r}from"./chunks/shim.js";import"node:module";const c=()=>import("./chunks/gone.js");' +
          'var s=r("stream"),b=r("busboy/lib/utils"),l=log("not-a-dependency"),m=j("busboy/get");',
      );
      writeFileSync(path.join(dir, "chunks", "shim.js"), 'export{a};import{z}from"zod";');
      const result = scanBundle(dir, new Set(["busboy", "zod"]));
      expect(result.files).toEqual(["chunks/shim.js", "cli.js"]);
      expect(result.builtins).toEqual(["node:module", "stream"]);
      expect(result.optional).toEqual([]);
      expect(result.violations).toEqual([
        "chunks/shim.js: zod (import)",
        "cli.js: ./chunks/gone.js (missing file)",
        "cli.js: busboy/lib/utils (require)",
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("allows the optional sharp through import() only, never a static import or a require", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "generation-mcp-scan-"));
    try {
      writeFileSync(path.join(dir, "lazy.js"), 'const s=async()=>(await import("sharp")).default;');
      writeFileSync(path.join(dir, "static.js"), 'import s from"sharp";');
      writeFileSync(path.join(dir, "required.js"), 'var s=r("sharp");');
      const result = scanBundle(dir, new Set(["sharp"]));
      expect(result.optional).toEqual(["sharp"]);
      expect(result.violations).toEqual(["required.js: sharp (require)", "static.js: sharp (import)"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
