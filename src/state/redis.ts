/**
 * Shared state on Redis (GENERATION_REDIS_URL), loaded lazily: only a server configured for it ever loads this
 * file and the client library. One command connection and one subscriber connection per process serve every
 * service key. The keys of one service key are `<prefix><sha256(baseUrl + "\n" + apiKey), 16 hex>:<name>`, so
 * neither the key nor anything derived from it that could be replayed is ever stored; every key has a TTL;
 * every value a replica reads back is sealed with a key derived from the service key (seal.ts), so one that
 * another writer planted is skipped and logged, never relayed.
 *
 * The rule when Redis is down, slow, full (maxmemory with noeviction) or paused for writes: a command gives up
 * after COMMAND_TIMEOUT_MS (nothing is queued while disconnected), `ready()` is false (so `/readyz` is 503)
 * until a probe write succeeds again, and one line is logged when the outage starts and one when it ends.
 * Meanwhile reads, waits and polls go on with this replica's local state, but a start whose claim cannot be
 * written is not sent (SharedStateUnavailableError): two replicas deciding alone could pay twice for one
 * request. An operator who prefers availability sets GENERATION_REDIS_WHEN_DOWN=alone: each replica then
 * decides alone, as a single server would, and stays ready (a load balancer keeps sending it calls).
 *
 * Redis that comes back EMPTY (restarted without persistence) is another matter: the claims and the day's
 * spend other replicas relied on are gone, not merely out of reach. Every replica keeps what it wrote there
 * (its rebuild log) and an epoch key tells a lost store from a living one: a replica that finds the epoch
 * gone or changed (on reconnecting, on its heartbeat, and before anything it must agree on) writes its own
 * entries again; and a start on a fresh epoch waits a few seconds, so that every live replica has noticed
 * and rebuilt before anyone decides on the store.
 */
