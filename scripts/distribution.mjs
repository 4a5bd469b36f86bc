#!/usr/bin/env node
/**
 * The distribution files, generated from one source so they cannot disagree: package.json (name, version,
 * description, author, license, engines, mcpName), the settings table of src/config/schema.ts (as built:
 * which settings exist and their kinds; OFFERED below picks those an install offers and words its form), and
 * the tool list exactly as the built server answers `tools/list` (describeTools() of dist/mcp/tool-list.js).
 *
 * - mcpb/manifest.json: the MCPB manifest Claude Desktop installs from (`npm run pack:mcpb` bundles it).
 * - server.json: the MCP Registry entry (schema 2025-12-11, kept in schemas/server.schema.json).
 *
 * Both are committed. test/e2e/packaging/distribution.test.ts fails when regenerating would change a byte, and
 * checks them against the registry schema, package.json and CONTRACT.md.
 *
 * Usage: node scripts/distribution.mjs [--write]   (after `npm run build`; without --write it prints them)
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** The manifest spec's current version (MANIFEST.md); @anthropic-ai/mcpb 2.1.2 validates 0.1 to 0.4. */
export const MANIFEST_VERSION = "0.3";
export const REGISTRY_SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json";
/** The name clients show: the same as serverInfo.title in src/server.ts (the packaging test compares). */
export const DISPLAY_NAME = "Video & image generation";
/** Where the bundle (dist/bundle) sits inside the .mcpb. */
export const ENTRY_POINT = "server/cli.js";
export const PLATFORMS = ["darwin", "win32", "linux"];

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** The one table of settings (src/config/schema.ts), as built: which settings exist, their kinds, defaults. */
const { SETTINGS, DEFAULTS } = await import(
  pathToFileURL(path.join(root, "dist", "config", "schema.js")).href
);

/**
 * The settings an installed server offers, in this order, each as the table has it (its variable, what kind
 * of field). `in` says where: "mcpb" (Claude Desktop's form, under `key`), "stdio" and "http" (the
 * registry's npm entries: stdio, and `--http` where each caller sends its own key, so no server-side key).
 * The titles and descriptions are the form's words for a person installing it.
 */
const OFFERED = {
  GENERATION_API_KEY: {
    title: "API key",
    description: "Your generation service API key. Not needed in sandbox mode.",
    in: ["mcpb", "stdio"],
  },
  GENERATION_BASE_URL: {
    title: "Service address",
    description:
      "The service address up to and including /api/v1, e.g. https://<service>/api/v1. Not needed in sandbox mode.",
    in: ["mcpb", "stdio", "http"],
  },
  GENERATION_SANDBOX: {
    title: "Sandbox mode",
    description:
      "Run every tool against the built-in sandbox instead of the service: no account and no credits needed.",
    in: ["mcpb", "stdio", "http"],
  },
  GENERATION_OUTPUT_DIR: {
    title: "Output folder",
    description:
      "Where download: true saves finished media. Default: Downloads/generation-mcp in your home folder.",
    in: ["mcpb", "stdio"],
  },
  GENERATION_ALLOWED_DIRS: {
    title: "Upload folders",
    description:
      "Folders whose images may be uploaded. Default: Pictures, Downloads and Desktop in your home folder (those that exist).",
    in: ["mcpb", "stdio"],
  },
  // The spend limits (CONTRACT.md "Spend limits"): a blank field reaches the server as its placeholder or as
  // "", which it takes as "no limit".
  GENERATION_DAILY_CREDITS: {
    title: "Daily credit limit",
    description:
      "The most estimated credits the tools may start per day (UTC); a start that would pass it is refused until midnight UTC. Leave empty for no daily limit.",
    in: ["mcpb", "stdio", "http"],
  },
  GENERATION_MAX_CREDITS_PER_CALL: {
    title: "Max credits per call",
    description:
      "A video or image estimated above this many credits is not started unless you confirm its cost when asked (refused where the client cannot ask). Leave empty for no per-call limit.",
    in: ["mcpb", "stdio", "http"],
  },
  GENERATION_CONFIRM_ABOVE_CREDITS: {
    title: "Confirm cost above",
    description:
      "Above this many estimated credits you are asked to confirm the cost before anything starts (refused where it cannot ask). At most Max credits per call when both are set. Leave empty to never ask.",
    in: ["mcpb", "stdio", "http"],
  },
  // Claude Desktop on macOS may not see Homebrew's PATH: without ffmpeg a video has no sheet of its frames.
  GENERATION_FFMPEG_PATH: {
    title: "ffmpeg binary",
    description:
      "The ffmpeg that makes the sheet of a finished video's frames (e.g. /opt/homebrew/bin/ffmpeg). Leave empty to use ffmpeg on PATH.",
    in: ["mcpb", "stdio"],
  },
  GENERATION_HTTP_PORT: {
    title: "HTTP port",
    description: "The port the server listens on (127.0.0.1).",
    in: ["http"],
  },
};

/** The table's kinds as form fields: a switch is a boolean (off), credits a number of at least 0. */
const FIELD = {
  secret: "string",
  text: "string",
  switch: "boolean",
  number: "number",
  credits: "number",
  dir: "directory",
  dirs: "directories",
};

