#!/usr/bin/env node
/**
 * bin entry: the MCP server (stdio or `--http`; the real service or `--sandbox`), `generation-mcp sandbox`
 * and the commands. stdout belongs to the protocol: nothing else goes there but what --help or --version ask.
 */
import { createRequire } from "node:module";
import * as z from "zod";
import {
  COMMANDS,
  ConfigError,
  type Config,
  FLAG_OPTIONS,
  describeCommands,
  describeOptions,
  isOn,
  isUnfilledPlaceholder,
  loadConfig,
  settingFlags,
} from "./config/index.js";
import { parseFlags, unknownVariables } from "./config/did-you-mean.js";
import { adviceModeFor } from "./advice.js";
import { localCaller } from "./auth/caller.js";
import { Logger } from "./logger.js";
import { redact, registerSecret } from "./redact.js";
import { existingUploadFolders, missingFolders } from "./files/allowed-dirs.js";
import { openService } from "./cli/service.js";
// Only the stdio session's opening path is imported statically (one chunk of the bundle); the rest is lazy.
import type { ServiceTarget } from "./runtime.js";
import { serveStdio } from "./transports/stdio.js";
import type { UploadDesk } from "./uploads/desk.js";

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
  generation-mcp <command> [flags]
                                 the same tools as a command line (below; docs/cli.md)
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
  // Registered before the configuration is checked: a refusal may quote a value the key was pasted into.
  const rawKey = process.env["GENERATION_API_KEY"]?.trim();
  if (rawKey !== undefined && !isUnfilledPlaceholder(rawKey)) registerSecret(rawKey);
  for (const warning of unknownVariables(process.env)) process.stderr.write(`generation-mcp: ${warning}\n`);
  const command = argv[0] ?? "";
  if (Object.hasOwn(COMMANDS, command)) {
    const { runCommand } = await import("./cli/run.js");
    // The runtime's waits (a retry's back-off) do not hold a server's process open; a command's must.
    const alive = setInterval(() => undefined, 60_000);
    const code = await runCommand(command as keyof typeof COMMANDS, argv.slice(1), VERSION).finally(() =>
      clearInterval(alive),
    );
    // Whatever a library left open (a keep-alive socket), a finished command ends.
    process.exitCode = code;
    return void setTimeout(() => process.exit(code), 1000).unref();
  }
  const { values, positionals } = parseFlags(argv, {
    ...FLAG_OPTIONS,
    help: { type: "boolean", short: "h" },
    version: { type: "boolean", short: "v" },
  });
  // Asked for, so they are the output (no server runs, so no protocol is on stdout).
  if (values.help) {
    return void process.stdout.write(`${USAGE}\n${describeCommands()}\n${describeOptions()}\n`);
  }
  if (values.version) return void process.stdout.write(`${VERSION}\n`);
  const config = loadConfig({ env: process.env, flags: settingFlags(values), directories: positionals });
  const logger = new Logger();
  // Dropped from the allowed folders without a word, a typo would only show as refused uploads later.
  const missing = await missingFolders(config.allowedDirs ?? []);
  if (missing.length > 0) {
    logger.warning(
      `upload folders that do not exist (--allowed-dirs / GENERATION_ALLOWED_DIRS): ${missing.map((dir) => JSON.stringify(dir)).join(", ")}; ` +
        "nothing can be uploaded from them until they are created (check the spelling).",
    );
  }
  if (config.http === undefined && config.allowedDirs === undefined) {
    if ((await existingUploadFolders(config)).length === 0) {
      logger.warning(
        "no upload folder exists (~/Pictures, ~/Downloads, ~/Desktop or the output folder), so local images can be " +
          "uploaded only from the client's MCP roots: set GENERATION_ALLOWED_DIRS (or --allowed-dirs) to the folders to allow.",
      );
    }
  }
  if (config.http === undefined && isOn(process.env["GENERATION_METRICS"])) {
    logger.warning(
      "GENERATION_METRICS=on applies to --http only (GET /metrics): a stdio session serves no metrics, so it is ignored here.",
    );
  }
  await serve(config, logger);
}

