/**
 * Shared state on Redis (GENERATION_REDIS_URL), loaded lazily: only a server configured for it ever loads this
 * file and the client library. One command connection and one subscriber connection per process serve every
 * service key. The keys of one service key are `<prefix><sha256(baseUrl + "\n" + apiKey), 16 hex>:<name>`, so
 * neither the key nor anything derived from it that could be replayed is ever stored; every key has a TTL.
 *
 * Every operation fails soft: Redis down or slow (commands time out after COMMAND_TIMEOUT_MS, nothing is
 * queued while disconnected) makes each replica decide alone with its local state, and it rejoins as soon as
 * the connection is back. `ready()` is false meanwhile, which `/readyz` reports.
 */
import { createHash, randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { Redis } from "ioredis";
import type { TokenBucketBudget } from "../api/rate-budget.js";
import type { VideoStatus } from "../api/types.js";
import type { RedisConfig } from "../config.js";
import type { Logger } from "../logger.js";
import { MAX_TASK_TTL_MS } from "../mcp-tasks.js";
import { DEFAULT_RATE_LIMIT_PER_MINUTE } from "../models.js";
import { parseJournalLine, type JournalEntry } from "../tasks/journal.js";
import { RedisBudget, type BudgetReading, type BudgetStore } from "./redis-budget.js";
import { BUDGET_OBSERVE, BUDGET_TAKE, POLL_LEAD, RELEASE_IF_OWNER } from "./redis-scripts.js";
import type {
  PollCoordinator,
  SharedState,
  SharedStatus,
  StartClaims,
  StateHub,
  StateTarget,
  TaskRecordStore,
} from "./shared-state.js";

/** Longest any Redis command may take before the replica goes on without it. */
export const COMMAND_TIMEOUT_MS = 1000;
const CONNECT_TIMEOUT_MS = 2000;
/** The budget's keys outlive a window by far, and go once the key has been idle that long. */
const BUDGET_TTL_MS = 10 * 60 * 1000;
/** A task's latest status is kept this long after its last poll. */
const STATUS_TTL_MS = 10 * 60 * 1000;
/** The share of the window kept for foreground calls, as the local budget's default. */
const RESERVE_FRACTION = 0.2;

interface ScriptCommands {
  budgetTake(...args: Array<string | number>): Promise<number>;
  budgetObserve(...args: Array<string | number>): Promise<number>;
  pollLead(...args: Array<string | number>): Promise<number>;
  releaseIfOwner(...args: Array<string | number>): Promise<number>;
}
type ScriptedRedis = Redis & ScriptCommands;

/** The address without its password, for logs. */
export function describeRedisUrl(url: string): string {
  const parsed = new URL(url);
  return `${parsed.protocol}//${parsed.host}${parsed.pathname === "/" ? "" : parsed.pathname}`;
}

/**
 * Connects to Redis (waiting at most CONNECT_TIMEOUT_MS) and returns the hub. An unreachable Redis is not
 * fatal: the hub reports not ready, logs one clear line, and keeps reconnecting in the background.
 */
export async function connectRedis(config: RedisConfig, logger: Logger): Promise<StateHub> {
  const shown = describeRedisUrl(config.url);
  const retryStrategy = (times: number) => Math.min(100 * times, 2000);
  const common = {
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
    retryStrategy,
    maxRetriesPerRequest: 0,
    connectionName: "generation-mcp",
  };
  // Commands fail at once while disconnected (nothing queued to replay late) and never wait long.
  const commands = new Redis(config.url, {
    ...common,
    enableOfflineQueue: false,
    commandTimeout: COMMAND_TIMEOUT_MS,
  }) as ScriptedRedis;
  // The subscriber queues its SUBSCRIBE until connected, and resubscribes after every reconnect.
  const subscriber = new Redis(config.url, { ...common, enableOfflineQueue: true });
  commands.defineCommand("budgetTake", { numberOfKeys: 2, lua: BUDGET_TAKE });
  commands.defineCommand("budgetObserve", { numberOfKeys: 2, lua: BUDGET_OBSERVE });
  commands.defineCommand("pollLead", { numberOfKeys: 1, lua: POLL_LEAD });
  commands.defineCommand("releaseIfOwner", { numberOfKeys: 1, lua: RELEASE_IF_OWNER });

  let down = false;
  const markDown = (error: unknown) => {
    if (down) return;
    down = true;
    logger.warning(
      `Redis at ${shown} is unreachable; each replica goes on with its local state until it is back.`,
      {
        error: errorText(error),
      },
    );
  };
  commands.on("error", markDown);
  subscriber.on("error", () => undefined);
  commands.on("ready", () => {
    if (!down) return;
    down = false;
    logger.info(`Redis at ${shown} is back; shared state resumes.`);
  });

  const channel = `${config.prefix}status`;
  const listeners = new Map<string, Set<() => void>>();
  subscriber.on("message", (_channel: string, message: string) => {
    for (const wake of listeners.get(message) ?? []) wake();
  });
  const subscribed = subscriber.subscribe(channel).catch(() => undefined);

  try {
    await commands.connect();
    await subscribed;
    logger.info(`Shared state on Redis at ${shown} (prefix ${JSON.stringify(config.prefix)}).`);
  } catch (error) {
    markDown(error);
    logger.error(
      `Redis at ${shown} did not answer at start: /readyz reports not ready; calls are served with this replica's local state meanwhile.`,
    );
  }

  const owner = `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`;
  const soft = <T>(fallback: T, run: () => Promise<T>): Promise<T> =>
    run().catch((error: unknown) => {
      markDown(error);
      return fallback;
    });
  const context: KeyContext = { commands, soft, owner, channel, listeners, onError: markDown };
  return {
    ready: () => commands.status === "ready",
    forKey: (target, { local }) => stateForKey(context, config.prefix, target, local),
    async close() {
      commands.disconnect();
      subscriber.disconnect();
    },
  };
}

interface KeyContext {
  commands: ScriptedRedis;
  /** Runs a Redis operation; when Redis fails, reports it and answers `fallback` (fail soft). */
  soft<T>(fallback: T, run: () => Promise<T>): Promise<T>;
  owner: string;
  channel: string;
  listeners: Map<string, Set<() => void>>;
  onError: (error: unknown) => void;
}

function stateForKey(
  context: KeyContext,
  prefix: string,
  target: StateTarget,
  local: TokenBucketBudget,
): SharedState {
  const digest = createHash("sha256")
    .update(`${target.baseUrl}\n${target.apiKey}`)
    .digest("hex")
    .slice(0, 16);
  const base = `${prefix}${digest}:`;
  return {
    budget: new RedisBudget(budgetStore(context, base), local, context.owner, context.onError),
    polls: pollCoordinator(context, base, digest),
    claims: startClaims(context, base),
    tasks: taskRecords(context, base),
  };
}

/** The index forgets task ids older than the longest an MCP task may live. */
const TASK_INDEX_TTL_MS = MAX_TASK_TTL_MS;

function taskRecords(context: KeyContext, base: string): TaskRecordStore {
  const { commands, owner } = context;
  const record = (taskId: string) => `${base}mcptask:${taskId}`;
  const lease = (taskId: string) => `${base}mcptask-lease:${taskId}`;
  const cancel = (taskId: string) => `${base}mcptask-cancel:${taskId}`;
  const index = `${base}mcptasks`;
  return {
    async put(taskId, text, ttlMs, createdAtMs) {
      await context.soft(undefined, async () => {
        await commands
          .multi()
          .set(record(taskId), text, "PX", Math.max(1, Math.round(ttlMs)))
          .zadd(index, createdAtMs, taskId)
          .zremrangebyscore(index, "-inf", Date.now() - TASK_INDEX_TTL_MS)
          .pexpire(index, TASK_INDEX_TTL_MS)
          .exec();
      });
    },
    async get(taskId) {
      return context.soft(undefined, async () => (await commands.get(record(taskId))) ?? undefined);
    },
    async list(limit) {
      return context.soft([], async () => await commands.zrevrange(index, 0, Math.max(0, limit - 1)));
    },
    async follow(taskId, ttlMs) {
      return context.soft(
        true,
        async () =>
          Number(await commands.pollLead(lease(taskId), owner, Math.max(1, Math.round(ttlMs)))) === 1,
      );
    },
    async requestCancel(taskId, ttlMs) {
      await context.soft(undefined, async () => {
        await commands.set(cancel(taskId), "1", "PX", Math.max(1, Math.round(ttlMs)));
      });
    },
    async cancelRequested(taskId) {
      return context.soft(false, async () => (await commands.exists(cancel(taskId))) === 1);
    },
  };
}

function budgetStore({ commands }: KeyContext, base: string): BudgetStore {
  const keys = [`${base}budget`, `${base}inflight`];
  return {
    take: async (grantId, background, now) =>
      Number(
        await commands.budgetTake(
          ...keys,
          now,
          background ? 1 : 0,
          RESERVE_FRACTION,
          DEFAULT_RATE_LIMIT_PER_MINUTE,
          grantId,
          BUDGET_TTL_MS,
        ),
      ),
    observe: async (grantId, reading: BudgetReading) => {
      await commands.budgetObserve(
        ...keys,
        reading.now,
        grantId,
        reading.status,
        reading.limit,
        reading.remaining,
        reading.resetAt,
        BUDGET_TTL_MS,
      );
    },
  };
}

function pollCoordinator(context: KeyContext, base: string, digest: string): PollCoordinator {
  const { commands, owner, listeners } = context;
  const lease = (videoId: string) => `${base}lease:${videoId}`;
  const status = (videoId: string) => `${base}status:${videoId}`;
  return {
    async lead(videoId, ttlMs) {
      return context.soft(
        true,
        async () =>
          Number(await commands.pollLead(lease(videoId), owner, Math.max(1, Math.round(ttlMs)))) === 1,
      );
    },
    async release(videoId) {
      await commands.releaseIfOwner(lease(videoId), owner).catch(() => undefined);
    },
    async publish(videoId, video) {
      const record: SharedStatus = { video, at: Date.now() };
      await context.soft(undefined, async () => {
        await commands
          .multi()
          .set(status(videoId), JSON.stringify(record), "PX", STATUS_TTL_MS)
          .publish(context.channel, `${digest}:${videoId}`)
          .exec();
      });
    },
    async latest(videoId) {
      return context.soft(undefined, async () => parseStatus(await commands.get(status(videoId)), videoId));
    },
    nextChange(videoId, ms, signal) {
      const name = `${digest}:${videoId}`;
      return new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal.removeEventListener("abort", done);
          const set = listeners.get(name);
          set?.delete(done);
          if (set?.size === 0) listeners.delete(name);
          resolve();
        };
        const timer = setTimeout(done, Math.max(0, ms));
        signal.addEventListener("abort", done, { once: true });
        const set = listeners.get(name) ?? new Set();
        set.add(done);
        listeners.set(name, set);
      });
    },
  };
}

