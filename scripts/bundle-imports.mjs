#!/usr/bin/env node
/**
 * Proves the bundle is self-contained: lists every module specifier that dist/bundle/**\/*.js can load at
 * run time and fails on any that is not a Node built-in or a file of the bundle itself. The published
 * package has no dependencies (the bundle inlines them), so one such import would crash a user's install.
 * The one exception is OPTIONAL_EXTERNALS (sharp, native, for image previews), and only as `import()`: a
 * dynamic import fails where it is awaited, which the previews turn into "previews unavailable", where a
 * static import or a require would fail the whole start.
 *
 * What counts as a load: `import … from "x"`, `export … from "x"`, `import "x"`, `import("x")`, and a call
 * of an identifier with one string, `f("x")`, which is how esbuild's output requires a CommonJS module it
 * left external (through its minified `__require` shim). Strings, template literals, comments and regular
 * expressions are skipped by a small lexer, so code held in a string (ajv keeps `require("ajv/dist/…")`
 * snippets for its standalone mode) is not taken for an import.
 *
 * Usage: node scripts/bundle-imports.mjs [dir]   (default dist/bundle; exit 1 on a violation)
 */
import { readdirSync, readFileSync, existsSync } from "node:fs";
import { createRequire, isBuiltin } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

// Tokens after which `/` starts a regular expression rather than a division.
const REGEX_AFTER_WORDS = new Set([
  "return",
  "typeof",
  "instanceof",
  "in",
  "of",
  "new",
  "delete",
  "void",
  "throw",
  "case",
  "do",
  "else",
  "yield",
  "await",
]);
const isIdentStart = (c) => /[A-Za-z_$]/.test(c) || c.charCodeAt(0) >= 0x80;
const isIdentPart = (c) => /[\w$]/.test(c) || c.charCodeAt(0) >= 0x80;

/**
 * Splits JavaScript source into `{ type: "name" | "string" | "punct" | "number" | "regex" | "template",
 * value }` tokens (template literals are one token each, their `${}` parts lexed as code). Throws when
 * the source ends inside a string, comment, regex or template: a lexer that lost its way must not pass a
 * bundle.
 */
export function tokenize(source) {
  const tokens = [];
  const braces = []; // "{" for a block or object, "${" for a template substitution
  let i = source.startsWith("#!") ? source.indexOf("\n") + 1 || source.length : 0;
  const fail = (what) => {
    throw new Error(`bundle-imports: unterminated ${what} at offset ${i}`);
  };
  const regexAllowed = () => {
    const last = tokens.at(-1);
    if (!last) return true;
    if (last.type === "name") return REGEX_AFTER_WORDS.has(last.value);
    if (last.type === "punct") return ![")", "]", "++", "--"].includes(last.value);
    return false;
  };
  // Reads template characters from i (just after a backtick or a closing `}` of `${`); returns true when
  // a `${` opened, false when the template ended.
  const templateChars = () => {
    while (i < source.length) {
      const c = source[i];
      if (c === "\\") i += 2;
      else if (c === "`") {
        i += 1;
        return false;
      } else if (c === "$" && source[i + 1] === "{") {
        i += 2;
        return true;
      } else i += 1;
    }
    return fail("template literal");
  };
  const template = () => {
    if (templateChars()) braces.push("${");
    tokens.push({ type: "template", value: "`" });
  };

  while (i < source.length) {
    const c = source[i];
    const next = source[i + 1];
    if (/\s/.test(c)) i += 1;
    else if (c === "/" && next === "/") {
      const end = source.indexOf("\n", i);
      i = end < 0 ? source.length : end;
    } else if (c === "/" && next === "*") {
      const end = source.indexOf("*/", i + 2);
      if (end < 0) fail("comment");
      i = end + 2;
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      while (j < source.length && source[j] !== c) {
        if (source[j] === "\\") j += 1;
        else if (source[j] === "\n") break;
        j += 1;
      }
      if (source[j] !== c) fail("string");
      tokens.push({ type: "string", value: source.slice(i + 1, j) });
      i = j + 1;
    } else if (c === "`") {
      i += 1;
      template();
    } else if (c === "/" && regexAllowed()) {
      let j = i + 1;
      let inClass = false;
      while (j < source.length && (inClass || source[j] !== "/")) {
        if (source[j] === "\\") j += 1;
        else if (source[j] === "[") inClass = true;
        else if (source[j] === "]") inClass = false;
        else if (source[j] === "\n") break;
        j += 1;
      }
      if (source[j] !== "/") fail("regular expression");
      j += 1;
      while (j < source.length && isIdentPart(source[j])) j += 1;
      tokens.push({ type: "regex", value: source.slice(i, j) });
      i = j;
    } else if (isIdentStart(c)) {
      let j = i + 1;
      while (j < source.length && isIdentPart(source[j])) j += 1;
      tokens.push({ type: "name", value: source.slice(i, j) });
      i = j;
    } else if (/\d/.test(c) || (c === "." && /\d/.test(next ?? ""))) {
      let j = i + 1;
      while (j < source.length && /[\w.]/.test(source[j])) j += 1;
      tokens.push({ type: "number", value: source.slice(i, j) });
      i = j;
    } else if (c === "{") {
      braces.push("{");
      tokens.push({ type: "punct", value: c });
      i += 1;
    } else if (c === "}") {
      i += 1;
      if (braces.pop() === "${") template();
      else tokens.push({ type: "punct", value: c });
    } else if ((c === "+" || c === "-") && next === c) {
      tokens.push({ type: "punct", value: c + c });
      i += 2;
    } else {
      tokens.push({ type: "punct", value: c });
      i += 1;
    }
  }
  if (braces.length > 0) fail(braces.at(-1) === "${" ? "template literal" : "block");
  return tokens;
}