/** Each offered setting: `key` is its MCPB user_config key, `kind` "directories" a folder list. */
export const VARIABLES = Object.entries(OFFERED).map(([name, offer]) => {
  const setting = SETTINGS[name];
  if (setting === undefined) throw new Error(`distribution: ${name} is not in src/config/schema.ts`);
  return {
    name,
    key: name.replace(/^GENERATION_/, "").toLowerCase(),
    ...offer,
    kind: FIELD[setting.kind] ?? "string",
    ...(setting.kind === "secret" && { secret: true }),
    ...(setting.kind === "switch" && { default: false }),
    ...(setting.kind === "credits" && { min: 0 }),
  };
});

const placeholder = (variable) => `\${user_config.${variable.key}}`;

function userConfigField(variable) {
  const field = {
    type: variable.kind === "directories" ? "directory" : variable.kind,
    title: variable.title,
    description: variable.description,
    required: false,
  };
  if (variable.kind === "directories") field.multiple = true;
  if (variable.secret) field.sensitive = true;
  if (variable.default !== undefined) field.default = variable.default;
  if (variable.min !== undefined) field.min = variable.min;
  return field;
}

/** The MCPB manifest (https://github.com/modelcontextprotocol/mcpb, MANIFEST.md). */
export function buildManifest(pkg, tools) {
  const offered = VARIABLES.filter((variable) => variable.in.includes("mcpb"));
  const folderLists = offered.filter((variable) => variable.kind === "directories");
  return {
    manifest_version: MANIFEST_VERSION,
    name: pkg.name,
    display_name: DISPLAY_NAME,
    version: pkg.version,
    description: pkg.description,
    author: { name: pkg.author },
    license: pkg.license,
    keywords: pkg.keywords,
    icon: "icon.png",
    server: {
      type: "node",
      entry_point: ENTRY_POINT,
      mcp_config: {
        command: "node",
        // "--settings-form mcpb": advice names the form's fields ("Upload folders") instead of variables
        // the user never sees. "--": a folder whose name starts with "-" stays a folder.
        args: [
          `\${__dirname}/${ENTRY_POINT}`,
          "--settings-form",
          "mcpb",
          "--",
          ...folderLists.map(placeholder),
        ],
        env: Object.fromEntries(
          offered
            .filter((variable) => variable.kind !== "directories")
            .map((variable) => [variable.name, placeholder(variable)]),
        ),
      },
    },
    tools: tools.map((tool) => ({ name: tool.name, description: tool.description })),
    compatibility: { platforms: PLATFORMS, runtimes: { node: pkg.engines.node } },
    user_config: Object.fromEntries(offered.map((variable) => [variable.key, userConfigField(variable)])),
  };
}

const REGISTRY_FORMAT = { boolean: "boolean", number: "number", directory: "filepath" };

function registryVariable(variable, defaults) {
  const entry = {
    name: variable.name,
    description:
      variable.kind === "directories"
        ? `${variable.description} Separate several with : (; on Windows).`
        : variable.description,
    isRequired: false,
  };
  if (REGISTRY_FORMAT[variable.kind]) entry.format = REGISTRY_FORMAT[variable.kind];
  if (variable.secret) entry.isSecret = true;
  const value = defaults[variable.name] ?? variable.default;
  if (value !== undefined) entry.default = String(value);
  return entry;
}

/**
 * The MCP Registry entry: the npm package twice, once per transport it serves. There is no `remotes` entry:
 * that is for a server running at a public URL, and this one runs where the user starts it.
 */
export function buildServerJson(pkg, { httpPort }) {
  const npm = {
    registryType: "npm",
    registryBaseUrl: "https://registry.npmjs.org",
    identifier: pkg.name,
    version: pkg.version,
  };
  const defaults = { GENERATION_HTTP_PORT: httpPort };
  const variablesFor = (target) =>
    VARIABLES.filter((variable) => variable.in.includes(target)).map((variable) =>
      registryVariable(variable, defaults),
    );
  return {
    $schema: REGISTRY_SCHEMA,
    name: pkg.mcpName,
    title: DISPLAY_NAME,
    description: pkg.description,
    version: pkg.version,
    packages: [
      { ...npm, transport: { type: "stdio" }, environmentVariables: variablesFor("stdio") },
      {
        ...npm,
        packageArguments: [{ type: "positional", value: "--http" }],
        transport: {
          type: "streamable-http",
          url: "http://127.0.0.1:{GENERATION_HTTP_PORT}/mcp",
          headers: [
            {
              name: "Authorization",
              description:
                "Each caller's own service API key (with GENERATION_SANDBOX, one of the sandbox's keys).",
              value: "Bearer {api_key}",
              isRequired: true,
              isSecret: true,
              variables: {
                api_key: {
                  description: "Your generation service API key.",
                  isRequired: true,
                  isSecret: true,
                },
              },
            },
          ],
        },
        environmentVariables: variablesFor("http"),
      },
    ],
  };
}

export const toJsonFile = (value) => `${JSON.stringify(value, null, 2)}\n`;

/** Both files as they should be, from package.json and the build in `root`/dist. */
export async function renderDistribution(root) {
  const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
  const { describeTools } = await import(pathToFileURL(path.join(root, "dist", "mcp", "tool-list.js")).href);
  return {
    "mcpb/manifest.json": toJsonFile(buildManifest(pkg, describeTools())),
    "server.json": toJsonFile(buildServerJson(pkg, { httpPort: DEFAULTS.httpPort })),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const files = await renderDistribution(root);
  for (const [file, text] of Object.entries(files)) {
    if (process.argv.includes("--write")) {
      writeFileSync(path.join(root, file), text);
      process.stderr.write(`distribution: ${file} written\n`);
    } else {
      process.stdout.write(`--- ${file}\n${text}`);
    }
  }
}