/** The longest a shutdown may take: running calls get a few seconds to answer, then everything closes. */
const SHUTDOWN_LIMIT_MS = 6000;

/** The server could not start where it was asked to: one line to print as is (no stack, no usage hint). */
class StartError extends Error {
  override name = "StartError";
}

/** MCP over stdio (one client, one runtime) or Streamable HTTP (a runtime per service key) until stopped. */
async function serve(config: Config, logger: Logger): Promise<void> {
  const { target, hub, close: closeAll } = await openService(config, logger);
  const makeRuntime = async (serving: ServiceTarget, uploads?: UploadDesk) =>
    (await import("./runtime.js")).createRuntime(config, serving, logger, VERSION, {}, hub, uploads);
  const mediaOrigin = URL.canParse(target.baseUrl) ? new URL(target.baseUrl).origin : undefined;
  if (config.http === undefined) {
    const serving = serveStdio({
      version: VERSION,
      session: { caller: localCaller(target.apiKey), advice: adviceModeFor(config, undefined), mediaOrigin },
      makeRuntime: () => makeRuntime(target),
      logger,
    });
    // Running calls answer first (a started task with its video_id), then the channel and the sandbox close.
    const shutdown = onShutdown(async () => {
      await serving.close();
      await closeAll();
    });
    void serving.finished.then(shutdown);
    return logger.info(`generation-mcp ${VERSION} ready on stdio`);
  }
  const http = config.http;
  const [{ serveHttp }, { UploadDesk }] = await Promise.all([
    import("./transports/http.js"),
    import("./uploads/desk.js"),
  ]);
  // One desk for every caller's runtime: a link made by one is served and answered for all.
  const uploads = new UploadDesk(hub?.uploadLinks, config.uploadLinkTtlS * 1000);
  const server = await serveHttp({
    http,
    version: VERSION,
    logger,
    serviceKey: target.apiKey,
    mediaOrigin,
    makeRuntime: (apiKey, callerKey) => makeRuntime({ ...target, apiKey, callerKey }, uploads),
    sharedStateReady: hub === undefined ? undefined : () => hub.ready(),
    uploads,
  }).catch(async (error: unknown) => {
    // A port in use is a first mistake, not a bug: one line that says how to pick another, as `sandbox` does.
    const syscall = String((error as { syscall?: unknown } | null)?.syscall);
    if (!["listen", "bind", "getaddrinfo"].includes(syscall)) throw error;
    const { describeListenError } = await import("./sandbox/cli.js");
    throw new StartError(describeListenError(error, http.host, http.port, "MCP server"));
  });
  onShutdown(async () => {
    await server.close().catch(() => undefined);
    await closeAll();
  });
}

/** Ends the process once `close` is done, or after SHUTDOWN_LIMIT_MS whatever happens. */
function onShutdown(close: () => Promise<unknown>): () => void {
  let closing = false;
  const shutdown = () => {
    if (closing) return;
    closing = true;
    setTimeout(() => process.exit(0), SHUTDOWN_LIMIT_MS).unref();
    void close().finally(() => process.exit(0));
  };
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
  return shutdown;
}

main(process.argv.slice(2)).catch((error: unknown) => {
  const failure = error instanceof Error ? error : new Error(String(error));
  // Not a usage mistake: one line that says what is wrong and what to do.
  if (failure.name === "SandboxStartError" || failure instanceof StartError) {
    const who = failure instanceof StartError ? "generation-mcp" : "generation-mcp sandbox";
    process.stderr.write(redact(`${who}: ${failure.message}\n`));
    process.exit(1);
  }
  const expected =
    failure instanceof ConfigError ||
    failure.name === "SandboxUsageError" ||
    String((failure as { code?: unknown }).code).startsWith("ERR_PARSE_ARGS");
  const message = expected || failure !== error ? failure.message : (failure.stack ?? failure.message);
  const command = process.argv[2] ?? "";
  const help = Object.hasOwn(COMMANDS, command)
    ? `generation-mcp ${command} --help`
    : "generation-mcp --help";
  process.stderr.write(redact(`generation-mcp: ${message}\nRun ${help} for usage.\n`));
  process.exit(2);
});
