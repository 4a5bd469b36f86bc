/**
 * One poll loop per video id for the whole process: a task watched by several calls costs one status request
 * per interval, each waiter keeping its own deadline, cancellation and progress. Polls go out at background
 * priority, so the rate budget keeps a share of the key's limit for the user's own calls.
 */
import { GenerationError } from "../api/errors.js";
import { DEFAULT_MAX_WAIT_MS } from "../api/rate-budget.js";
import { abortable, sleep } from "../api/sleep.js";
import { isFinalStatus, type GenerationApi, type VideoStatus } from "../api/types.js";
import { silentLogger, type PollCoordinator, type TaskLogger } from "../state/records.js";

export interface PollUpdate {
  video_id: string;
  /** Of the latest good poll (undefined while none has succeeded). */
  status: string | undefined;
  /** Since this waiter started. */
  elapsedMs: number;
  /** Poll results this waiter has received, this one included. */
  polls: number;
  /** Set when this poll failed transiently and the loop backs off and goes on. */
  error?: GenerationError;
}

export interface WaitResult {
  outcome: "final" | "timeout" | "cancelled";
  video: VideoStatus | undefined;
  elapsedMs: number;
  /** When the latest poll failed transiently. */
  lastError?: GenerationError;
}

export interface WaitOptions {
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  onUpdate?: ((update: PollUpdate) => void) | undefined;
}

export interface PollEngineOptions {
  api: Pick<GenerationApi, "getVideo">;
  intervalMs: number;
  logger?: TaskLogger;
  /** Ceiling of the backoff after transient failures. Default max(30 s, intervalMs). */
  maxBackoffMs?: number;
  random?: () => number;
  coordinator: PollCoordinator;
}

/** No wait may last longer than this, whatever the caller asks. */
export const MAX_WAIT_MS = 24 * 60 * 60 * 1000;
/** Polls handed to the client at once; the rest wait, least recently polled first (none starves). */
const MAX_CONCURRENT_POLLS = 8;
/** Ids whose last poll time is remembered for fairness, beyond the ones being polled. */
const POLL_HISTORY_SIZE = 1000;
/** A poll lease lasts this many intervals, renewed at every poll: it lapses only when its replica stops. */
const LEASE_INTERVALS = 3;

interface Waiter {
  startedAt: number;
  polls: number;
  onUpdate: ((update: PollUpdate) => void) | undefined;
  release: () => void;
  resolve: (result: WaitResult) => void;
  reject: (error: unknown) => void;
}

interface Loop {
  videoId: string;
  waiters: Set<Waiter>;
  controller: AbortController;
  last?: VideoStatus | undefined;
  lastAt: number;
  lastError?: GenerationError | undefined;
  failures: number;
}

export class PollEngine {
  private readonly intervalMs: number;
  private readonly logger: TaskLogger;
  private readonly maxBackoffMs: number;
  private readonly leaseMs: number;
  private readonly random: () => number;
  private readonly loops = new Map<string, Loop>();
  /** When each id was last polled, oldest first (Map order): the fairness key. */
  private readonly lastPolled = new Map<string, number>();
  /** Loops waiting for a free slot to send their request. */
  private readonly turns: Array<{ loop: Loop; start: () => void }> = [];
  private activePolls = 0;
  private closed = false;

  constructor(private readonly options: PollEngineOptions) {
    this.intervalMs = Math.max(1, options.intervalMs);
    this.logger = options.logger ?? silentLogger;
    this.maxBackoffMs = Math.max(this.intervalMs, options.maxBackoffMs ?? 30_000);
    this.leaseMs = this.intervalMs * LEASE_INTERVALS;
    this.random = options.random ?? Math.random;
  }

  get activeIds(): string[] {
    return [...this.loops.keys()];
  }

