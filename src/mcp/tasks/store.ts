/**
 * The MCP task records of one service key, whatever wire form reads them (wire.ts), and their background
 * waits (runs.ts). A call is answered once the tool's first progress names the video_id, so the journal and
 * the duplicate guard work as for a plain call; reading a task never reaches the service.
 *
 * Records live in the key's TaskRecordStore (a file; with replicas, Redis over it) and outlive a restart: a
 * task still `working` is taken up again from its video_id. The replica following a task renews a lease at
 * every poll; when it lapses (that replica died) the next one asked takes the task over. An outcome is
 * decided once for all (`finalize`).
 */
import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import { ProtocolError, ProtocolErrorCode } from "@modelcontextprotocol/server";
import type { Logger } from "../../logger.js";
import { sleep } from "../../api/sleep.js";
import {
  TERMINAL,
  boundTtl,
  errorText,
  expiresAt,
  type StoredResult,
  type TaskRecord,
  type TaskRecordStore,
  type TaskState,
  type TaskStatus,
} from "../../state/records.js";
import { TaskEndedError, TaskNotFoundError } from "../handlers.js";
import { TaskRuns, type Resumer, type TaskRun } from "./runs.js";

/** Per key at most: the oldest finished ones go first. */
const MAX_RECORDS = 1000;
const LIST_PAGE_SIZE = 50;

interface StartTaskOptions {
  tool: string;
  scope?: string | undefined;
  requestedTtl?: number | null | undefined;
  /** Values to keep for a resumption (see ResumeInfo.saved). */
  saved?: Record<string, unknown> | undefined;
  /** Aborts when the server stops: the task then stays `working`, to be taken up again at the next start. */
  stopping: AbortSignal;
  run(task: TaskRun & { ttlMs: number }): Promise<StoredResult>;
}

export class TaskRecords {
  private readonly records = new Map<string, TaskRecord>();
  private readonly runs: TaskRuns;
  /** Wakes the readers waiting for a task to end (tasks/result in 2025-11-25). */
  private readonly endings = new EventEmitter().setMaxListeners(0);
  private readonly sweeper = setInterval(() => this.sweep(), 60_000).unref();

  private constructor(
    private readonly store: TaskRecordStore,
    readonly pollIntervalMs: number,
    logger: Logger,
  ) {
    this.runs = new TaskRuns(
      {
        progress: (record, message) => {
          if (record.task.status !== "working") return;
          this.update(record, "working", message);
          if (record.videoId !== undefined) void this.heartbeat(record);
        },
        finish: (record, status, result) => this.finish(record, status, result),
      },
      logger,
    );
  }

  static async open(store: TaskRecordStore, pollIntervalMs: number, logger: Logger): Promise<TaskRecords> {
    const tasks = new TaskRecords(store, pollIntervalMs, logger);
    for (const record of await store.load()) tasks.records.set(record.task.taskId, record);
    tasks.sweep();
    return tasks;
  }

  /** Answers once the background run named its video_id, or ended (refused, or an image came at once). */
  async start(options: StartTaskOptions): Promise<TaskState> {
    const ttlMs = boundTtl(options.requestedTtl);
    const now = new Date().toISOString();
    const record: TaskRecord = {
      task: {
        taskId: randomUUID(),
        status: "working",
        ttl: ttlMs,
        createdAt: now,
        lastUpdatedAt: now,
        pollInterval: this.pollIntervalMs,
        statusMessage: `${options.tool}: starting`,
      },
      tool: options.tool,
      scope: options.scope,
      saved: options.saved,
      pid: process.pid,
    };
    await this.runs.launch(record, options.stopping, (run) => options.run({ ...run, ttlMs }));
    this.records.set(record.task.taskId, record);
    this.trim();
    if (record.ephemeral === true) return { ...record.task };
    this.persist();
    await this.store.follow(record.task.taskId, this.leaseMs);
    await this.store.share(record);
    // On disk before the client hears of it: a task id handed out survives even a kill -9.
    await this.store.written();
    return { ...record.task };
  }

