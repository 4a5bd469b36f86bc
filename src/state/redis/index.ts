/**
 * Shared state on Redis (GENERATION_REDIS_URL), loaded only by a server configured for it. One command and
 * one subscriber connection per process serve every service key, whose keys are `<prefix><sha256(baseUrl +
 * "\n" + apiKey), 16 hex>:<name>`; every key has a TTL; every value is sealed (seal.ts).
 *
 * When Redis is down, slow, full or paused for writes, a command gives up after COMMAND_TIMEOUT_MS (nothing
 * is queued), `ready()` is false until a probe write succeeds again, and one line is logged when the outage
 * starts and one when it ends. Reads and waits go on with local state; a start whose claim cannot be written
 * is not sent, unless GENERATION_REDIS_WHEN_DOWN=alone.
 *
 * Redis that comes back EMPTY (restarted without persistence) lost the claims and the day's spend the
 * replicas relied on: each replica writes again what it wrote there, and nothing is started before every
 * replica live at the loss has done so (rebuild.ts).
 */
import { createHash, randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import { hostname } from "node:os";
import { Redis } from "ioredis";
import type { RedisConfig } from "../../config/index.js";
import type { Logger } from "../../logger.js";
import { SharedStateRebuildingError, SharedStateUnavailableError, type StateHub } from "../records.js";
import { RedisBudget } from "./budget.js";
import { startClaims } from "./claims.js";
import { usedConfirmations } from "./confirmations.js";
import { STALE, px, type KeyContext, type ScriptedRedis } from "./context.js";
import { ownershipStore } from "./owners.js";
import { pollCoordinator } from "./polls.js";
import { Rebuild } from "./rebuild.js";
import * as scripts from "./scripts.js";
import { sealerFor } from "./seal.js";
import { spendStore } from "./spend.js";
import { taskRecords } from "./task-records.js";
import { redisUploadLinks } from "./upload-links.js";

/** Longest any Redis command may take before the replica goes on without it. */
const COMMAND_TIMEOUT_MS = 1000;
const CONNECT_TIMEOUT_MS = 2000;
/** How often a replica whose writes failed tries one again, and checks its epoch when they do not. */
const PROBE_INTERVAL_MS = 1000;
/** Writes of `agreed` that find the store emptied again and again are refused (with a retry) after this many. */
const STALE_TRIES = 3;

/** Connects (waiting at most CONNECT_TIMEOUT_MS); unreachable, the hub reports not ready and keeps trying. */
export async function connectRedis(config: RedisConfig, logger: Logger): Promise<StateHub> {
  // The address without its password, for logs.
  const { protocol, host, pathname } = new URL(config.url);
  const shown = `${protocol}//${host}${pathname === "/" ? "" : pathname}`;
  const common = {
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
    retryStrategy: (times: number) => Math.min(100 * times, 2000),
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
  const define = (name: string, keys: number, lua: string) =>
    commands.defineCommand(name, { numberOfKeys: keys, lua });
  define("budgetTake", 2, scripts.BUDGET_TAKE);
  define("budgetObserve", 2, scripts.BUDGET_OBSERVE);
  define("takeLease", 1, scripts.TAKE_LEASE);
  define("takeLeaseInEpoch", 2, scripts.TAKE_LEASE_IN_EPOCH);
  define("setOnceInEpoch", 2, scripts.SET_ONCE_IN_EPOCH);
  define("releaseIfOwner", 1, scripts.RELEASE_IF_OWNER);
  define("taskFinalize", 1, scripts.TASK_FINALIZE);
  define("spendReserve", 2, scripts.SPEND_RESERVE);
  define("spendRelease", 1, scripts.SPEND_RELEASE);

  const owner = `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`;
  const alone = config.whenDown === "alone";
  const consequence = alone
    ? "each replica decides alone (GENERATION_REDIS_WHEN_DOWN=alone) until it is back"
    : "/readyz reports not ready and starts are refused (nothing is sent or charged) until it is back";
  const probeKey = `${config.prefix}probe:${owner}`;
  /** While connecting at start: the failure is said once, in the start's own line below. */
  let starting = true;
  // One outage, one line: `down` is set by the first failure and cleared only by a write that succeeds.
  let down = false;
  const markDown = (error: unknown) => {
    if (down) return;
    down = true;
    if (!starting)
      logger.warning(`Redis at ${shown} ${describeFailure(error, commands.status)}: ${consequence}.`);
  };
  const probe = async () => {
    if (!down && commands.status !== "ready") return;
    try {
      await commands.set(probeKey, "1", "PX", 10_000);
      await rebuild.beat();
    } catch (error) {
      markDown(error);
      return;
    }
    if (!down) return;
    down = false;
    logger.info(`Redis at ${shown} accepts writes again; shared state resumes.`);
  };
  // A replica with no traffic learns of an outage too (and /readyz with it), and of a store that lost its
  // data: a small write and a look at the epoch every second.
  const heartbeat = setInterval(() => void probe(), PROBE_INTERVAL_MS);
  heartbeat.unref();

  const rebuild = new Rebuild(commands, config.prefix, owner, (written) =>
    logger.warning(
      `Redis at ${shown} came back without the shared state (restarted empty?): this replica wrote its ${written} entries (start claims, the day's spend, task records) again. Persistence (appendonly yes) keeps them across a restart.`,
    ),
  );

  commands.on("error", markDown);
  subscriber.on("error", () => undefined);
  commands.on("ready", () => void probe());

  const channel = `${config.prefix}status`;
  // Any number of waiters may wait on one task; a message "error" (planted) must not throw.
  const wakes = new EventEmitter().setMaxListeners(0).on("error", () => undefined);
  subscriber.on("message", (_channel: string, message: string) => wakes.emit(message));
  const subscribed = subscriber.subscribe(channel).catch(() => undefined);
  try {
    await commands.connect();
    await subscribed;
    logger.info(`Shared state on Redis at ${shown} (prefix ${JSON.stringify(config.prefix)}).`);
  } catch {
    down = true;
    logger.error(
      `Redis at ${shown} did not answer at start: ${alone ? "each replica decides alone (GENERATION_REDIS_WHEN_DOWN=alone)" : "/readyz reports not ready; starts are refused (nothing is sent or charged); reads and waits are served with this replica's local state"} until it answers.`,
    );
  }
  starting = false;

  const reported = new Map<string, number>();
  const foreign = (kind: string) => {
    if (Date.now() - (reported.get(kind) ?? 0) < 60_000) return;
    reported.set(kind, Date.now());
    logger.warning(
      `A ${kind} read from Redis at ${shown} did not carry this deployment's seal (written by something else, or damaged); it was skipped.`,
    );
  };
  const shared: Omit<KeyContext, "key" | "digest" | "sealer" | "open"> = {
    commands,
    owner,
    channel,
    wakes,
    onError: markDown,
    lease: async (name, holder, ttlMs) => Number(await commands.takeLease(name, holder, px(ttlMs))) === 1,
    soft: (fallback, run) =>
      run().catch((error: unknown) => {
        markDown(error);
        return fallback;
      }),
    agreed: async (fallback, run) => {
      try {
        // Emptied between the look at its epoch and the write: the next look rebuilds, then it runs again.
        for (let tries = 1; ; tries++) {
          const answer = await run(await rebuild.rebuilt());
          if (answer !== STALE) return answer;
          if (tries === STALE_TRIES) throw new SharedStateRebuildingError(PROBE_INTERVAL_MS);
        }
      } catch (error) {
        // Redis answers, but what was lost is not written back yet: no start, whatever the rule for outages.
        if (error instanceof SharedStateRebuildingError) throw error;
        markDown(error);
        if (alone) return fallback;
        throw new SharedStateUnavailableError();
      }
    },
    epochKey: rebuild.key,
    keep: (key, ttlMs, write) => rebuild.keep(key, ttlMs, write),
    forget: (key) => rebuild.forget(key),
  };
  return {
    ready: () => alone || (commands.status === "ready" && !down),
    forKey: (target, local) => {
      const digest = createHash("sha256")
        .update(`${target.baseUrl}\n${target.apiKey}`)
        .digest("hex")
        .slice(0, 16);
      const sealer = sealerFor(target.baseUrl, target.apiKey);
      const context: KeyContext = {
        ...shared,
        key: (...parts) => `${config.prefix}${digest}:${parts.join(":")}`,
        digest,
        sealer,
        open: (text, read, kind) => {
          if (text === null || text === undefined) return undefined;
          const value = read(sealer.open(text));
          if (value === undefined) foreign(kind);
          return value;
        },
      };
      return {
        budget: new RedisBudget(context, local.budget),
        polls: pollCoordinator(context),
        claims: startClaims(context),
        tasks: taskRecords(context, local.tasks),
        owners: ownershipStore(context, local.owners),
        spend: spendStore(context),
        confirmations: usedConfirmations(context, local.confirmations),
      };
    },
    uploadLinks: redisUploadLinks(commands, config.prefix),
    async close() {
      clearInterval(heartbeat);
      await rebuild.leave().catch(() => undefined);
      commands.disconnect();
      subscriber.disconnect();
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
  // A reset or refused connection (ECONNRESET ...) can be reported while the status still says ready.
  const code: unknown = (error as NodeJS.ErrnoException | undefined)?.code;
  if (status !== "ready" || (typeof code === "string" && code.startsWith("E"))) return "is unreachable";
  return "failed a command";
}
