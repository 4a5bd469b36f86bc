/**
 * Wires the parts of one service key together (budget, client, poll engine, journal, starter, MCP task
 * records, spend): the same assembly for stdio, each HTTP key (runtime-pool.ts) and the in-process tests.
 */
import { setMaxListeners } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { homedir } from "node:os";
import path from "node:path";
import { GenerationClient, type ClientOptions } from "./api/client.js";
import type { Config } from "./config/index.js";
import { adviceModeFor } from "./advice.js";
import { resolveAllowedDirs } from "./files/allowed-dirs.js";
import type { Logger } from "./logger.js";
import { PROCESS_REDACTOR } from "./redact.js";
import { TaskRecords } from "./mcp/tasks/store.js";
import type { DepsFactory } from "./tools/define-tool.js";
import { localState } from "./state/local/index.js";
import { PollEngine } from "./generations/poll-engine.js";
import { TaskStarter } from "./generations/starter.js";
import { LOCAL_STATE, errorText, type SharedState, type StateHub, type TaskLogger } from "./state/records.js";
import { digestOf } from "./auth/caller.js";
import { DailySpend } from "./spend/daily.js";
import { confirmStatesFor } from "./mcp/confirm.js";
import { UploadDesk } from "./uploads/desk.js";

export interface ServiceTarget {
  baseUrl: string;
  apiKey: string;
  /** The embedded sandbox: its tasks end with the process, so its state lives in memory only. */
  ephemeral?: boolean;
  /** A caller's own key (passthrough over HTTP): nothing is written for it before the service accepted it. */
  callerKey?: boolean;
}

/** Each service and key gets its own folder, so another account's task is never taken as a duplicate. */
export function journalDir(stateDir: string, target: ServiceTarget): string {
  const host = URL.canParse(target.baseUrl) ? new URL(target.baseUrl).host : "service";
  const digest = digestOf(`${target.baseUrl}\n${target.apiKey}`).slice(0, 12);
  return path.join(stateDir, `${host.replace(/[^A-Za-z0-9.-]/g, "_")}-${digest}`);
}

export type Runtime = Awaited<ReturnType<typeof createRuntime>>;

/** How long a shutdown waits for running calls to answer before closing. */
const SHUTDOWN_GRACE_MS = 3000;