  /** The caller's task (`scope`), from this replica or the shared store; throws TaskNotFoundError. */
  async find(taskId: string, scope: string | undefined): Promise<TaskRecord> {
    const record = await this.lookup(taskId);
    if (record === undefined || record.scope !== scope || expiresAt(record.task) <= Date.now()) {
      throw new TaskNotFoundError(taskId);
    }
    return record;
  }

  /** Resolves with the task once it has ended (or rejects when `signal` aborts first). */
  async ended(taskId: string, scope: string | undefined, signal: AbortSignal): Promise<TaskRecord> {
    for (;;) {
      const record = await this.find(taskId, scope);
      if (TERMINAL.has(record.task.status)) return record;
      // Woken at once when it ends here; polled when another replica follows it.
      await new Promise<void>((resolve) => {
        this.endings.once(taskId, resolve);
        const done = () => {
          this.endings.off(taskId, resolve);
          resolve();
        };
        void sleep(record.task.pollInterval ?? this.pollIntervalMs, signal).then(done, done);
      });
      if (signal.aborted) throw signal.reason;
    }
  }

  /** The caller's tasks, newest first, a page at a time (`cursor` is the offset, as a string). */
  async list(scope: string | undefined, cursor: string | undefined) {
    const from = cursor === undefined ? 0 : Number(cursor);
    if (!Number.isSafeInteger(from) || from < 0)
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, "Invalid cursor.");
    const ids = new Set(this.records.keys());
    for (const id of await this.store.list(MAX_RECORDS)) ids.add(id);
    const found = await Promise.all([...ids].map((id) => this.find(id, scope).catch(() => undefined)));
    const mine = found
      .filter((record): record is TaskRecord => record !== undefined)
      .sort((a, b) => b.task.createdAt.localeCompare(a.task.createdAt));
    const page = mine.slice(from, from + LIST_PAGE_SIZE).map((record) => ({ ...record.task }));
    const next = from + LIST_PAGE_SIZE;
    return next < mine.length ? { tasks: page, nextCursor: String(next) } : { tasks: page };
  }

  /**
   * Stops the wait of the caller's task (the service has no cancel); a task that had already ended, here or
   * on another replica, keeps its outcome and TaskEndedError says so.
   */
  async cancel(taskId: string, scope: string | undefined): Promise<TaskRecord> {
    const record = await this.find(taskId, scope);
    await this.cancelRecord(record);
    if (statusOf(record) !== "cancelled") throw new TaskEndedError(taskId, record.task.status);
    return record;
  }

  /** Takes up, after a restart, every task that was still being waited for (unless another replica does). */
  resumeAll(resume: Resumer, stopping: AbortSignal): void {
    this.runs.resumeWith(resume, stopping);
    for (const record of this.records.values()) {
      if (record.task.status !== "working") continue;
      // Another replica may have taken the task over while this one was down.
      void this.store.follow(record.task.taskId, this.leaseMs).then((mine) => {
        if (mine) this.takeUp(record);
        else this.records.delete(record.task.taskId);
      });
    }
  }

  /** How long a follower's lease lasts: a few polls, so a dead replica's tasks are taken over soon. */
  private get leaseMs(): number {
    return Math.max(3 * this.pollIntervalMs, 1000);
  }

  get running(): number {
    return this.runs.waits.size;
  }

  /** Stops the background waits (their tasks stay `working`) and writes the records out. */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    for (const wait of this.runs.waits.values()) wait.abort();
    this.persist();
    await this.store.written();
  }

  /** The record, here or in the shared store; a working task whose follower is gone is taken over here. */
  private async lookup(taskId: string): Promise<TaskRecord | undefined> {
    const local = this.records.get(taskId);
    // Cancelled here (its follower elsewhere stops at its next poll): this copy is current.
    if (local?.task.status === "cancelled") return local;
    const record = await this.store.read(taskId);
    if (record === undefined) return local;
    if (local !== undefined && local.task.status === "working" && record.task.status !== "working") {
      // Another replica decided the outcome (a cancel there, say): every replica answers the same now.
      this.adopt(local, record);
      return local;
    }
    if (local !== undefined && this.runs.waits.has(taskId)) return local;
    if (record.task.status === "working" && (await this.store.follow(taskId, this.leaseMs))) {
      this.takeUp(record);
    }
    return record;
  }

  /** Cancels a working task, unless its outcome was decided first (then the record holds that outcome). */
  private async cancelRecord(record: TaskRecord): Promise<void> {
    if (record.task.status !== "working") return;
    const id = record.videoId;
    const text =
      id === undefined
        ? "cancelled: stopped before the service named a task."
        : `cancelled: stopped waiting for video_id ${id}. The service has no cancel, so the generation itself goes on and is charged as usual: call get_status with video_id "${id}" to follow it.`;
    await this.finish(record, "cancelled", errorText(text));
    this.records.set(record.task.taskId, record);
    // `finish` may have taken another replica's outcome instead.
    if (statusOf(record) !== "cancelled") return;
    this.runs.abort(record.task.taskId);
    // The follower may be another replica: it stops at its next poll.
    if (!this.runs.waits.has(record.task.taskId)) await this.store.requestCancel(record);
  }

  /**
   * Ends a working task, once: the first replica to write a final record decides for all (a cancel here as
   * another replica sees the generation complete), and this record takes whatever outcome holds.
   */
  private async finish(
    record: TaskRecord,
    status: "completed" | "failed" | "cancelled",
    result: StoredResult,
  ): Promise<void> {
    if (record.task.status !== "working") return;
    record.result = result;
    const firstLine = result.content.find((part) => part.type === "text")?.text.split("\n")[0];
    this.update(record, status, firstLine);
    const left = expiresAt(record.task) - Date.now();
    if (left > 0 && record.ephemeral !== true) {
      const decided = await this.store.finalize(record, left);
      if (decided !== undefined && decided.task.taskId === record.task.taskId) this.adopt(record, decided);
    }
    this.persist();
    this.endings.emit(record.task.taskId);
  }

  /** Takes the outcome another replica decided; a wait of ours for it has nothing left to do. */
  private adopt(record: TaskRecord, decided: TaskRecord): void {
    if (decided.task.status === "working") return;
    record.task = { ...decided.task };
    record.result = decided.result;
    this.runs.abort(record.task.taskId);
    this.persist();
    this.endings.emit(record.task.taskId);
  }

  /** At every poll: the shared record refreshed, the lease renewed; a cancel written elsewhere ends it. */
  private async heartbeat(record: TaskRecord): Promise<void> {
    if (await this.store.cancelRequested(record.task.taskId)) {
      await this.cancelRecord(record);
      return;
    }
    await this.store.follow(record.task.taskId, this.leaseMs);
    await this.store.share(record);
  }

  /** Follows a working task here from now on (after a restart, or from a replica that died). */
  private takeUp(record: TaskRecord): void {
    record.pid = process.pid;
    this.records.set(record.task.taskId, record);
    this.runs.takeUp(record);
    this.persist();
  }

  private update(record: TaskRecord, status: TaskStatus, statusMessage: string | undefined): void {
    record.task = {
      ...record.task,
      status,
      lastUpdatedAt: new Date().toISOString(),
      ...(statusMessage !== undefined && { statusMessage }),
    };
  }

  /** Drops records past their ttl (a running wait for one is stopped: nobody can ask for its result). */
  private sweep(): void {
    const now = Date.now();
    let dropped = false;
    for (const [taskId, record] of this.records) {
      if (expiresAt(record.task) > now) continue;
      this.runs.abort(taskId);
      this.records.delete(taskId);
      dropped = true;
    }
    if (dropped) this.persist();
  }

  private trim(): void {
    if (this.records.size <= MAX_RECORDS) return;
    const finished = [...this.records.values()]
      .filter((record) => record.task.status !== "working")
      .sort((a, b) => a.task.lastUpdatedAt.localeCompare(b.task.lastUpdatedAt));
    for (const record of finished.slice(0, this.records.size - MAX_RECORDS))
      this.records.delete(record.task.taskId);
  }

  private persist(): void {
    this.store.save(this.records.values());
  }
}

/** The record's status now (read through a call, so a check before an await does not narrow it). */
function statusOf(record: TaskRecord): TaskStatus {
  return record.task.status;
}
