#!/usr/bin/env node
/**
 * bin entry: `generation-mcp` (stdio, real service), `generation-mcp --sandbox` (stdio, embedded sandbox),
 * `generation-mcp sandbox` (only the sandbox REST service). stdout belongs to the protocol: nothing else
 * is ever written there.
 */
import { createRequire } from "node:module";
import { parseArgs } from "node:util";
import * as z from "zod";
import {
  ConfigError,
  FLAG_TO_ENV,
  isUnfilledPlaceholder,
  loadConfig,
  type Config,
  type HttpConfig,
} from "./config.js";
import { Logger } from "./logger.js";
import { redact, registerSecret } from "./redact.js";
import { adviceModeFor } from "./advice.js";
import { localCaller } from "./auth/caller.js";
import { isMetricsOn } from "./config-http.js";
import { startMetrics } from "./metrics.js";
// The stdio session's opening path is imported statically: with every lazy part below importing these
// first (scripts/bundle.mjs), it is one chunk of the bundle rather than ~20 small files. The runtime (the
// API client, the journal, the task store) is not on it: it is loaded once something needs it.
import type { Runtime, ServiceTarget } from "./runtime.js";
import { serveMcpOverStdio } from "./mcp/stdio.js";
import type { StateHub } from "./state/shared-state.js";
import { missingFolders } from "./files/allowed-dirs.js";

// Every schema here is parsed a few times, not millions: compiling each parser on first use costs more.
z.config({ jitless: true });

/** Inlined by the bundler (scripts/bundle.mjs); the tsc build reads package.json beside dist/. */
declare const __GENERATION_MCP_VERSION__: string | undefined;
const VERSION =
  typeof __GENERATION_MCP_VERSION__ === "string"
    ? __GENERATION_MCP_VERSION__
    : (createRequire(import.meta.url)("../package.json") as { version: string }).version;

/** The longest a shutdown may take: running calls get a few seconds to answer, then everything closes. */
const SHUTDOWN_LIMIT_MS = 6000;
/**
 * When a stdio server makes its runtime if no call has asked for it yet: soon enough to take up the tasks a
 * stopped process was waiting for, late enough that the client's opening exchange never waits for it.
 */
const RUNTIME_AFTER_MS = 250;

const HELP = `generation-mcp ${VERSION} — MCP server for AI video and image generation

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

Options (each mirrors an environment variable; flags win):
  --sandbox                      GENERATION_SANDBOX=1
  --base-url URL                 GENERATION_BASE_URL        service address ending in /api/v1
  --poll-interval-ms N           GENERATION_POLL_INTERVAL_MS   default 5000
  --wait-timeout-s N             GENERATION_WAIT_TIMEOUT_S     default 45
  --output-dir DIR               GENERATION_OUTPUT_DIR         default ~/Downloads/generation-mcp
  --allowed-dirs DIRS            GENERATION_ALLOWED_DIRS       default ~/Pictures, ~/Downloads, ~/Desktop
  --state-dir DIR                GENERATION_STATE_DIR          default the platform's user state folder
  --http                         GENERATION_HTTP=1
  --port N                       GENERATION_HTTP_PORT            default 8080
  --host H                       GENERATION_HTTP_HOST            default 127.0.0.1
  --allowed-hosts LIST           GENERATION_HTTP_ALLOWED_HOSTS   Host values served; needed off loopback
  --allowed-origins LIST         GENERATION_HTTP_ALLOWED_ORIGINS browser origins accepted (CORS)
  --tokens-file FILE             GENERATION_HTTP_TOKENS_FILE     SHA-256 of caller tokens (gateway mode)
  --max-body-bytes N             GENERATION_HTTP_MAX_BODY_BYTES  default 4194304
  --max-concurrent N             GENERATION_HTTP_MAX_CONCURRENT  calls per caller at once, default 16
  --max-connections N            GENERATION_HTTP_MAX_CONNECTIONS open connections at most
  --public-url URL               GENERATION_PUBLIC_URL           this server's public address (OAuth)
  --oauth-issuer URL             GENERATION_OAUTH_ISSUER         sign callers in with this OAuth issuer
  --oauth-audience A             GENERATION_OAUTH_AUDIENCE       what tokens' aud must hold, default the resource
  --previews on|off              GENERATION_PREVIEWS           image previews in results, default on
  --preview-max-side N           GENERATION_PREVIEW_MAX_SIDE   longest preview side in px, default 1024
  --resource-links on|off        GENERATION_RESOURCE_LINKS     resource_link items for media, default off
  --redis-url URL                GENERATION_REDIS_URL     replicas share rate budget, polls and duplicate guard
  --redis-prefix P               GENERATION_REDIS_PREFIX  prefix of every Redis key, default generation-mcp:
  --redis-when-down refuse|alone GENERATION_REDIS_WHEN_DOWN  while Redis cannot be written, default refuse
  --max-credits-per-call N       GENERATION_MAX_CREDITS_PER_CALL   refuse (or confirm) a call estimated above N
  --daily-credits N              GENERATION_DAILY_CREDITS          estimated credits per caller per UTC day
  --confirm-above-credits N      GENERATION_CONFIRM_ABOVE_CREDITS  ask the user to confirm above N
  --settings-form env|mcpb       GENERATION_SETTINGS_FORM  where advice says settings live, default env
The API key is read only from GENERATION_API_KEY (never from a flag, so it stays out of process lists).
`;

