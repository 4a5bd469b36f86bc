/** What the server and the commands stand on: the service (or a `--sandbox` of our own) and Redis, lazily. */
import type { Config } from "../config/index.js";
import type { Logger } from "../logger.js";
import { registerSecret } from "../redact.js";
import type { ServiceTarget } from "../runtime.js";
import type { StateHub } from "../state/records.js";

/** The service and the shared state the configuration names, and how to close both. */
export async function openService(config: Config, logger: Logger) {
  const { target, closeSandbox } = await serviceTarget(config, logger);
  const hub = await openSharedState(config, logger);
  return { target, hub, close: () => Promise.allSettled([closeSandbox(), hub?.close()]) };
}

/** The real service, or a sandbox of this process's own (`--sandbox`). */
async function serviceTarget(config: Config, logger: Logger) {
  if (!config.sandbox) {
    const target: ServiceTarget = { baseUrl: config.baseUrl ?? "", apiKey: config.apiKey ?? "" };
    return { target, closeSandbox: async () => {} };
  }
  const [{ startSandbox }, { describeSandboxKeys }] = await Promise.all([
    import("../sandbox/index.js"),
    import("../sandbox/cli.js"),
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
 * The Redis hub when GENERATION_REDIS_URL is set (the client library is a lazy chunk). A password in the
 * address is registered with the redaction point; the rest of it is no secret.
 */
async function openSharedState(config: Config, logger: Logger): Promise<StateHub | undefined> {
  if (config.redis === undefined) return undefined;
  const password = URL.canParse(config.redis.url) ? new URL(config.redis.url).password : "";
  if (password !== "") registerSecret(decodeURIComponent(password));
  const { connectRedis } = await import("../state/redis/index.js");
  return connectRedis(config.redis, logger);
}