  /** Until the task is final, the deadline passes or the signal aborts; only a permanent failure rejects. */
  wait(videoId: string, options: WaitOptions): Promise<WaitResult> {
    const timeoutMs = Math.min(
      MAX_WAIT_MS,
      Math.max(0, Number.isFinite(options.timeoutMs) ? options.timeoutMs : 0),
    );
    const { signal } = options;
    if (this.closed || signal?.aborted) {
      return Promise.resolve({ outcome: "cancelled", video: this.loops.get(videoId)?.last, elapsedMs: 0 });
    }
    this.logger("debug", "Waiting for a video task.", { video_id: videoId, timeout_ms: timeoutMs });
    return new Promise<WaitResult>((resolve, reject) => {
      const existing = this.loops.get(videoId);
      const loop: Loop = existing ?? {
        videoId,
        waiters: new Set(),
        controller: new AbortController(),
        lastAt: 0,
        failures: 0,
      };
      this.loops.set(videoId, loop);
      const timer = setTimeout(() => this.finish(loop, waiter, "timeout"), timeoutMs);
      const onAbort = () => this.finish(loop, waiter, "cancelled");
      signal?.addEventListener("abort", onAbort, { once: true });
      const waiter: Waiter = {
        startedAt: Date.now(),
        polls: 0,
        onUpdate: options.onUpdate,
        release: () => {
          clearTimeout(timer);
          signal?.removeEventListener("abort", onAbort);
        },
        resolve,
        reject,
      };
      loop.waiters.add(waiter);
      if (existing === undefined) void this.run(loop);
      // A fresh shared result is as good as a poll of our own: report it at once.
      else if (loop.last !== undefined && Date.now() - loop.lastAt < this.intervalMs)
        this.notify(waiter, loop);
    });
  }

  /** Stops every loop; pending waits resolve as "cancelled". */
  close(): void {
    this.closed = true;
    for (const loop of [...this.loops.values()]) {
      for (const waiter of [...loop.waiters]) this.finish(loop, waiter, "cancelled");
    }
  }

  /** Polls until the task is final, fails for good, or no waiter is left; only the lease holder polls. */
  private async run(loop: Loop): Promise<void> {
    const { signal } = loop.controller;
    const { coordinator } = this.options;
    try {
      while (!signal.aborted) {
        const next = (await coordinator.lead(loop.videoId, this.leaseMs))
          ? await this.pollOnce(loop)
          : await this.follow(loop, coordinator);
        if (next === "stop" || loop.waiters.size === 0) return;
        await sleep(next, signal).catch(() => undefined);
      }
    } finally {
      // A final task keeps its lease until it lapses: no follower polls it again before reading the status.
      const final = loop.last !== undefined && isFinalStatus(loop.last.status);
      if (!final) void coordinator.release(loop.videoId);
    }
  }

  /** One status request of our own; the delay before the next one, or "stop". */
  private async pollOnce(loop: Loop): Promise<number | "stop"> {
    const { signal } = loop.controller;
    const { coordinator } = this.options;
    // Waiting for a turn or the budget may outlast the lease: keep it, or two replicas would poll the task.
    const keep = setInterval(() => void coordinator.lead(loop.videoId, this.leaseMs), this.intervalMs);
    try {
      if (!(await this.takeTurn(loop))) return "stop";
      const video = await this.options.api
        .getVideo(loop.videoId, { priority: "background", signal })
        .finally(() => this.endTurn(loop));
      if (signal.aborted) return "stop";
      void coordinator.publish(loop.videoId, video);
      return this.deliver(loop, video, Date.now()) ? "stop" : this.intervalMs;
    } catch (error) {
      if (signal.aborted) return "stop";
      if (!(error instanceof GenerationError) || !error.transient) {
        this.fail(loop, error);
        return "stop";
      }
      loop.lastError = error;
      loop.failures += 1;
      const delay = this.backoff(loop.failures, error);
      this.logger("debug", "Status poll failed; backing off.", {
        video_id: loop.videoId,
        code: error.code,
        delay_ms: delay,
      });
      for (const waiter of [...loop.waiters]) this.notify(waiter, loop, error);
      return delay;
    } finally {
      clearInterval(keep);
    }
  }

  /** Another replica polls: take its newer status, then the next one before trying the lease again. */
  private async follow(loop: Loop, coordinator: PollCoordinator): Promise<number | "stop"> {
    const takeShared = async () => {
      const shared = await coordinator.latest(loop.videoId);
      if (loop.controller.signal.aborted) return true;
      return shared !== undefined && shared.at > loop.lastAt && this.deliver(loop, shared.video, shared.at);
    };
    if (await takeShared()) return "stop";
    await coordinator.nextChange(loop.videoId, this.intervalMs, loop.controller.signal);
    return (await takeShared()) ? "stop" : 0;
  }

  /** Hands a good status to every waiter; true when it is final (the waiters are then finished). */
  private deliver(loop: Loop, video: VideoStatus, at: number): boolean {
    Object.assign(loop, { last: video, lastAt: at, lastError: undefined, failures: 0 });
    for (const waiter of [...loop.waiters]) this.notify(waiter, loop);
    if (!isFinalStatus(video.status)) return false;
    for (const waiter of [...loop.waiters]) this.finish(loop, waiter, "final");
    return true;
  }