function startClaims(context: KeyContext, base: string): StartClaims {
  const { commands, owner } = context;
  const claim = (fingerprint: string) => `${base}claim:${fingerprint}`;
  const started = (fingerprint: string) => `${base}started:${fingerprint}`;
  const intent = (fingerprint: string) => `${base}intent:${fingerprint}`;
  return {
    async claim(fingerprint, ttlMs) {
      // Unreachable: no one to agree with, so this replica decides alone, as a single server would.
      return context.soft(
        true,
        async () => (await commands.set(claim(fingerprint), owner, "PX", Math.round(ttlMs), "NX")) === "OK",
      );
    },
    async unclaim(fingerprint) {
      await commands.releaseIfOwner(claim(fingerprint), owner).catch(() => undefined);
    },
    async mirror(entry, ttlMs) {
      const ttl = Math.round(ttlMs);
      await context.soft(undefined, async () => {
        if (entry.phase === "intent") {
          await commands.set(intent(entry.fingerprint), JSON.stringify(entry), "PX", ttl);
        } else if (entry.phase === "void") {
          const open = parseJournalLine((await commands.get(intent(entry.fingerprint))) ?? "");
          if (open?.key === entry.key) await commands.del(intent(entry.fingerprint));
        } else {
          await commands
            .multi()
            .set(started(entry.fingerprint), JSON.stringify(entry), "PX", ttl)
            .del(intent(entry.fingerprint))
            .exec();
        }
      });
    },
    async read(fingerprint) {
      return context.soft({}, async () => {
        const [startedText, intentText] = await commands.mget(started(fingerprint), intent(fingerprint));
        const result: { started?: JournalEntry; intent?: JournalEntry } = {};
        const startedEntry = parseJournalLine(startedText ?? "");
        const intentEntry = parseJournalLine(intentText ?? "");
        if (startedEntry?.fingerprint === fingerprint) result.started = startedEntry;
        if (intentEntry?.fingerprint === fingerprint && intentEntry.phase === "intent")
          result.intent = intentEntry;
        return result;
      });
    },
  };
}

function parseStatus(text: string | null, videoId: string): SharedStatus | undefined {
  if (text === null) return undefined;
  try {
    const record = JSON.parse(text) as Partial<SharedStatus>;
    const video = record.video as VideoStatus | undefined;
    if (typeof record.at !== "number" || video?.video_id !== videoId || typeof video.status !== "string") {
      return undefined;
    }
    return { video: { ...video, raw: video.raw ?? {} }, at: record.at };
  } catch {
    return undefined;
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