import { createHash, randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { Redis } from "ioredis";
import type { TokenBucketBudget } from "../api/rate-budget.js";
import type { RedisConfig } from "../config/index.js";
import type { Logger } from "../logger.js";
import { DEFAULT_RATE_LIMIT_PER_MINUTE } from "../models.js";
import { RedisBudget, type BudgetReading, type BudgetStore } from "./redis-budget.js";
import { ownershipStore, startClaims } from "./redis-claims.js";
import { pollCoordinator } from "./redis-polls.js";
import {
  BUDGET_OBSERVE,
  BUDGET_TAKE,
  POLL_LEAD,
  RELEASE_IF_OWNER,
  SPEND_RELEASE,
  SPEND_RESERVE,
  START_CLAIM,
  TASK_FINALIZE,
} from "./redis-scripts.js";
import { spendStore } from "./redis-spend.js";
import { taskRecords } from "./redis-tasks.js";
import { sealerFor, type Sealer } from "./seal.js";
import {
  SharedStateUnavailableError,
  type SharedState,
  type StateHub,
  type StateTarget,
} from "./shared-state.js";

/** Longest any Redis command may take before the replica goes on without it. */
export const COMMAND_TIMEOUT_MS = 1000;
const CONNECT_TIMEOUT_MS = 2000;
/** How often a replica whose writes failed tries one again, to learn that Redis is back. */
const PROBE_INTERVAL_MS = 1000;
/** How often a replica checks that Redis still takes writes (so /readyz stays true) and still holds its epoch. */
const HEARTBEAT_MS = 1000;
/**
 * How long a start waits on an epoch younger than this: long enough for every live replica to notice a lost
 * store (on reconnecting, at most one heartbeat later) and write its entries again.
 */
export const REBUILD_GRACE_MS = 3000;
/** The epoch outlives any pause of the whole deployment by far; every heartbeat renews it. */
const EPOCH_TTL_MS = 7 * 24 * 60 * 60 * 1000;
/** Entries of the rebuild log kept at most; past it the oldest go (the newest matter most). */
const REBUILD_MAX = 50_000;
/** The budget's keys outlive a window by far, and go once the key has been idle that long. */
const BUDGET_TTL_MS = 10 * 60 * 1000;
/** The share of the window kept for foreground calls, as the local budget's default. */
const RESERVE_FRACTION = 0.2;

interface ScriptCommands {
  budgetTake(...args: Array<string | number>): Promise<number>;
  budgetObserve(...args: Array<string | number>): Promise<number>;
  pollLead(...args: Array<string | number>): Promise<number>;
  releaseIfOwner(...args: Array<string | number>): Promise<number>;
  taskFinalize(...args: Array<string | number>): Promise<string | null>;
  spendReserve(...args: Array<string | number>): Promise<[number, number]>;
  spendRelease(...args: Array<string | number>): Promise<number>;
  startClaim(...args: Array<string | number>): Promise<number>;
}
export type ScriptedRedis = Redis & ScriptCommands;

/** What the parts of one service key share: the connections, the rules for failures, its seal. */
export interface KeyContext {
  commands: ScriptedRedis;
  /** Runs a Redis operation; when Redis fails, reports it and answers `fallback` (fail soft). */
  soft<T>(fallback: T, run: () => Promise<T>): Promise<T>;
  /**
   * Runs an operation that must be agreed with the other replicas: when Redis fails it throws
   * SharedStateUnavailableError, or, with GENERATION_REDIS_WHEN_DOWN=alone, answers `alone`.
   */
  agreed<T>(alone: T, run: () => Promise<T>): Promise<T>;
  owner: string;
  channel: string;
  listeners: Map<string, Set<() => void>>;
  onError: (error: unknown) => void;
  /** `<prefix><digest>:`: every key of this service key starts with it. */
  base: string;
  digest: string;
  sealer: Sealer;
  /** Reports a value that did not carry this key's seal (planted, torn): once per kind per minute. */
  foreign(kind: string): void;
  /**
   * Records what this replica wrote under `key`, to write again (`write`, given the time left) should Redis
   * lose its data before `ttlMs` has passed; a later entry for the key replaces it.
   */
  keep(key: string, ttlMs: number, write: (ttlMs: number) => Promise<unknown>): void;
  /** Drops the entry of `key` from the rebuild log (it was settled or deleted). */
  forget(key: string): void;
}

/** What this replica wrote that the others rely on, to write again when Redis comes back empty. */
class RebuildLog {
  private readonly entries = new Map<string, { until: number; write: (ttlMs: number) => Promise<unknown> }>();

  keep(key: string, ttlMs: number, write: (ttlMs: number) => Promise<unknown>): void {
    this.entries.delete(key);
    this.entries.set(key, { until: Date.now() + ttlMs, write });
    if (this.entries.size > REBUILD_MAX) this.entries.delete(this.entries.keys().next().value ?? "");
  }

  forget(key: string): void {
    this.entries.delete(key);
  }

  /** Writes every live entry again; answers how many. Throws when Redis fails meanwhile. */
  async replay(): Promise<number> {
    let written = 0;
    for (const [key, entry] of [...this.entries]) {
      const left = entry.until - Date.now();
      if (left <= 0) {
        this.entries.delete(key);
        continue;
      }
      await entry.write(left);
      written += 1;
    }
    return written;
  }
}

/** The address without its password, for logs. */
export function describeRedisUrl(url: string): string {
  const parsed = new URL(url);
  return `${parsed.protocol}//${parsed.host}${parsed.pathname === "/" ? "" : parsed.pathname}`;
}

/**
 * Connects to Redis (waiting at most CONNECT_TIMEOUT_MS) and returns the hub. An unreachable Redis is not
 * fatal: the hub reports not ready, logs one clear line, and keeps reconnecting in the background.
 */
export async function connectRedis(
  config: RedisConfig,
  logger: Logger,
  /** Tests shorten the wait on a fresh epoch; the server uses REBUILD_GRACE_MS. */
  options: { rebuildGraceMs?: number } = {},
): Promise<StateHub> {
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
  commands.defineCommand("taskFinalize", { numberOfKeys: 1, lua: TASK_FINALIZE });
  commands.defineCommand("spendReserve", { numberOfKeys: 1, lua: SPEND_RESERVE });
  commands.defineCommand("spendRelease", { numberOfKeys: 1, lua: SPEND_RELEASE });
  commands.defineCommand("startClaim", { numberOfKeys: 1, lua: START_CLAIM });

  const owner = `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`;
  const alone = config.whenDown === "alone";
  const consequence = alone
    ? "each replica decides alone (GENERATION_REDIS_WHEN_DOWN=alone) until it is back"
    : "/readyz reports not ready and starts are refused (nothing is sent or charged) until it is back";
  /** While connecting at start: the failure is said once, in the start's own line below. */
  let starting = true;

  // One outage, one line: `down` is set by the first failure and cleared only by a write that succeeds.
  let down = false;
  let probing: ReturnType<typeof setInterval> | undefined;
  const probe = async () => {
    try {
      await commands.set(`${config.prefix}probe:${owner}`, "1", "PX", 10_000);
    } catch {
      return;
    }
    clearInterval(probing);
    probing = undefined;
    if (!down) return;
    down = false;
    logger.info(`Redis at ${shown} accepts writes again; shared state resumes.`);
  };
  const markDown = (error: unknown) => {
    probing ??= setInterval(() => void probe(), PROBE_INTERVAL_MS);
    probing.unref();
    if (down) return;
    down = true;
    if (!starting)
      logger.warning(`Redis at ${shown} ${describeFailure(error, commands.status)}: ${consequence}.`);
  };
  // The store's epoch: written once by the first replica to find none, renewed by every heartbeat. One that
  // is gone or changed means Redis lost its data: this replica's rebuild log is written again.
  const rebuild = new RebuildLog();
  const epochKey = `${config.prefix}epoch`;
  const grace = options.rebuildGraceMs ?? REBUILD_GRACE_MS;
  let epoch: { id: string; at: number } | undefined;
  let checking: Promise<{ id: string; at: number }> | undefined;
  const readEpoch = async (): Promise<{ id: string; at: number }> => {
    let value = await commands.get(epochKey);
    if (value === null) {
      await commands.set(
        epochKey,
        `${randomBytes(8).toString("hex")}:${Date.now()}`,
        "PX",
        EPOCH_TTL_MS,
        "NX",
      );
      value = (await commands.get(epochKey)) ?? "";
    } else {
      await commands.pexpire(epochKey, EPOCH_TTL_MS);
    }
    const [id = "", at = "0"] = value.split(":");
    const current = { id, at: Number(at) || 0 };
    if (epoch !== undefined && current.id !== epoch.id) {
      const written = await rebuild.replay();
      logger.warning(
        `Redis at ${shown} came back without the shared state (restarted empty?): this replica wrote its ${written} entries (start claims, the day's spend, task records) again. Persistence (appendonly yes) keeps them across a restart.`,
      );
    } else if (epoch === undefined) {
      await rebuild.replay();
    }
    epoch = current;
    return current;
  };
  const checkEpoch = () => (checking ??= readEpoch().finally(() => (checking = undefined)));
  /** Before anything replicas must agree on: the epoch is ours, and old enough that every replica rebuilt. */
  const current = async (): Promise<void> => {
    const { at } = await checkEpoch();
    const wait = at + grace - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(wait, grace)));
  };

  commands.on("error", markDown);
  subscriber.on("error", () => undefined);
  commands.on("ready", () => {
    if (down) void probe();
    checkEpoch().catch(markDown);
  });
  // A replica with no traffic learns of an outage too (and /readyz with it), and of a store that lost its
  // data: a small write and a look at the epoch every second.
  const heartbeat = setInterval(() => {
    if (down || commands.status !== "ready") return;
    commands.set(`${config.prefix}probe:${owner}`, "1", "PX", 10_000).catch(markDown);
    checkEpoch().catch(markDown);
  }, HEARTBEAT_MS);
  heartbeat.unref();

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
  } catch {
    down = true;
    probing = setInterval(() => void probe(), PROBE_INTERVAL_MS);
    probing.unref();
    logger.error(
      `Redis at ${shown} did not answer at start: ${alone ? "each replica decides alone (GENERATION_REDIS_WHEN_DOWN=alone)" : "/readyz reports not ready; starts are refused (nothing is sent or charged); reads and waits are served with this replica's local state"} until it answers.`,
    );
  }
  starting = false;

  const soft = <T>(fallback: T, run: () => Promise<T>): Promise<T> =>
    run().catch((error: unknown) => {
      markDown(error);
      return fallback;
    });
  const agreed = <T>(fallback: T, run: () => Promise<T>): Promise<T> =>
    current()
      .then(run)
      .catch((error: unknown) => {
        markDown(error);
        if (alone) return fallback;
        throw new SharedStateUnavailableError();
      });
  const reported = new Map<string, number>();
  const foreign = (kind: string) => {
    const last = reported.get(kind) ?? 0;
    if (Date.now() - last < 60_000) return;
    reported.set(kind, Date.now());
    logger.warning(
      `A ${kind} read from Redis at ${shown} did not carry this deployment's seal (written by something else, or damaged); it was skipped.`,
    );
  };
  return {
    ready: () => alone || (commands.status === "ready" && !down),
    forKey: (target, { local }) =>
      stateForKey(
        {
          commands,
          soft,
          agreed,
          owner,
          channel,
          listeners,
          onError: markDown,
          foreign,
          keep: (key, ttlMs, write) => rebuild.keep(key, ttlMs, write),
          forget: (key) => rebuild.forget(key),
          ...keyNames(config.prefix, target),
          sealer: sealerFor(target.baseUrl, target.apiKey),
        },
        local,
      ),
    async close() {
      clearInterval(probing);
      clearInterval(heartbeat);
      commands.disconnect();
      subscriber.disconnect();
    },
  };
}