/** Optional packages the bundle may load with `import()` only; package.json lists them as optional. */
export const OPTIONAL_EXTERNALS = new Set(["sharp"]);

/** Globals called with one string that never load a module (`Symbol("destroy")` is not a require). */
const GLOBAL_CALLS = new Set(["Symbol", "String", "Number", "Boolean", "BigInt", "RegExp", "Date", "Error"]);

/**
 * The specifiers one source file can load: `{ specifier, kind: "import" | "dynamic" | "call" }`. "import"
 * is the module syntax, "dynamic" `import()`; "call" is `f("x")`, which may be a require or an ordinary call.
 */
export function findSpecifiers(source) {
  const tokens = tokenize(source);
  const found = [];
  for (let k = 0; k < tokens.length; k += 1) {
    const t = tokens[k];
    const next = tokens[k + 1];
    if (t.type !== "name" || !next) continue;
    const prev = tokens[k - 1];
    const member = prev?.type === "punct" && prev.value === ".";
    if ((t.value === "from" || t.value === "import") && next.type === "string" && !member) {
      found.push({ specifier: next.value, kind: "import" });
    } else if (next.value === "(" && tokens[k + 2]?.type === "string") {
      // require takes exactly one argument; import() may take options after it.
      const closes = tokens[k + 3];
      const single = closes?.type === "punct" && closes.value === ")";
      if (t.value === "import" && !member) found.push({ specifier: tokens[k + 2].value, kind: "dynamic" });
      else if (!member && single && !GLOBAL_CALLS.has(t.value) && !namesItsOwnProperty(tokens, k)) {
        found.push({ specifier: tokens[k + 2].value, kind: "call" });
      }
    }
  }
  return found;
}

/**
 * `o.debug=f("debug")`: a call assigned to the property its string names (OpenTelemetry's logger, bundled with
 * prom-client, makes its levels so) loads nothing.
 */
function namesItsOwnProperty(tokens, k) {
  const [dot, property, assign] = tokens.slice(k - 3, k);
  return dot?.value === "." && property?.value === tokens[k + 2].value && assign?.value === "=";
}

/** `@scope/name/sub` -> `@scope/name`; `name/sub` -> `name`. */
export function packageName(specifier) {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] ?? specifier);
}

const requireHere = createRequire(import.meta.url);
/**
 * Whether a one-string call naming a package names something in it: "prompts/get" in the SDK's minified zod
 * literals is no file of the `prompts` package (a tool's dependency). A bare name, or a path that exists or
 * that the package does not export, counts.
 */
function namesModule(specifier) {
  if (specifier === packageName(specifier)) return true;
  try {
    requireHere.resolve(specifier);
    return true;
  } catch (error) {
    return error?.code !== "MODULE_NOT_FOUND";
  }
}

/** Every package name package-lock.json installs (direct or nested), for telling requires from calls. */
export function lockedPackages(root) {
  const lock = JSON.parse(readFileSync(path.join(root, "package-lock.json"), "utf8"));
  const names = new Set();
  for (const key of Object.keys(lock.packages ?? {})) {
    const at = key.lastIndexOf("node_modules/");
    if (at >= 0) names.add(key.slice(at + "node_modules/".length));
  }
  return names;
}

function listJs(dir, into = []) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) listJs(file, into);
    else if (/\.[cm]?js$/.test(entry.name)) into.push(file);
  }
  return into.sort();
}

/**
 * Scans every .js file under `dir`. An import of anything but a built-in, an existing file of the bundle or
 * (dynamic only) an optional external is a violation, and so is a one-string call naming a package in
 * `packages` (a require esbuild left external). Returns `{ files, builtins, optional, violations }`, the
 * lists sorted, each violation as `file: specifier (kind)`.
 */
export function scanBundle(dir, packages) {
  const files = listJs(dir);
  const builtins = new Set();
  const optional = new Set();
  const violations = new Set();
  for (const file of files) {
    const where = path.relative(dir, file);
    for (const { specifier, kind } of findSpecifiers(readFileSync(file, "utf8"))) {
      if (isBuiltin(specifier)) builtins.add(specifier);
      else if (/^\.{0,2}\//.test(specifier)) {
        const target = path.resolve(path.dirname(file), specifier);
        if (kind !== "call" && !existsSync(target)) violations.add(`${where}: ${specifier} (missing file)`);
      } else if (kind === "dynamic" && OPTIONAL_EXTERNALS.has(specifier)) {
        optional.add(specifier);
      } else if (kind !== "call" || (packages.has(packageName(specifier)) && namesModule(specifier))) {
        violations.add(`${where}: ${specifier} (${kind === "call" ? "require" : "import"})`);
      }
    }
  }
  return {
    files: files.map((file) => path.relative(dir, file)),
    builtins: [...builtins].sort(),
    optional: [...optional].sort(),
    violations: [...violations].sort(),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
  const dir = path.resolve(process.argv[2] ?? path.join(root, "dist", "bundle"));
  const { files, builtins, optional, violations } = scanBundle(dir, lockedPackages(root));
  if (violations.length > 0) {
    process.stderr.write(`bundle-imports: ${violations.length} import(s) outside the bundle:\n`);
    for (const line of violations) process.stderr.write(`  ${line}\n`);
    process.exit(1);
  }
  process.stderr.write(
    `bundle-imports: ${files.length} file(s) in ${path.relative(process.cwd(), dir) || "."} load only ` +
      `Node built-ins (${builtins.length}) and each other` +
      (optional.length > 0 ? `, plus import() of the optional ${optional.join(", ")}\n` : "\n"),
  );
}