  /** Resolves true when this loop may send its request, false when it stops first. */
  private takeTurn(loop: Loop): Promise<boolean> {
    let turn: { loop: Loop; start: () => void };
    const started = abortable<void>(
      loop.controller.signal,
      (start) => {
        this.turns.push((turn = { loop, start }));
        // Let every wait started in the same tick queue first, so the ranking (not call order) decides.
        queueMicrotask(() => this.dispatch());
      },
      () => {
        if (this.turns.includes(turn)) this.turns.splice(this.turns.indexOf(turn), 1);
      },
    );
    return started.then(
      () => true,
      () => false,
    );
  }

  /** A poll that got an answer (not one aborted while queued) moves its id to the back of the line. */
  private endTurn(loop: Loop): void {
    this.activePolls -= 1;
    if (!loop.controller.signal.aborted) {
      this.lastPolled.delete(loop.videoId);
      this.lastPolled.set(loop.videoId, Date.now());
      if (this.lastPolled.size > POLL_HISTORY_SIZE + this.loops.size) {
        this.lastPolled.delete(this.lastPolled.keys().next().value ?? "");
      }
    }
    this.dispatch();
  }

  /** Hands out free slots, least recently polled id first (never polled first of all). */
  private dispatch(): void {
    const rank = (turn: { loop: Loop }) => this.lastPolled.get(turn.loop.videoId) ?? Number.NEGATIVE_INFINITY;
    while (this.activePolls < MAX_CONCURRENT_POLLS && this.turns.length > 0) {
      const best = this.turns.reduce(
        (chosen, turn, index) => (rank(turn) < rank(this.turns[chosen]!) ? index : chosen),
        0,
      );
      const [turn] = this.turns.splice(best, 1);
      this.activePolls += 1;
      turn?.start();
    }
  }

  private backoff(failures: number, error: GenerationError): number {
    const exponential = this.intervalMs * 2 ** Math.min(failures - 1, 20);
    let delay = Math.min(this.maxBackoffMs, exponential * (1 + 0.25 * this.random()));
    if (error.retryAtMs !== undefined) {
      // A 429 names its reset: waiting less would only earn another 429 (up to the budget's own ceiling).
      delay = Math.max(delay, Math.min(DEFAULT_MAX_WAIT_MS, error.retryAtMs - Date.now()));
    }
    return Math.round(delay);
  }

  private notify(waiter: Waiter, loop: Loop, error?: GenerationError): void {
    waiter.polls += 1;
    const { videoId: video_id, last } = loop;
    const update = {
      video_id,
      status: last?.status,
      elapsedMs: Date.now() - waiter.startedAt,
      polls: waiter.polls,
    };
    try {
      waiter.onUpdate?.(error ? { ...update, error } : update);
    } catch (callbackError) {
      // A broken progress sink (a client gone away) must not stop the wait for the others.
      this.logger("warning", "A progress callback failed.", { video_id, error: String(callbackError) });
    }
  }

  private finish(loop: Loop, waiter: Waiter, outcome: WaitResult["outcome"]): void {
    if (!this.detach(loop, waiter)) return;
    const elapsedMs = Date.now() - waiter.startedAt;
    this.logger(outcome === "final" ? "info" : "debug", "Stopped waiting for a video task.", {
      video_id: loop.videoId,
      outcome,
      status: loop.last?.status,
      elapsed_ms: elapsedMs,
    });
    waiter.resolve({
      outcome,
      video: loop.last,
      elapsedMs,
      ...(loop.lastError && { lastError: loop.lastError }),
    });
  }

  private fail(loop: Loop, error: unknown): void {
    this.logger("warning", "Status poll failed for good.", {
      video_id: loop.videoId,
      code: error instanceof GenerationError ? error.code : undefined,
      error: error instanceof Error ? error.message : String(error),
    });
    for (const waiter of [...loop.waiters]) {
      if (this.detach(loop, waiter)) waiter.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  /** Removes a waiter; the loop stops (its request and sleep abort) when the last one leaves. */
  private detach(loop: Loop, waiter: Waiter): boolean {
    if (!loop.waiters.delete(waiter)) return false;
    waiter.release();
    if (loop.waiters.size === 0) {
      loop.controller.abort();
      if (this.loops.get(loop.videoId) === loop) this.loops.delete(loop.videoId);
    }
    return true;
  }
}
