#!/usr/bin/env node
/**
 * bin entry: `generation-mcp` (stdio, real service), `generation-mcp --sandbox` (stdio, embedded sandbox),
 * `--http` (Streamable HTTP), `generation-mcp sandbox` (only the sandbox REST service). stdout belongs to
 * the protocol: nothing else is ever written there but what --help and --version ask for.
 */
import { createRequire } from "node:module";
import { parseArgs } from "node:util";
import * as z from "zod";
import {
  ConfigError,
  FLAG_OPTIONS,
  describeOptions,
  isMetricsOn,
  isUnfilledPlaceholder,
  loadConfig,
} from "./config/index.js";
import { Logger } from "./logger.js";
import { redact, registerSecret } from "./redact.js";
import { missingFolders } from "./files/allowed-dirs.js";
import { StartError, serve } from "./serve.js";

// Every schema here is parsed a few times, not millions: compiling each parser on first use costs more.
z.config({ jitless: true });

/** Inlined by the bundler (scripts/bundle.mjs); the tsc build reads package.json beside dist/. */
declare const __GENERATION_MCP_VERSION__: string | undefined;
const VERSION =
  typeof __GENERATION_MCP_VERSION__ === "string"
    ? __GENERATION_MCP_VERSION__
    : (createRequire(import.meta.url)("../package.json") as { version: string }).version;

const USAGE = `generation-mcp ${VERSION} — MCP server for AI video and image generation

Usage:
  generation-mcp                 MCP server on stdio against the real service
                                 (needs GENERATION_API_KEY and GENERATION_BASE_URL)
  generation-mcp --sandbox       MCP server on stdio backed by the built-in sandbox (no account needed)
  generation-mcp --http [--port N] [--host H]
                                 MCP Streamable HTTP at /mcp (stateless); each caller sends its own service
                                 key as Authorization: Bearer, or, with caller tokens, the server's key serves
  generation-mcp sandbox [--port N] [--host H]
                                 only the sandbox REST service; prints its base URL and API keys on stderr
  generation-mcp [options] [--] DIR...
                                 DIRs: upload folders, as --allowed-dirs (how Claude Desktop bundles pass them)
  generation-mcp --help | --version

Every option mirrors an environment variable (precedence: defaults < environment < flags); the API key
is read only from GENERATION_API_KEY, so it stays out of process lists.
`;

async function main(argv: string[]): Promise<void> {
  // A client that went away closes our stderr too: a failed log write must not take the process down.
  process.stderr.on("error", () => undefined);
  if (argv[0] === "sandbox") {
    const { runSandboxCommand } = await import("./sandbox/cli.js");
    return runSandboxCommand(argv.slice(1));
  }
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      ...FLAG_OPTIONS,
      help: { type: "boolean", short: "h" },
      version: { type: "boolean", short: "v" },
    },
    strict: true,
    allowPositionals: true,
  });
  // Asked for, so they are the output: stdout (no server runs, so no protocol is on it).
  if (values.help) return void process.stdout.write(`${USAGE}${describeOptions()}\n`);
  if (values.version) return void process.stdout.write(`${VERSION}\n`);
  const flags = Object.fromEntries(
    Object.entries(values).flatMap(([name, value]) =>
      typeof value === "string" || value === true ? [[`--${name}`, value]] : [],
    ),
  );
  // Registered before the configuration is checked: a refusal may quote a value the key was pasted into.
  const rawKey = process.env["GENERATION_API_KEY"]?.trim();
  if (rawKey !== undefined && !isUnfilledPlaceholder(rawKey)) registerSecret(rawKey);
  const config = loadConfig({ env: process.env, flags, directories: positionals });
  registerSecret(config.apiKey);
  const logger = new Logger();
  // Dropped from the allowed folders without a word, a typo would only show as refused uploads later.
  const missing = await missingFolders(config.allowedDirs ?? []);
  if (missing.length > 0) {
    logger.warning(
      `upload folders that do not exist (--allowed-dirs / GENERATION_ALLOWED_DIRS): ${missing.map((dir) => JSON.stringify(dir)).join(", ")}; ` +
        "nothing can be uploaded from them until they are created (check the spelling).",
    );
  }
  if (config.http === undefined && isMetricsOn(process.env["GENERATION_METRICS"])) {
    logger.warning(
      "GENERATION_METRICS=on applies to --http only (GET /metrics): a stdio session serves no metrics, so it is ignored here.",
    );
  }
  await serve(config, logger, VERSION);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  // Not a usage mistake: one line that says what is wrong and what to do.
  if (error instanceof Error && (error.name === "SandboxStartError" || error instanceof StartError)) {
    const who = error instanceof StartError ? "generation-mcp" : "generation-mcp sandbox";
    process.stderr.write(redact(`${who}: ${error.message}\n`));
    process.exit(1);
  }
  const expected =
    error instanceof ConfigError ||
    (error instanceof Error && error.name === "SandboxUsageError") ||
    (error instanceof Error && "code" in error && String(error.code).startsWith("ERR_PARSE_ARGS"));
  const message = !(error instanceof Error)
    ? String(error)
    : expected
      ? error.message
      : (error.stack ?? error.message);
  process.stderr.write(redact(`generation-mcp: ${message}\nRun generation-mcp --help for usage.\n`));
  process.exit(2);
});