function keyNames(prefix: string, target: StateTarget): { base: string; digest: string } {
  const digest = createHash("sha256")
    .update(`${target.baseUrl}\n${target.apiKey}`)
    .digest("hex")
    .slice(0, 16);
  return { base: `${prefix}${digest}:`, digest };
}

function stateForKey(context: KeyContext, local: TokenBucketBudget): SharedState {
  return {
    budget: new RedisBudget(budgetStore(context), local, context.owner, context.onError),
    polls: pollCoordinator(context),
    claims: startClaims(context),
    tasks: taskRecords(context),
    owners: ownershipStore(context),
    spend: spendStore(context),
  };
}

function budgetStore({ commands, base }: KeyContext): BudgetStore {
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

/** What went wrong, in the words an operator needs (never a value from Redis). */
function describeFailure(error: unknown, status: string): string {
  const message = error instanceof Error ? error.message : String(error);
  if (/^OOM\b/.test(message)) return "refuses writes (out of memory: maxmemory reached with noeviction)";
  if (/^(READONLY|MISCONF)\b/.test(message)) return `refuses writes (${message.split(" ")[0]})`;
  if (/timed? ?out/i.test(message))
    return `did not answer within ${COMMAND_TIMEOUT_MS} ms (paused or overloaded)`;
  if (status !== "ready") return "is unreachable";
  return "failed a command";
}
