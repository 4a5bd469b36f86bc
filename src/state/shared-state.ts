/**
 * The seam for state that several replicas of the server share: the key's rate budget, the poll of each
 * task, and the claim on each start. `runtime.ts` picks the implementation once: local (every object lives in
 * this process, as with one server) or Redis (src/state/redis.ts, loaded only when GENERATION_REDIS_URL is
 * set). Tools, the poll engine and the task starter never know which one they have.
 */
import type { RateBudget, TokenBucketBudget } from "../api/rate-budget.js";
import type { VideoStatus } from "../api/types.js";
import type { JournalEntry } from "../tasks/journal.js";

/** Who shares state: one service address and key (the key itself never leaves the process). */
export interface StateTarget {
  baseUrl: string;
  apiKey: string;
}

/** Makes the shared state of each service key; one per process. */
export interface StateHub {
  /** False while a shared store is configured but unreachable: the HTTP server reports not ready. */
  ready(): boolean;
  forKey(target: StateTarget, options: { local: TokenBucketBudget }): SharedState;
  close(): Promise<void>;
}

/** The shared state of one service key. Undefined members mean "this process alone decides". */
export interface SharedState {
  budget: RateBudget;
  polls: PollCoordinator | undefined;
  claims: StartClaims | undefined;
  tasks: TaskRecordStore | undefined;
}

/**
 * MCP task records (src/mcp-tasks.ts) that every replica can answer for: each record as JSON, the ids newest
 * first, and a lease on following the task (the replica holding it runs the background wait; when it lapses,
 * because that replica died, the next replica asked about the task takes it over). Fails soft: an
 * unreachable store stores nothing, finds nothing and grants every lease.
 */
export interface TaskRecordStore {
  put(taskId: string, record: string, ttlMs: number, createdAtMs: number): Promise<void>;
  get(taskId: string): Promise<string | undefined>;
  /** Task ids, newest first. */
  list(limit: number): Promise<string[]>;
  /** Takes or renews the lease on following this task for `ttlMs`; true when this replica holds it. */
  follow(taskId: string, ttlMs: number): Promise<boolean>;
  /** Asks the follower, wherever it runs, to stop waiting (tasks/cancel reached another replica). */
  requestCancel(taskId: string, ttlMs: number): Promise<void>;
  cancelRequested(taskId: string): Promise<boolean>;
}

/** What the replica that leads a task's poll stored for the others. */
export interface SharedStatus {
  video: VideoStatus;
  /** Epoch ms of the poll. */
  at: number;
}

/**
 * One replica polls a task per interval (it holds the lease); the others read what it stored and wake when
 * it publishes. Every method fails soft: an unreachable store makes `lead` answer true, so each replica
 * polls on its own until the store is back.
 */
export interface PollCoordinator {
  /** Takes (or keeps) the lease on this task's poll for `ttlMs`; true when this replica is to poll now. */
  lead(videoId: string, ttlMs: number): Promise<boolean>;
  /** Gives the lease up (the last waiter here left), so another replica takes over at once. */
  release(videoId: string): Promise<void>;
  /** Stores a poll's result and wakes the replicas waiting on it. */
  publish(videoId: string, video: VideoStatus): Promise<void>;
  /** The latest stored result, if any. */
  latest(videoId: string): Promise<SharedStatus | undefined>;
  /** Resolves after `ms`, or sooner when a result for this task is published (or the signal aborts). */
  nextChange(videoId: string, ms: number, signal: AbortSignal): Promise<void>;
}

/**
 * The duplicate guard across replicas: an atomic claim on each start's fingerprint, and a mirror of the
 * journal's lines that matter to another replica (the open intent, the started task).
 */
export interface StartClaims {
  /** True when this replica now holds the claim on starting `fingerprint`. */
  claim(fingerprint: string, ttlMs: number): Promise<boolean>;
  /** Lets the claim go (only if still ours). */
  unclaim(fingerprint: string): Promise<void>;
  /** Mirrors a journal line: an intent, a started task, or a void that settles them. */
  mirror(entry: JournalEntry, ttlMs: number): Promise<void>;
  /** The started task and the open intent another replica recorded for this fingerprint. */
  read(fingerprint: string): Promise<{ started?: JournalEntry; intent?: JournalEntry }>;
}

/** Today's behaviour: everything in this process. */
export const LOCAL_STATE: StateHub = {
  ready: () => true,
  forKey: (_target, { local }) => ({ budget: local, polls: undefined, claims: undefined, tasks: undefined }),
  close: async () => {},
};
