/**
 * The MCP task records' copy in the shared store, when replicas share state (GENERATION_REDIS_URL), so any
 * replica answers for any task. The replica that follows a task writes its record and renews a lease at
 * every poll; a lease lasts a few polls, so the tasks of a replica that died are soon taken over. A record
 * read back is checked field by field (records.ts); a task's outcome is decided once for all replicas
 * (`finalize`); a cancel that reached another replica is passed to the follower.
 */
import type { Logger } from "../../logger.js";
import type { TaskRecordStore } from "../../state/shared-state.js";
import { expiresAt, parseRecord, type TaskRecord } from "./records.js";

export class SharedRecords {
  constructor(
    private readonly store: TaskRecordStore,
    private readonly pollIntervalMs: number,
    private readonly logger: Logger,
  ) {}

  /** Takes or renews the lease on following the task; true when this replica holds it. */
  follow(taskId: string): Promise<boolean> {
    return this.store.follow(taskId, this.leaseMs());
  }

  /** The shared record of a task; undefined when there is none, or none that is valid. */
  async read(taskId: string): Promise<TaskRecord | undefined> {
    const stored = await this.store.get(taskId);
    const record = stored === undefined ? undefined : parseRecord(stored);
    if (stored !== undefined && record === undefined) {
      this.logger.warning("a shared MCP task record was not valid and was skipped");
    }
    return record;
  }

  /** Writes the record for the other replicas, for as long as its ttl has left. */
  async share(record: TaskRecord): Promise<void> {
    const left = expiresAt(record.task) - Date.now();
    if (left <= 0) return;
    await this.store.put(record.task.taskId, record, left, Date.parse(record.task.createdAt));
  }

  /**
   * Writes the task's final record unless another replica wrote one first; answers the final record that
   * holds (undefined when the store could not be asked, or its record is not valid).
   */
  async finalize(record: TaskRecord, ttlMs: number): Promise<TaskRecord | undefined> {
    return parseRecord(await this.store.finalize(record.task.taskId, record, ttlMs));
  }

  /** Task ids, newest first. */
  list(limit: number): Promise<string[]> {
    return this.store.list(limit);
  }

  /** Asks the task's follower, wherever it runs, to stop waiting. */
  requestCancel(record: TaskRecord): Promise<void> {
    return this.store.requestCancel(record.task.taskId, Math.max(1, expiresAt(record.task) - Date.now()));
  }

  cancelRequested(taskId: string): Promise<boolean> {
    return this.store.cancelRequested(taskId);
  }

  /** How long a follower's lease lasts: a few polls, so a dead replica's tasks are taken over soon. */
  private leaseMs(): number {
    return Math.max(3 * this.pollIntervalMs, 1000);
  }
}
