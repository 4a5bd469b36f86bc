/**
 * What `generation-mcp` serves once its configuration is read: the service it reaches (the real one, or a
 * sandbox started here), then MCP over stdio (one client, one runtime) or Streamable HTTP (one runtime per
 * service key), until the client leaves or SIGTERM/SIGINT. Each way shuts down within SHUTDOWN_LIMIT_MS.
 */
import type { Config, HttpConfig } from "./config/index.js";
import type { Logger } from "./logger.js";
import { registerSecret } from "./redact.js";
import { adviceModeFor } from "./advice.js";
import { localCaller } from "./auth/caller.js";
import { startMetrics } from "./metrics.js";
// The stdio session's opening path is imported statically (one chunk of the bundle, scripts/bundle.mjs);
// the runtime (the API client, the journal, the task store) is loaded once something needs it.
import type { Runtime, ServiceTarget } from "./runtime.js";
import { serveMcpOverStdio } from "./mcp/stdio.js";
import type { StateHub } from "./state/shared-state.js";

/** The longest a shutdown may take: running calls get a few seconds to answer, then everything closes. */
const SHUTDOWN_LIMIT_MS = 6000;
/**
 * When a stdio server makes its runtime if no call has asked for it yet: soon enough to take up the tasks a
 * stopped process was waiting for, late enough that the client's opening exchange never waits for it.
 */
const RUNTIME_AFTER_MS = 250;

/** The server could not start where it was asked to: one line to print as is (no stack, no usage hint). */
export class StartError extends Error {
  override name = "StartError";
}

export async function serve(config: Config, logger: Logger, version: string): Promise<void> {
  const { target, closeSandbox } = await serviceTarget(config, logger);
  const hub = await openSharedState(config, logger);
  const closeAll = () => Promise.allSettled([closeSandbox(), hub?.close()]);
  if (config.http) await serveHttp({ config, http: config.http, target, logger, version, hub, closeAll });
  else serveStdio({ config, target, logger, version, hub, closeAll });
}

interface Serving {
  config: Config;
  target: ServiceTarget;
  logger: Logger;
  version: string;
  hub: StateHub | undefined;
  closeAll: () => Promise<unknown>;
}

/** The real service, or a sandbox of this process's own (`--sandbox`). */
async function serviceTarget(config: Config, logger: Logger) {
  if (!config.sandbox) {
    const target: ServiceTarget = { baseUrl: config.baseUrl ?? "", apiKey: config.apiKey ?? "" };
    return { target, closeSandbox: async () => {} };
  }
  const [{ startSandbox }, { describeSandboxKeys }] = await Promise.all([
    import("./sandbox/index.js"),
    import("./sandbox/cli.js"),
  ]);
  const sandbox = await startSandbox({ port: 0 });
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
  const target: ServiceTarget = { baseUrl: sandbox.baseUrl, apiKey: sandbox.keys.paid, ephemeral: true };
  return { target, closeSandbox: () => sandbox.close() };
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

/** Ends the process once `close` is done, or after SHUTDOWN_LIMIT_MS whatever happens. */
function onShutdown(close: () => Promise<unknown>): () => void {
  let closing = false;
  const shutdown = () => {
    if (closing) return;
    closing = true;
    // A stuck close must not keep a client's server alive.
    setTimeout(() => process.exit(0), SHUTDOWN_LIMIT_MS).unref();
    void close().finally(() => process.exit(0));
  };
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
  return shutdown;
}

function serveStdio({ config, target, logger, version, hub, closeAll }: Serving): void {
  // Made by the first call that needs it (initialize and tools/list do not), or RUNTIME_AFTER_MS after
  // start, whichever comes first. A runtime that cannot be made (a state folder it cannot write) fails the
  // calls that need it, each with its error result, as an HTTP caller's does.
  let runtime: Promise<Runtime> | undefined;
  const runtimeOnce = (): Promise<Runtime> => {
    if (runtime === undefined) {
      const making = import("./runtime.js").then(({ createRuntime }) =>
        createRuntime(config, target, logger, version, {}, hub),
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
  // Both eras: the connection's opening exchange picks one (src/mcp/stdio.ts).
  const serving = serveMcpOverStdio({
    version,
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
  // Running calls answer first (a started task with its video_id), then the channel and the sandbox close.
  const shutdown = onShutdown(async () => {
    clearTimeout(early);
    await runtime?.then((made) => made.close()).catch(() => undefined);
    await Promise.allSettled([serving.close(), closeAll()]);
  });
  void serving.finished.then(shutdown);
  process.stdin.on("end", shutdown);
  logger.info(`generation-mcp ${version} ready on stdio`);
}

/** `--http`: Streamable HTTP until SIGTERM/SIGINT, one runtime per service key. */
async function serveHttp({
  config,
  http,
  target,
  logger,
  version,
  hub,
  closeAll,
}: Serving & { http: HttpConfig }) {
  const [{ RuntimePool }, { startHttpServer }, { gatewayAuth, passthroughAuth }, { createRuntime }] =
    await Promise.all([
      import("./runtime-pool.js"),
      import("./transports/http.js"),
      import("./auth/bearer.js"),
      import("./runtime.js"),
    ]);
  const gateway = http.tokenHashes !== undefined;
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
        version,
        {},
        hub,
      ),
  });
  const server = await startHttpServer({
    config: http,
    version,
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
  onShutdown(async () => {
    await server.close().catch(() => undefined);
    oauth?.close();
    await closeAll();
  });
  const mode =
    oauth !== undefined
      ? `OAuth: callers sign in at ${http.oauth?.issuer}; the server's own key serves them`
      : gateway
        ? `gateway: callers present tokens (${http.tokenHashes?.length ?? 0} accepted), the server's own key serves them`
        : "each caller sends its own service key as Authorization: Bearer";
  logger.info(`generation-mcp ${version} serving MCP at ${server.url} (${mode})`);
  if (metrics !== undefined) {
    const auth = http.metrics?.token === undefined ? "no auth" : "Bearer GENERATION_METRICS_TOKEN";
    logger.info(`Prometheus metrics at ${server.url.replace(/\/mcp$/, "/metrics")} (${auth})`);
  }
}

function originOf(url: string): string | undefined {
  return URL.canParse(url) ? new URL(url).origin : undefined;
}

/** An error of listening itself (port taken or not permitted, host not bindable or unknown). */
function isListenError(error: unknown): boolean {
  const syscall = typeof error === "object" && error !== null && "syscall" in error ? error.syscall : "";
  return syscall === "listen" || syscall === "bind" || syscall === "getaddrinfo";
}