async function main(argv: string[]): Promise<number> {
  // A client that went away closes our stderr too: a failed log write must not take the process down.
  process.stderr.on("error", () => undefined);
  if (argv[0] === "sandbox") {
    const { runSandboxCommand } = await import("./sandbox/cli.js");
    await runSandboxCommand(argv.slice(1));
    return 0;
  }
  const options = Object.fromEntries(
    Object.keys(FLAG_TO_ENV).map((flag) => [flag.slice(2), { type: "string" as const }]),
  );
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      ...options,
      help: { type: "boolean", short: "h" },
      version: { type: "boolean", short: "v" },
      sandbox: { type: "boolean" },
      http: { type: "boolean" },
    },
    strict: true,
    allowPositionals: true,
  });
  // Asked for, so they are the output: stdout (no server runs, so no protocol is on it).
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (values.version) {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const flags: Record<string, string | true> = {};
  for (const [name, value] of Object.entries(values)) {
    if (typeof value === "string") flags[`--${name}`] = value;
    else if (value === true) flags[`--${name}`] = true;
  }
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

  let closeSandbox = async () => {};
  let target: ServiceTarget;
  if (config.sandbox) {
    const [{ startSandbox }, { describeSandboxKeys }] = await Promise.all([
      import("./sandbox/index.js"),
      import("./sandbox/cli.js"),
    ]);
    const sandbox = await startSandbox({ port: 0 });
    closeSandbox = () => sandbox.close();
    target = { baseUrl: sandbox.baseUrl, apiKey: sandbox.keys.paid, ephemeral: true };
    logger.info(
      `sandbox mode: tools run against the built-in sandbox at ${sandbox.baseUrl} (no credits spent)`,
    );
    if (config.http) {
      // Over HTTP each caller sends a key: the sandbox's are the ones that work here.
      process.stderr.write(
        `  The sandbox's API keys (send one as 'Authorization: Bearer <key>'):\n${describeSandboxKeys(sandbox).join("\n")}\n`,
      );
    }
    if (config.redis !== undefined) {
      logger.warning(
        "--sandbox with GENERATION_REDIS_URL: every --sandbox process has a sandbox of its own, so its tasks are " +
          "never shared. To try replicas on Redis, start one `generation-mcp sandbox` and point every replica's " +
          "GENERATION_BASE_URL at it (without --sandbox).",
      );
    }
  } else {
    target = { baseUrl: config.baseUrl ?? "", apiKey: config.apiKey ?? "" };
  }
  if (config.http) return serveHttp(config, config.http, target, logger, closeSandbox);

  const hub = await openSharedState(config, logger);
  // Made by the first call that needs it (initialize and tools/list do not), or RUNTIME_AFTER_MS after
  // start, whichever comes first. A runtime that cannot be made (a state folder it cannot write) fails the
  // calls that need it, each with its error result, as an HTTP caller's does.
  let runtime: Promise<Runtime> | undefined;
  const runtimeOnce = (): Promise<Runtime> => {
    if (runtime === undefined) {
      const making = import("./runtime.js").then(({ createRuntime }) =>
        createRuntime(config, target, logger, VERSION, {}, hub),
      );
      runtime = making;
      // Not kept when it failed: the next call tries again (the folder may have been fixed meanwhile).
      making.catch(() => {
        if (runtime === making) runtime = undefined;
      });
    }
    return runtime;
  };
  const early = setTimeout(() => {
    runtimeOnce().catch((error: unknown) =>
      logger.error("Could not get ready to take up earlier tasks.", { error: String(error) }),
    );
  }, RUNTIME_AFTER_MS);
  let closing = false;
  const shutdown = async () => {
    if (closing) return;
    closing = true;
    clearTimeout(early);
    // Whatever happens below, the process ends: a stuck close must not keep a client's server alive.
    setTimeout(() => process.exit(0), SHUTDOWN_LIMIT_MS).unref();
    // Running calls answer first (a started task with its video_id), then the channel and the sandbox close.
    await runtime?.then((made) => made.close()).catch(() => undefined);
    await Promise.allSettled([serving.close(), closeSandbox(), hub?.close()]);
    process.exit(0);
  };
  // Both eras: the connection's opening exchange picks one (src/mcp/stdio.ts).
  const serving = serveMcpOverStdio({
    version: VERSION,
    session: {
      caller: localCaller(target.apiKey),
      advice: adviceModeFor(config, undefined),
      mediaOrigin: originOf(target.baseUrl),
      runtime: runtimeOnce,
    },
    // Sinks added to any logger of this process reach its root: the runtime's lines (masked with the key
    // by its own scoped logger on the way) included.
    sessionLog: logger,
    logger,
  });
  void serving.finished.then(shutdown);
  process.stdin.on("end", () => void shutdown());
  process.on("SIGINT", () => void shutdown());
  process.on("SIGTERM", () => void shutdown());
  logger.info(`generation-mcp ${VERSION} ready on stdio`);
  return -1;
}

