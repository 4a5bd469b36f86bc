#!/usr/bin/env node
/**
 * The distribution files, generated from one source so they cannot disagree: package.json (name, version,
 * description, author, license, engines, mcpName), the VARIABLES table below, and the tool list exactly as
 * the built server answers `tools/list` (describeTools() of dist/mcp/tool-list.js).
 *
 * - mcpb/manifest.json: the MCPB manifest Claude Desktop installs from (`npm run pack:mcpb` bundles it).
 * - server.json: the MCP Registry entry (schema 2025-12-11, kept in schemas/server.schema.json).
 *
 * Both are committed. test/packaging/distribution.test.ts fails when regenerating would change a byte, and
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

/**
 * The settings a user can give an installed server, each under the environment variable CONTRACT.md names.
 * `key` is the MCPB user_config key (for those offered there). `in` says where each one is offered: "mcpb" (the Claude Desktop form),
 * "stdio" and "http" (the registry's npm entries: stdio, and `--http` where each caller sends its own key,
 * so no server-side key). `kind` "directories" is a folder list: MCPB passes it as one argument per folder
 * (a variable cannot carry a list there); elsewhere it is the path-list variable. `min` is the form's lower
 * bound of a number field.
 */
export const VARIABLES = [
  {
    name: "GENERATION_API_KEY",
    key: "api_key",
    title: "API key",
    description: "Your generation service API key. Not needed in sandbox mode.",
    kind: "string",
    secret: true,
    in: ["mcpb", "stdio"],
  },
  {
    name: "GENERATION_BASE_URL",
    key: "base_url",
    title: "Service address",
    description:
      "The service address up to and including /api/v1, e.g. https://<service>/api/v1. Not needed in sandbox mode.",
    kind: "string",
    in: ["mcpb", "stdio", "http"],
  },
  {
    name: "GENERATION_SANDBOX",
    key: "sandbox",
    title: "Sandbox mode",
    description:
      "Run every tool against the built-in sandbox instead of the service: no account and no credits needed.",
    kind: "boolean",
    default: false,
    in: ["mcpb", "stdio", "http"],
  },
  {
    name: "GENERATION_OUTPUT_DIR",
    key: "output_dir",
    title: "Output folder",
    description:
      "Where download: true saves finished media. Default: Downloads/generation-mcp in your home folder.",
    kind: "directory",
    in: ["mcpb", "stdio"],
  },
  {
    name: "GENERATION_ALLOWED_DIRS",
    key: "allowed_dirs",
    title: "Upload folders",
    description:
      "Folders whose images may be uploaded. Default: Pictures, Downloads and Desktop in your home folder (those that exist).",
    kind: "directories",
    in: ["mcpb", "stdio"],
  },
  // The spend limits (CONTRACT.md "Spend limits"), offered in the Claude Desktop form and the registry's
  // entries. Numbers of estimated credits; a blank field reaches the server as its placeholder or as "",
  // which it takes as "no limit".
  {
    name: "GENERATION_DAILY_CREDITS",
    key: "daily_credits",
    title: "Daily credit limit",
    description:
      "The most estimated credits the tools may start per day (UTC); a start that would pass it is refused until midnight UTC. Leave empty for no daily limit.",
    kind: "number",
    min: 0,
    in: ["mcpb", "stdio", "http"],
  },
  {
    name: "GENERATION_MAX_CREDITS_PER_CALL",
    key: "max_credits_per_call",
    title: "Max credits per call",
    description:
      "A video or image estimated above this many credits is not started unless you confirm its cost when asked (refused where the client cannot ask). Leave empty for no per-call limit.",
    kind: "number",
    min: 0,
    in: ["mcpb", "stdio", "http"],
  },
  {
    name: "GENERATION_CONFIRM_ABOVE_CREDITS",
    key: "confirm_above_credits",
    title: "Confirm cost above",
    description:
      "Above this many estimated credits you are asked to confirm the cost before anything starts (refused where it cannot ask). At most Max credits per call when both are set. Leave empty to never ask.",
    kind: "number",
    min: 0,
    in: ["mcpb", "stdio", "http"],
  },
  {
    name: "GENERATION_HTTP_PORT",
    title: "HTTP port",
    description: "The port the server listens on (127.0.0.1).",
    kind: "number",
    in: ["http"],
  },
];

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
  const { DEFAULT_HTTP_PORT } = await import(pathToFileURL(path.join(root, "dist", "config.js")).href);
  return {
    "mcpb/manifest.json": toJsonFile(buildManifest(pkg, describeTools())),
    "server.json": toJsonFile(buildServerJson(pkg, { httpPort: DEFAULT_HTTP_PORT })),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
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