export async function createRuntime(
  config: Config,
  target: ServiceTarget,
  processLogger: Logger,
  version: string,
  /** Tests tighten timeouts and retries here. */
  clientOverrides: Partial<Pick<ClientOptions, "timeoutMs" | "maxRetries">> = {},
  hub: StateHub = LOCAL_STATE,
  /** The process's upload links (one desk for every key). */
  uploads = new UploadDesk(hub.uploadLinks, config.uploadLinkTtlS * 1000),
) {
  // Masked in this runtime's answers only: one caller's bearer can never mask another caller's text.
  const redactor = PROCESS_REDACTOR.with(target.apiKey);
  const logger = processLogger.scoped(redactor);
  const log: TaskLogger = (level, message, data) => logger.log(level, message, data);
  const dir = target.ephemeral ? undefined : journalDir(config.stateDir, target);
  const local = await localState(dir, logger);
  const state = (target.ephemeral ? LOCAL_STATE : hub).forKey(target, local);
  const shared = gateShared(state, () => client);
  const client: GenerationClient = new GenerationClient({
    baseUrl: target.baseUrl,
    apiKey: target.apiKey,
    budget: shared.budget,
    userAgent: `generation-mcp/${version}`,
    onWarning: (message, data) => logger.warning(message, data),
    trustedKey: target.callerKey !== true,
    ...clientOverrides,
  });
  const keyDigest = digestOf(target.apiKey);
  const unregister = uploads.register(keyDigest, async (image) => {
    return (await client.upload(image, { priority: "foreground", deadline: Date.now() + 60_000 })).url;
  });
  const dailyCredits = config.spend?.dailyCredits;
  const daily = dailyCredits === undefined ? undefined : new DailySpend(dailyCredits, shared.spend);
  const poller = new PollEngine({
    api: client,
    intervalMs: config.pollIntervalMs,
    logger: log,
    coordinator: shared.polls,
  });
  const stopping = new AbortController();
  // One listener per call in flight, not a leak: Node's warning past 10 would only alarm an operator.
  setMaxListeners(0, stopping.signal);
  const starter = new TaskStarter({
    api: client,
    journal: local.journal,
    budget: shared.budget,
    logger: log,
    claims: shared.claims,
    ownership: shared.owners,
    beforeWrite: () => client.ensureAccepted(),
    daily,
    stopping: stopping.signal,
  });

  const running = new Set<Promise<unknown>>();
  // Over HTTP the caller's roots name folders of its own machine: only folders the operator configured count.
  const remote = config.http !== undefined;
  const base = URL.parse(target.baseUrl);
  const depsFactory: DepsFactory = ({ clientRoots, scope, callerId }) => ({
    api: client,
    poller,
    starter,
    ownership: shared.owners,
    config,
    logger,
    redactor,
    advice: adviceModeFor(config, scope),
    stopping: stopping.signal,
    mediaAllowHosts: base === null ? [] : [base.hostname],
    downloads: !remote || config.outputDirConfigured,
    scope,
    callerId: callerId ?? keyDigest,
    uploads: uploads.forCaller(callerId ?? keyDigest, keyDigest),
    daily,
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
  const tasks = await TaskRecords.open(shared.tasks, config.pollIntervalMs, logger);
  // Tasks waited for when the process stopped are taken up again; the tools (much of the start-up work)
  // load only when there is one.
  tasks.resumeAll(async (record, run) => {
    const [{ TOOLS }, { backgroundContext, toolResult }] = await Promise.all([
      import("./tools/index.js"),
      import("./tools/result.js"),
    ]);
    const tool = TOOLS.find((candidate) => candidate.name === record.tool);
    const resume = tool?.task?.resume;
    if (tool === undefined || resume === undefined) {
      return errorText(
        `internal_error: a ${record.tool} task cannot be taken up again here: call get_status with video_id "${record.videoId}".`,
      );
    }
    const deps = depsFactory({ clientRoots: async () => [], scope: record.scope });
    return toolResult(tool, resume(record, deps, backgroundContext(run, deps)), deps, run.signal);
  }, stopping.signal);
  return {
    depsFactory,
    logger,
    tasks,
    confirmStates: confirmStatesFor(target.baseUrl, target.apiKey, shared.confirmations),
    busy: () => running.size > 0 || tasks.running > 0,
    callsSettled: async () => {
      while (running.size > 0) await Promise.allSettled([...running]);
    },
    keyState: () => client.keyState,
    uploads,
    async close(graceMs = SHUTDOWN_GRACE_MS) {
      unregister();
      stopping.abort();
      poller.close();
      if (running.size > 0) {
        await Promise.race([Promise.allSettled([...running]), sleep(graceMs, undefined, { ref: false })]);
      }
      await client.close();
      await tasks.close();
      await local.close();
    },
  };
}

/**
 * Shared state a key reaches only once the service accepted it (nothing is written for a made-up key), but
 * for the rate budget: it counts every request that reaches the service, and holds no content.
 */
function gateShared(shared: SharedState, client: () => GenerationClient): SharedState {
  const { polls, confirmations } = shared;
  const accepted = () => client().keyState === "accepted";
  return {
    ...shared,
    polls: {
      ...polls,
      lead: async (videoId, ttlMs) => (accepted() ? polls.lead(videoId, ttlMs) : true),
      publish: async (videoId, video) => (accepted() ? polls.publish(videoId, video) : undefined),
    },
    confirmations: {
      use: async (digest, ttlMs) => {
        await client().ensureAccepted();
        return confirmations.use(digest, ttlMs);
      },
    },
  };
}