/** `--http`: Streamable HTTP until SIGTERM/SIGINT, one runtime per service key. */
async function serveHttp(
  config: Config,
  http: HttpConfig,
  target: ServiceTarget,
  logger: Logger,
  closeSandbox: () => Promise<void>,
): Promise<number> {
  const [{ RuntimePool }, { startHttpServer }, { gatewayAuth, passthroughAuth }, { createRuntime }] =
    await Promise.all([
      import("./runtime-pool.js"),
      import("./transports/http.js"),
      import("./auth/bearer.js"),
      import("./runtime.js"),
    ]);
  const gateway = http.tokenHashes !== undefined;
  const hub = await openSharedState(config, logger);
  registerSecret(http.metrics?.token);
  // Loads prom-client only now; every other mode keeps the no-op recorder (src/metrics.ts).
  const metrics =
    http.metrics === undefined
      ? undefined
      : await startMetrics({
          tools: (await import("./tools/index.js")).TOOLS.map((tool) => tool.name),
          sharedStateReady: hub === undefined ? undefined : () => hub.ready(),
        });
  // OAuth: the team's authorization server signs callers in; its keys are fetched before serving.
  const oauth =
    http.oauth === undefined
      ? undefined
      : await (await import("./auth/oauth.js")).createOAuthGate(http.oauth, target.apiKey, logger);
  const pool = new RuntimePool({
    // A caller's own key: nothing is kept for it before the service accepts it.
    create: (apiKey) =>
      createRuntime(
        config,
        { ...target, apiKey, callerKey: !gateway && oauth === undefined },
        logger,
        VERSION,
        {},
        hub,
      ),
  });
  const server = await startHttpServer({
    config: http,
    version: VERSION,
    logger,
    pool,
    authenticate:
      oauth !== undefined
        ? (header) => oauth.authenticate(header)
        : gateway
          ? gatewayAuth(http.tokenHashes ?? [], target.apiKey)
          : passthroughAuth(),
    oauth,
    bearerHint: gateway
      ? "This server has no OAuth: send the access token you were given for it as 'Authorization: Bearer <token>'."
      : "This server has no OAuth: send your generation service API key as 'Authorization: Bearer <key>'.",
    mediaOrigin: originOf(target.baseUrl),
    ...(hub !== undefined && { sharedStateReady: () => hub.ready() }),
    ...(metrics !== undefined && { metrics: { endpoint: metrics, token: http.metrics?.token } }),
  }).catch(async (error: unknown) => {
    // A port in use is a first mistake, not a bug: one line that says how to pick another, as `sandbox` does.
    if (!isListenError(error)) throw error;
    const { describeListenError } = await import("./sandbox/cli.js");
    throw new StartError(describeListenError(error, http.host, http.port, "MCP server"));
  });
  let closing = false;
  const shutdown = async () => {
    if (closing) return;
    closing = true;
    setTimeout(() => process.exit(0), SHUTDOWN_LIMIT_MS).unref();
    await server.close().catch(() => undefined);
    oauth?.close();
    await Promise.allSettled([closeSandbox(), hub?.close()]);
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown());
  process.on("SIGTERM", () => void shutdown());
  const mode =
    oauth !== undefined
      ? `OAuth: callers sign in at ${http.oauth?.issuer}; the server's own key serves them`
      : gateway
        ? `gateway: callers present tokens (${http.tokenHashes?.length ?? 0} accepted), the server's own key serves them`
        : "each caller sends its own service key as Authorization: Bearer";
  logger.info(`generation-mcp ${VERSION} serving MCP at ${server.url} (${mode})`);
  if (metrics !== undefined) {
    const auth = http.metrics?.token === undefined ? "no auth" : "Bearer GENERATION_METRICS_TOKEN";
    logger.info(`Prometheus metrics at ${server.url.replace(/\/mcp$/, "/metrics")} (${auth})`);
  }
  return -1;
}

