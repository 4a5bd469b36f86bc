/**
 * The seam for state that several replicas of the server share: the key's rate budget, the poll of each
 * task, and the claim on each start. `runtime.ts` picks the implementation once: local (every object lives in
 * this process, as with one server) or Redis (src/state/redis.ts, loaded only when GENERATION_REDIS_URL is
 * set). Tools, the poll engine and the task starter never know which one they have.
 */
import { GenerationError } from "../api/errors.js";
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
  /** False while a shared store is configured but cannot be written (unless the operator chose to run alone): /readyz is 503. */
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
  owners: OwnershipStore | undefined;
  /** Each caller's estimated credits started per UTC day; undefined: kept by this process (spend/local-store.ts). */
  spend?: SpendStore | undefined;
}

/**
 * Estimated credits started per caller and UTC day, in hundredths of a credit (the price table has halves).
 * `caller` is an opaque digest, never a credential; `day` is `YYYY-MM-DD`. A reservation is atomic: two
 * replicas racing for the last credits of a day never both get them.
 */
export interface SpendStore {
  /**
   * Adds `amount` to the caller's day unless the total would pass `limit`; answers whether it did and the
   * total (after the reservation, or as it stands when refused). Throws SharedStateUnavailableError when it
   * cannot be agreed with the other replicas (unless the operator chose to run alone).
   */
  reserve(
    caller: string,
    day: string,
    amount: number,
    limit: number,
  ): Promise<{ reserved: boolean; used: number }>;
  /** Gives back a reservation the service said it never acted on (never below zero). */
  release(caller: string, day: string, amount: number): Promise<void>;
  /** The caller's total of the day. */
  used(caller: string, day: string): Promise<number>;
}

/**
 * A start could not be agreed with the other replicas (Redis refuses writes or does not answer), so it was
 * not sent: two replicas deciding alone could each pay for the same request. Nothing reached the service.
 */
export class SharedStateUnavailableError extends GenerationError {
  override name = "SharedStateUnavailableError";
  constructor() {
    super(
      "internal_error",
      "This server's shared state (Redis) is not accepting writes right now, so the start was not sent: nothing reached the service and nothing was charged.",
      {
        transient: true,
        nextStep:
          "Call the tool again in a minute. If it keeps failing, ask the user to tell the server's operator that its Redis is down or full.",
      },
    );
  }
}

/**
 * MCP task records (src/mcp-tasks.ts) that every replica can answer for: each record, the ids newest first,
 * the task's final record (written once: the first replica to finish or cancel a task decides its outcome
 * for all), and a lease on following the task (the replica holding it runs the background wait; when it
 * lapses, because that replica died, the next replica asked about the task takes it over). Values come back
 * only when sealed by a replica of this key (seal.ts): anything planted reads as absent. Fails soft: an
 * unreachable store stores nothing, finds nothing and grants every lease.
 */
export interface TaskRecordStore {
  put(taskId: string, record: unknown, ttlMs: number, createdAtMs: number): Promise<void>;
  /** The final record when the task has one, else the latest working record. */
  get(taskId: string): Promise<unknown>;
  /**
   * Writes the task's final record unless one exists; answers the final record that holds (this one, or the
   * one another replica wrote first). Undefined when the store could not be asked: this replica decides.
   */
  finalize(taskId: string, record: unknown, ttlMs: number): Promise<unknown>;
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
  /**
   * True when this replica now holds the claim on starting `fingerprint`. When the claim cannot be written it
   * throws SharedStateUnavailableError, unless the operator chose to run alone (then true).
   */
  claim(fingerprint: string, ttlMs: number): Promise<boolean>;
  /** Lets the claim go (only if still ours). */
  unclaim(fingerprint: string): Promise<void>;
  /** Mirrors a journal line: an intent, a started task, or a void that settles them. */
  mirror(entry: JournalEntry, ttlMs: number): Promise<void>;
  /** The started task and the open intent another replica recorded for this fingerprint. */
  read(fingerprint: string): Promise<{ started?: JournalEntry; intent?: JournalEntry }>;
}

/** A task one caller started, when one service key serves several (gateway tokens, OAuth subjects). */
export interface OwnedTask {
  video_id: string;
  /** The caller's scope (see Caller.scope). */
  scope: string;
  /** Epoch ms of the start. */
  started_at: number;
  prompt: string;
  model?: string | undefined;
}

/**
 * Who started which task, shared by the replicas (local: tasks/ownership.ts keeps it beside the journal). A
 * caller sees and lists only its own tasks. Fails soft: a store that cannot be asked knows nothing.
 */
export interface OwnershipStore {
  record(task: OwnedTask, ttlMs: number): Promise<void>;
  owner(videoId: string): Promise<OwnedTask | undefined>;
  /** The scope's task ids, newest first, and how many it has. */
  list(scope: string, offset: number, limit: number): Promise<{ ids: string[]; total: number }>;
}

/** Today's behaviour: everything in this process. */
export const LOCAL_STATE: StateHub = {
  ready: () => true,
  forKey: (_target, { local }) => ({
    budget: local,
    polls: undefined,
    claims: undefined,
    tasks: undefined,
    owners: undefined,
  }),
  close: async () => {},
};
