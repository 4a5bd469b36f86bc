/**
 * Wires the parts together for one server process: rate budget -> API client -> poll engine, journal and
 * task starter. Used by the CLI (stdio) and by the in-process tests, so both run the same assembly.
 */
import { homedir } from "node:os";
import { GenerationClient, type ClientOptions } from "./api/client.js";
import { TokenBucketBudget } from "./api/rate-budget.js";
import type { Config } from "./config.js";
import { resolveAllowedDirs } from "./files/allowed-dirs.js";
import type { Logger } from "./logger.js";
import type { ServerDepsFactory } from "./server.js";
import { Journal } from "./tasks/journal.js";
import { PollEngine } from "./tasks/poll-engine.js";
import { TaskStarter } from "./tasks/starter.js";

export interface ServiceTarget {
  baseUrl: string;
  apiKey: string;
}

export interface Runtime {
  depsFactory: ServerDepsFactory;
  client: GenerationClient;
  close(): Promise<void>;
}

export async function createRuntime(
  config: Config,
  target: ServiceTarget,
  logger: Logger,
  version: string,
  /** Tests tighten timeouts and retries here; the CLI uses the defaults. */
  clientOverrides: Partial<Pick<ClientOptions, "timeoutMs" | "maxRetries" | "uploadTimeoutMs">> = {},
): Promise<Runtime> {
  const budget = new TokenBucketBudget();
  const client = new GenerationClient({
    baseUrl: target.baseUrl,
    apiKey: target.apiKey,
    budget,
    userAgent: `generation-mcp/${version}`,
    ...clientOverrides,
  });
  const journal = await Journal.open(config.stateDir);
  const log = (level: "debug" | "info" | "warning" | "error", message: string, data?: object) =>
    logger.log(level, message, data as Record<string, unknown> | undefined);
  const poller = new PollEngine({ api: client, intervalMs: config.pollIntervalMs, logger: log });
  const starter = new TaskStarter({ api: client, journal, budget, logger: log });

  const depsFactory: ServerDepsFactory = ({ clientRoots }) => ({
    api: client,
    poller,
    starter,
    config,
    logger,
    allowedDirs: async () =>
      resolveAllowedDirs({
        configured: config.allowedDirs,
        roots: await clientRoots(),
        outputDir: config.outputDir,
        home: homedir(),
      }),
  });
  return {
    depsFactory,
    client,
    async close() {
      poller.close();
      await client.close();
      // Its append handle stays open between writes; left to the garbage collector it leaks a descriptor.
      await journal.close();
    },
  };
}