/**
 * The Redis hub when GENERATION_REDIS_URL is set, loaded only then (the client library is a lazy chunk). The
 * address may carry a password: that is registered with the redaction point (the rest of the address is not
 * a secret, and masking it would mask every loopback address in the logs).
 */
async function openSharedState(config: Config, logger: Logger): Promise<StateHub | undefined> {
  if (config.redis === undefined) return undefined;
  const password = URL.canParse(config.redis.url) ? new URL(config.redis.url).password : "";
  if (password !== "") registerSecret(decodeURIComponent(password));
  const { connectRedis } = await import("./state/redis.js");
  return connectRedis(config.redis, logger);
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof Error && error.name === "SandboxStartError") {
      // Not a usage mistake: one line that says what is wrong and what to do.
      process.stderr.write(redact(`generation-mcp sandbox: ${error.message}\n`));
      process.exit(1);
    }
    if (error instanceof StartError) {
      process.stderr.write(redact(`generation-mcp: ${error.message}\n`));
      process.exit(1);
    }
    const expected = error instanceof ConfigError || isArgError(error) || isUsageError(error);
    const message = expected
      ? error.message
      : error instanceof Error
        ? (error.stack ?? error.message)
        : String(error);
    process.stderr.write(redact(`generation-mcp: ${message}\nRun generation-mcp --help for usage.\n`));
    process.exit(2);
  },
);

function originOf(url: string): string | undefined {
  return URL.canParse(url) ? new URL(url).origin : undefined;
}

/** The server could not start where it was asked to: one line to print as is (no stack, no usage hint). */
class StartError extends Error {
  override name = "StartError";
}

/** An error of listening itself (port taken or not permitted, host not bindable or unknown). */
function isListenError(error: unknown): boolean {
  const syscall = typeof error === "object" && error !== null && "syscall" in error ? error.syscall : "";
  return syscall === "listen" || syscall === "bind" || syscall === "getaddrinfo";
}

function isUsageError(error: unknown): error is Error {
  return error instanceof Error && error.name === "SandboxUsageError";
}

function isArgError(error: unknown): error is Error {
  return error instanceof Error && "code" in error && String(error.code).startsWith("ERR_PARSE_ARGS");
}
