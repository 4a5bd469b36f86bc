/**
 * Wires the parts together for one server process: rate budget -> API client -> poll engine, journal and
 * task starter. Used by the CLI (stdio) and by the in-process tests, so both run the same assembly.
 */
import { createHash } from "node:crypto";
import { homedir } from "node:os";
import path from "node:path";
import { GenerationClient, type ClientOptions } from "./api/client.js";
import { TokenBucketBudget } from "./api/rate-budget.js";
import type { Config } from "./config.js";
import { resolveAllowedDirs } from "./files/allowed-dirs.js";
import type { Logger } from "./logger.js";
import { McpTasks } from "./mcp-tasks.js";
import { backgroundContext, toolResult, type ServerDepsFactory } from "./server.js";
import { Journal } from "./tasks/journal.js";
import type { TaskLogger } from "./tasks/logger.js";
import { PollEngine } from "./tasks/poll-engine.js";
import { TaskStarter } from "./tasks/starter.js";
import { LOCAL_STATE, type StateHub } from "./state/shared-state.js";
import { TOOLS } from "./tools/index.js";

export interface ServiceTarget {
  baseUrl: string;
  apiKey: string;
  /**
   * The embedded sandbox: its tasks end with the process, so its journal lives in memory only. Two sandbox
   * servers at once (a demo and a desktop client, two sessions) can then never see each other's tasks.
   */
  ephemeral?: boolean;
}

/**
 * Each service and key gets its own journal folder under the state folder, so a task started on one (another
 * account, another service) is never returned as a "duplicate" or adopted as "ours" on another. The name
 * shows the host and hides the key behind a hash.
 */
export function journalDir(stateDir: string, target: ServiceTarget): string {
  const host = URL.canParse(target.baseUrl) ? new URL(target.baseUrl).host : "service";
  const digest = createHash("sha256").update(`${target.baseUrl}\n${target.apiKey}`).digest("hex");
  return path.join(stateDir, `${host.replace(/[^A-Za-z0-9.-]/g, "_")}-${digest.slice(0, 12)}`);
}

export interface Runtime {
  depsFactory: ServerDepsFactory;
  /** MCP task records and their background waits, kept beside the journal. */
  tasks: McpTasks;
  client: GenerationClient;
  /**
   * Stops the process's work: every call still running answers at once with what it has (a started task
   * with its video_id and "still processing"), waited for at most `graceMs`, then everything is closed.
   */
  close(graceMs?: number): Promise<void>;
}

/** How long a shutdown waits for running calls to answer before closing. */
const SHUTDOWN_GRACE_MS = 3000;

export async function createRuntime(
  config: Config,
  target: ServiceTarget,
  logger: Logger,
  version: string,
  /** Tests tighten timeouts and retries here; the CLI uses the defaults. */
  clientOverrides: Partial<Pick<ClientOptions, "timeoutMs" | "maxRetries" | "uploadTimeoutMs">> = {},
  /** Where state shared with other replicas lives (GENERATION_REDIS_URL); by default, in this process. */
  hub: StateHub = LOCAL_STATE,
): Promise<Runtime> {
  // The embedded sandbox lives and dies with this process: nothing of it is shared.
  const shared = (target.ephemeral ? LOCAL_STATE : hub).forKey(target, { local: new TokenBucketBudget() });
  const budget = shared.budget;
  const client = new GenerationClient({
    baseUrl: target.baseUrl,
    apiKey: target.apiKey,
    budget,
    userAgent: `generation-mcp/${version}`,
    onWarning: (message, data) => logger.warning(message, data),
    ...clientOverrides,
  });
  const log: TaskLogger = (level, message, data) => logger.log(level, message, data);
  const journal = target.ephemeral
    ? Journal.inMemory({ logger: log })
    : await Journal.open(journalDir(config.stateDir, target), { logger: log });
  const poller = new PollEngine({
    api: client,
    intervalMs: config.pollIntervalMs,
    logger: log,
    coordinator: shared.polls,
  });
  const starter = new TaskStarter({ api: client, journal, budget, logger: log, claims: shared.claims });

  const stopping = new AbortController();
  const running = new Set<Promise<unknown>>();
  // Over HTTP the caller is remote: its roots name folders of its own machine, and the documented default
  // folders are the server's owner's. Only folders the operator configured count; downloads likewise.
  const remote = config.http !== undefined;
  const depsFactory: ServerDepsFactory = ({ clientRoots, scope }) => ({
    api: client,
    poller,
    starter,
    config,
    logger,
    stopping: stopping.signal,
    mediaAllowHosts: URL.canParse(target.baseUrl) ? [new URL(target.baseUrl).hostname] : [],
    mediaOrigin: URL.canParse(target.baseUrl) ? new URL(target.baseUrl).origin : undefined,
    downloads: !remote || config.outputDirConfigured,
    scope,
    track: (call) => {
      running.add(call);
      const done = () => running.delete(call);
      call.then(done, done);
    },
    allowedDirs: async () =>
      resolveAllowedDirs({
        configured: remote ? (config.allowedDirs ?? []) : config.allowedDirs,
        roots: remote ? [] : await clientRoots(),
        outputDir: config.outputDir,
        home: homedir(),
      }),
  });
  const tasks = await McpTasks.open(
    target.ephemeral ? undefined : journalDir(config.stateDir, target),
    config.pollIntervalMs,
    logger,
    shared.tasks,
  );
  // Tasks that were being waited for when the process stopped are taken up again, from their video_ids.
  tasks.resumeAll((record, run) => {
    const tool = TOOLS.find((candidate) => candidate.name === record.tool);
    const resume = tool?.task?.resume;
    if (tool === undefined || resume === undefined) return undefined;
    const deps = depsFactory({ clientRoots: async () => [], scope: record.scope });
    return toolResult(tool, resume(record, deps, backgroundContext(run, logger)), deps, run.signal);
  }, stopping.signal);
  return {
    depsFactory,
    client,
    tasks,
    async close(graceMs = SHUTDOWN_GRACE_MS) {
      stopping.abort();
      poller.close();
      if (running.size > 0) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        const grace = new Promise((resolve) => {
          timer = setTimeout(resolve, graceMs);
        });
        await Promise.race([Promise.allSettled([...running]), grace]);
        clearTimeout(timer);
      }
      await client.close();
      // Its append handle stays open between writes; left to the garbage collector it leaks a descriptor.
      await journal.close();
      await tasks.close();
    },
  };
}
