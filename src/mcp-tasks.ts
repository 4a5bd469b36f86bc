/**
 * MCP tasks (protocol revision 2025-11-25, the SDK 1.x experimental task API) mapped onto the service's
 * generation tasks. This module is the only place that knows both sides: a change of the wire form (the
 * 2026-07-28 revision moves tasks into an extension) touches this file and the capability line in server.ts.
 *
 * A task-augmented `tools/call` runs the very tool handler a plain call runs, in the background. The call is
 * answered once the service has started the generation (the tool's first progress message names the
 * video_id), so the journal and the duplicate guard work as for a plain call. The MCP task then follows the
 * tool's own wait, which polls through the shared poll engine: `tasks/get` reads the record and never
 * reaches the service, however many clients poll it. When the wait ends, the record keeps the
 * CallToolResult a blocking call would have returned, for `tasks/result`.
 *
 * Records are kept beside the journal (one small JSON file per service key) and outlive a restart: a task
 * still `working` when the process stopped is taken up again at start, from its video_id. A task past its
 * ttl is dropped; its video_id stays recoverable with get_status.
 *
 * With several replicas (GENERATION_REDIS_URL) every record is also written to the shared store, so any
 * replica answers tasks/get, tasks/result, tasks/list and tasks/cancel. The replica that started a task
 * follows it and renews a lease at every poll; when the lease lapses (that replica died), the next replica
 * asked about the task takes it over from its video_id, as after a restart.
 */
import { randomUUID } from "node:crypto";
import * as z from "zod";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import type { TaskStore } from "@modelcontextprotocol/sdk/experimental/tasks/interfaces.js";
import {
  ErrorCode,
  McpError,
  type CallToolResult,
  type Result,
  type Task,
} from "@modelcontextprotocol/sdk/types.js";
import { MAX_TASK_TTL_MS, MIN_TASK_TTL_MS } from "./limits.js";
import type { Logger } from "./logger.js";
import type { TaskRecordStore } from "./state/shared-state.js";

const DEFAULT_TASK_TTL_MS = 60 * 60 * 1000;
/** Records kept per key at most: the oldest finished ones go first. */
const MAX_RECORDS = 1000;
const LIST_PAGE_SIZE = 50;
const FILE_NAME = "mcp-tasks.json";
/** A progress message that names the started task: "video_id <id>: started". */
const ANNOUNCEMENT = /^video_id (\S+?):/;

/** What a tool needs to take a video task up again after a restart. */
export interface ResumeInfo {
  videoId: string;
  /** Tool-specific values saved at start (e.g. download, estimated_credits); never a secret. */
  saved: Record<string, unknown>;
  /** How long the resumed wait may last: what is left of the task's ttl. */
  windowMs: number;
}

interface TaskRecord {
  task: Task;
  tool: string;
  scope?: string | undefined;
  videoId?: string | undefined;
  saved?: Record<string, unknown> | undefined;
  result?: CallToolResult | undefined;
  /**
   * Failed before the service started anything (a key it refused, insufficient credits ...): kept in this
   * process's memory only, never on disk or in the shared store, so a flood of such calls costs nothing.
   */
  ephemeral?: boolean;
}

/** What runs a tool in the background for a task: the same handler a plain call runs. */
export interface TaskRun {
  signal: AbortSignal;
  /** Progress from the tool: becomes the task's statusMessage. */
  progress(message: string): void;
}

export interface StartTaskOptions {
  tool: string;
  scope?: string | undefined;
  /** The ttl the client asked for, if any. */
  requestedTtl?: number | null | undefined;
  /** Values to keep for a resumption (see ResumeInfo.saved). */
  saved?: Record<string, unknown> | undefined;
  /** Aborts when the server stops: the task then stays `working`, to be taken up again at the next start. */
  stopping: AbortSignal;
  run(task: TaskRun & { ttlMs: number }): Promise<CallToolResult>;
}

/** Runs a restarted task's wait, or answers undefined when its tool cannot take it up. */
export type Resumer = (
  record: { tool: string; scope?: string | undefined } & ResumeInfo,
  run: TaskRun,
) => Promise<CallToolResult> | undefined;

export class McpTasks {
  private readonly records = new Map<string, TaskRecord>();
  /** Whether the file exists (or will once written): an empty record set never creates it. */
  private onDisk = false;
  private readonly runners = new Map<string, AbortController>();
  private writing: Promise<void> = Promise.resolve();
  private readonly sweeper: ReturnType<typeof setInterval>;
  /** How a task is taken up from its video_id (after a restart, or from a replica that died). */
  private resumer: { resume: Resumer; stopping: AbortSignal } | undefined;

  private constructor(
    private readonly file: string | undefined,
    private readonly pollIntervalMs: number,
    private readonly logger: Logger,
    private readonly shared: TaskRecordStore | undefined,
  ) {
    this.sweeper = setInterval(() => this.sweep(), 60_000);
    this.sweeper.unref();
  }

  /**
   * Records kept in `dir` (created when missing), or in memory only when `dir` is undefined; and in
   * `shared` too when replicas share state.
   */
  static async open(
    dir: string | undefined,
    pollIntervalMs: number,
    logger: Logger,
    shared?: TaskRecordStore,
  ): Promise<McpTasks> {
    const tasks = new McpTasks(
      dir === undefined ? undefined : path.join(dir, FILE_NAME),
      pollIntervalMs,
      logger,
      shared,
    );
    if (tasks.file !== undefined) await tasks.load(tasks.file);
    tasks.sweep();
    return tasks;
  }

  /**
   * Starts `options.run` in the background and answers with the task once the run has named its video_id
   * (or has ended, e.g. a refusal before anything started, or an image that came back at once).
   */
  async start(options: StartTaskOptions): Promise<{ task: Task }> {
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
    };
    let announced: () => void = () => {};
    const started = new Promise<void>((resolve) => (announced = resolve));
    this.launch(record, options.stopping, announced, (run) => options.run({ ...run, ttlMs }));
    await started;
    this.records.set(record.task.taskId, record);
    this.trim();
    if (record.ephemeral === true) return { task: { ...record.task } };
    this.persist();
    await this.shared?.follow(record.task.taskId, this.leaseMs());
    await this.share(record);
    // On disk before the client hears of it: a task id handed out survives even a kill -9.
    await this.writing;
    return { task: { ...record.task } };
  }

  /** Takes up, after a restart, every task that was still being waited for (unless another replica does). */
  resumeAll(resume: Resumer, stopping: AbortSignal): void {
    this.resumer = { resume, stopping };
    for (const record of this.records.values()) {
      if (record.task.status !== "working") continue;
      if (this.shared === undefined) {
        this.takeUp(record);
        continue;
      }
      // Another replica may have taken the task over while this one was down.
      void this.shared.follow(record.task.taskId, this.leaseMs()).then((mine) => {
        if (mine) this.takeUp(record);
        else this.records.delete(record.task.taskId);
      });
    }
    this.persist();
  }

  /** Follows a working task from its video_id; one that never named a task fails with advice. */
  private takeUp(record: TaskRecord): void {
    const resumer = this.resumer;
    if (resumer === undefined || this.runners.has(record.task.taskId)) return;
    const remaining = expiresAt(record.task) - Date.now();
    const launched =
      record.videoId === undefined
        ? false
        : this.launch(
            record,
            resumer.stopping,
            () => {},
            (run) =>
              resumer.resume(
                {
                  tool: record.tool,
                  scope: record.scope,
                  videoId: record.videoId ?? "",
                  saved: record.saved ?? {},
                  windowMs: remaining,
                },
                run,
              ),
          );
    if (!launched) {
      // Nothing to follow (the process stopped before the service named a task): say how to go on.
      void this.finish(
        record,
        "failed",
        errorText(
          "timeout: the server restarted before this task's generation was confirmed. " +
            "Call the tool again: an identical request within 10 minutes returns the earlier task or image (reused: true) instead of paying twice.",
        ),
      );
    }
  }

  /**
   * The record, from this replica or the shared store (for a task another replica started); a working task
   * whose follower is gone is taken over here.
   */
  private async lookup(taskId: string): Promise<TaskRecord | undefined> {
    const local = this.records.get(taskId);
    // Followed here, or cancelled here (its follower elsewhere stops at its next poll): this copy is current.
    const current = local !== undefined && (this.runners.has(taskId) || local.task.status === "cancelled");
    if (this.shared === undefined || current) return local;
    const stored = await this.shared.get(taskId);
    const record = stored === undefined ? undefined : parseRecord(stored);
    if (stored !== undefined && record === undefined) {
      this.logger.warning("a shared MCP task record was not valid and was skipped");
    }
    if (record === undefined) return local;
    if (local !== undefined && local.task.status === "working" && record.task.status !== "working") {
      // Another replica decided the outcome: every replica answers the same.
      this.adopt(local, record);
      return local;
    }
    if (record.task.status === "working" && (await this.shared.follow(taskId, this.leaseMs()))) {
      this.records.set(taskId, record);
      this.takeUp(record);
      this.persist();
    }
    return record;
  }

  /** The TaskStore the SDK's protocol handlers read, limited to one caller (`scope`) when there are several. */
  view(scope?: string): TaskStore {
    const visible = (record: TaskRecord | undefined): TaskRecord | undefined =>
      record === undefined || record.scope !== scope || expiresAt(record.task) <= Date.now()
        ? undefined
        : record;
    const find = async (taskId: string) => visible(await this.lookup(taskId));
    const mustFind = async (taskId: string): Promise<TaskRecord> => {
      const record = await find(taskId);
      if (record === undefined)
        throw new McpError(ErrorCode.InvalidParams, `Task not found: ${shownId(taskId)}`);
      return record;
    };
    return {
      createTask: () => {
        // Tasks are created by start(), after the service has started the generation.
        throw new McpError(ErrorCode.InternalError, "tasks are created by the tool call itself");
      },
      // An unknown task is refused here, in a bounded form: the SDK's own refusal would quote the whole id.
      getTask: async (taskId) => ({ ...(await mustFind(taskId)).task }),
      storeTaskResult: async (taskId, status, result) => {
        await this.finish(await mustFind(taskId), status, result as CallToolResult);
      },
      getTaskResult: async (taskId): Promise<Result> => {
        const record = await mustFind(taskId);
        if (record.result === undefined) {
          throw new McpError(
            ErrorCode.InvalidParams,
            `Task ${shownId(taskId)} has no result yet (${record.task.status}).`,
          );
        }
        return record.result;
      },
      updateTaskStatus: async (taskId, status, statusMessage) => {
        const record = await mustFind(taskId);
        if (status === "cancelled") {
          await this.cancel(record);
          if (record.task.status !== "cancelled") {
            // The task ended before the cancel could be agreed (here or on another replica).
            throw new McpError(
              ErrorCode.InvalidParams,
              `Cannot cancel task ${shownId(taskId)}: it is already ${record.task.status}.`,
            );
          }
          return;
        }
        this.update(record, status, statusMessage);
      },
      listTasks: async (cursor) => {
        const ids = new Set(this.records.keys());
        for (const id of (await this.shared?.list(MAX_RECORDS)) ?? []) ids.add(id);
        const found = await Promise.all(
          [...ids].map(async (id) => visible(this.records.get(id) ?? (await this.lookup(id)))),
        );
        const mine = found
          .filter((record): record is TaskRecord => record !== undefined)
          .sort((a, b) => b.task.createdAt.localeCompare(a.task.createdAt));
        const from = cursor === undefined ? 0 : Number(cursor);
        if (!Number.isSafeInteger(from) || from < 0) throw new Error("invalid cursor");
        const page = mine.slice(from, from + LIST_PAGE_SIZE).map((record) => ({ ...record.task }));
        const next = from + LIST_PAGE_SIZE;
        return next < mine.length ? { tasks: page, nextCursor: String(next) } : { tasks: page };
      },
    };
  }

  /** Background waits running now. */
  get running(): number {
    return this.runners.size;
  }

  /** Whether any record is kept (an empty set leaves no file behind). */
  get empty(): boolean {
    return [...this.records.values()].every((record) => record.ephemeral === true);
  }

  /** Stops the background waits (their tasks stay `working`) and writes the records out. */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    for (const runner of this.runners.values()) runner.abort();
    this.persist();
    await this.writing;
  }

  /** Runs one background wait; returns false when there was nothing to run. */
  private launch(
    record: TaskRecord,
    stopping: AbortSignal,
    announced: () => void,
    run: (task: TaskRun) => Promise<CallToolResult> | undefined,
  ): boolean {
    const controller = new AbortController();
    const progress = (message: string) => {
      const videoId = ANNOUNCEMENT.exec(message)?.[1];
      if (videoId !== undefined && record.videoId === undefined) {
        record.videoId = videoId;
        // The generation exists: the task can be handed out, and taken up again after a restart.
        announced();
      }
      if (record.task.status !== "working") return;
      this.update(record, "working", message);
      if (record.videoId !== undefined) void this.heartbeat(record);
    };
    const running = run({ signal: AbortSignal.any([controller.signal, stopping]), progress });
    if (running === undefined) return false;
    this.runners.set(record.task.taskId, controller);
    running
      .then(
        (result) => {
          // A stop leaves the task working (it is taken up at the next start); a cancel has its answer already.
          if (stopping.aborted || record.task.status !== "working") return;
          // Refused before the service started anything (bad input, a key it refused ...): nothing of it is
          // worth keeping on disk or sharing, and a flood of such calls must cost nothing.
          if (record.videoId === undefined && result.isError === true) record.ephemeral = true;
          void this.finish(record, failed(result) ? "failed" : "completed", result);
        },
        (error: unknown) => {
          this.logger.error("a background task failed unexpectedly", { error: String(error) });
          if (record.task.status === "working") {
            void this.finish(
              record,
              "failed",
              errorText("internal_error: the wait for this task failed unexpectedly."),
            );
          }
        },
      )
      .finally(() => {
        this.runners.delete(record.task.taskId);
        announced();
      });
    return true;
  }

  /** Cancels a working task, unless its outcome was decided first (then the record holds that outcome). */
  private async cancel(record: TaskRecord): Promise<void> {
    if (record.task.status !== "working") return;
    const id = record.videoId;
    const text =
      id === undefined
        ? "cancelled: stopped before the service named a task."
        : `cancelled: stopped waiting for video_id ${id}. The service has no cancel, so the generation itself goes on and is charged as usual: call get_status with video_id "${id}" to follow it.`;
    await this.finish(record, "cancelled", errorText(text), text);
    this.records.set(record.task.taskId, record);
    // `finish` may have taken another replica's outcome instead.
    if (statusOf(record) !== "cancelled") return;
    this.runners.get(record.task.taskId)?.abort();
    // The follower may be another replica: it stops at its next poll.
    if (this.shared !== undefined && !this.runners.has(record.task.taskId)) {
      await this.shared.requestCancel(record.task.taskId, Math.max(1, expiresAt(record.task) - Date.now()));
    }
  }

  /**
   * Ends a working task, once: with replicas, the first to write a final record decides for all (a cancel
   * here near the end of a generation that another replica saw complete, or the reverse), and this record
   * takes whatever outcome holds.
   */
  private async finish(
    record: TaskRecord,
    status: "completed" | "failed" | "cancelled",
    result: CallToolResult,
    statusMessage?: string,
  ): Promise<void> {
    if (record.task.status !== "working") return;
    record.result = result;
    const firstLine = result.content.find((part) => part.type === "text")?.text.split("\n")[0];
    this.update(record, status, statusMessage ?? firstLine);
    const left = expiresAt(record.task) - Date.now();
    if (this.shared !== undefined && left > 0 && record.ephemeral !== true) {
      const decided = parseRecord(await this.shared.finalize(record.task.taskId, record, left));
      if (decided !== undefined && decided.task.taskId === record.task.taskId) this.adopt(record, decided);
    }
    this.persist();
  }

  /** Takes the outcome another replica decided; a wait of ours for it has nothing left to do. */
  private adopt(record: TaskRecord, decided: TaskRecord): void {
    if (decided.task.status === "working") return;
    record.task = { ...decided.task };
    record.result = decided.result;
    this.runners.get(record.task.taskId)?.abort();
    this.persist();
  }

  /**
   * At every poll of a followed task: the shared record is refreshed and the lease renewed; a cancel that
   * another replica wrote there ends the wait here.
   */
  private async heartbeat(record: TaskRecord): Promise<void> {
    const shared = this.shared;
    if (shared === undefined) return;
    if (await shared.cancelRequested(record.task.taskId)) {
      await this.cancel(record);
      return;
    }
    await shared.follow(record.task.taskId, this.leaseMs());
    await this.share(record);
  }

  private async share(record: TaskRecord): Promise<void> {
    const left = expiresAt(record.task) - Date.now();
    if (this.shared === undefined || left <= 0) return;
    await this.shared.put(record.task.taskId, record, left, Date.parse(record.task.createdAt));
  }

  /** How long a follower's lease lasts: a few polls, so a dead replica's tasks are taken over soon. */
  private leaseMs(): number {
    return Math.max(3 * this.pollIntervalMs, 1000);
  }

  private update(record: TaskRecord, status: Task["status"], statusMessage: string | undefined): void {
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
      this.runners.get(taskId)?.abort();
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

  private async load(file: string): Promise<void> {
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch {
      return; // No records yet.
    }
    this.onDisk = true;
    let saved: { records?: unknown };
    try {
      saved = JSON.parse(text) as { records?: unknown };
    } catch {
      this.logger.warning("the MCP task records could not be read; starting with none", { file });
      return;
    }
    let skipped = 0;
    for (const value of Array.isArray(saved.records) ? saved.records : []) {
      const record = parseRecord(value);
      if (record === undefined) skipped += 1;
      else this.records.set(record.task.taskId, record);
    }
    if (skipped > 0)
      this.logger.warning(`${skipped} MCP task record(s) in ${FILE_NAME} were not valid and were skipped`);
  }

  /** Writes the records out, one write at a time, atomically (a crash leaves the old file or the new). */
  private persist(): void {
    const file = this.file;
    if (file === undefined) return;
    const kept = [...this.records.values()].filter((record) => record.ephemeral !== true);
    if (kept.length === 0 && !this.onDisk) return;
    this.onDisk = true;
    const body = JSON.stringify({ version: 1, records: kept });
    this.writing = this.writing.then(async () => {
      try {
        await mkdir(path.dirname(file), { recursive: true });
        const temporary = `${file}.${process.pid}.tmp`;
        await writeFile(temporary, body, { mode: 0o600 });
        await rename(temporary, file);
      } catch (error) {
        this.logger.warning("the MCP task records could not be written", { error: String(error) });
      }
    });
  }
}

/**
 * A task failed when its call answered an error, or when the generation itself failed: a blocking call
 * reports that as a normal answer with `status: "failed"`, which the task's result keeps as it is.
 */
function failed(result: CallToolResult): boolean {
  const status = (result.structuredContent as { status?: unknown } | undefined)?.status;
  return result.isError === true || status === "failed";
}

/**
 * A record read back (from our file or from the shared store), checked field by field: a record that is not
 * one of ours in every part is skipped, never relayed. Texts lose control and bidi characters.
 */
function parseRecord(value: unknown): TaskRecord | undefined {
  const parsed = RECORD.safeParse(value);
  if (!parsed.success) return undefined;
  const record = parsed.data;
  if (
    Number.isNaN(Date.parse(record.task.createdAt)) ||
    Number.isNaN(Date.parse(record.task.lastUpdatedAt))
  ) {
    return undefined;
  }
  return record as TaskRecord;
}

// C0/C1 controls but tab and newline, and the bidi controls that can disguise text.
// eslint-disable-next-line no-control-regex
const DISGUISE = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;
const cleanString = (max: number) =>
  z
    .string()
    .max(max)
    .transform((text) => text.replace(DISGUISE, ""));
const TEXT_ITEM = z.object({ type: z.literal("text"), text: cleanString(1_000_000) }).loose();
const IMAGE_ITEM = z
  .object({
    type: z.literal("image"),
    data: z
      .string()
      .max(2_000_000)
      .regex(/^[A-Za-z0-9+/=]*$/),
    mimeType: z.string().regex(/^image\/[a-z0-9.+-]{1,40}$/),
  })
  .loose();
const LINK_ITEM = z
  .object({ type: z.literal("resource_link"), uri: cleanString(4096), name: cleanString(200) })
  .loose();
const RECORD = z.object({
  task: z.object({
    taskId: z.string().regex(/^[0-9a-f-]{36}$/),
    status: z.enum(["working", "input_required", "completed", "failed", "cancelled"]),
    ttl: z.number().int().positive().max(MAX_TASK_TTL_MS).nullable(),
    createdAt: z.string().max(40),
    lastUpdatedAt: z.string().max(40),
    pollInterval: z.number().int().positive().max(3_600_000).optional(),
    statusMessage: cleanString(2000).optional(),
  }),
  tool: z.enum(["generate_video", "generate_image"]),
  scope: z
    .string()
    .regex(/^[A-Za-z0-9:_-]{1,80}$/)
    .optional(),
  videoId: z
    .string()
    .max(256)
    // eslint-disable-next-line no-control-regex
    .regex(/^[^\u0000-\u001F\u007F]*$/)
    .optional(),
  saved: z.record(z.string().max(64), z.union([z.string().max(256), z.number(), z.boolean()])).optional(),
  result: z
    .object({
      content: z.array(z.union([TEXT_ITEM, IMAGE_ITEM, LINK_ITEM])).max(50),
      structuredContent: z.record(z.string(), z.unknown()).optional(),
      isError: z.boolean().optional(),
    })
    .loose()
    .optional(),
});

function shownId(taskId: string): string {
  return JSON.stringify(taskId.length > 64 ? `${taskId.slice(0, 64)}…` : taskId).replace(DISGUISE, "");
}

/** The ttl a task gets: the default when none was asked for, else the one asked for within the bounds. */
function boundTtl(requested: number | null | undefined): number {
  if (typeof requested !== "number" || !Number.isFinite(requested)) return DEFAULT_TASK_TTL_MS;
  return Math.max(MIN_TASK_TTL_MS, Math.min(Math.round(requested), MAX_TASK_TTL_MS));
}

/** The record's status now (read through a call, so a check before an await does not narrow it). */
function statusOf(record: TaskRecord): Task["status"] {
  return record.task.status;
}

function expiresAt(task: Task): number {
  return Date.parse(task.createdAt) + (task.ttl ?? MAX_TASK_TTL_MS);
}

function errorText(text: string): CallToolResult {
  return { content: [{ type: "text", text }], isError: true };
}

/**
 * The tasks of task-augmented calls refused before anything was sent (bad arguments): answered like any
 * task (failed at once, with the validation_error a plain call gets), but held only here, per caller, for
 * the shortest ttl and at most MAX_REFUSED of them: no runtime, no file, nothing shared, whatever the flood.
 */
export class RefusedTasks {
  private readonly tasks = new Map<string, { caller: string; task: Task; result: CallToolResult }>();

  add(caller: string, result: CallToolResult): Task {
    const now = new Date().toISOString();
    const firstLine = result.content.find((part) => part.type === "text")?.text.split("\n")[0];
    const task: Task = {
      taskId: randomUUID(),
      status: "failed",
      ttl: MIN_TASK_TTL_MS,
      createdAt: now,
      lastUpdatedAt: now,
      ...(firstLine !== undefined && { statusMessage: firstLine }),
    };
    this.sweep();
    this.tasks.set(task.taskId, { caller, task, result });
    if (this.tasks.size > MAX_REFUSED) this.tasks.delete(this.tasks.keys().next().value ?? "");
    return { ...task };
  }

  /** The refused task of this caller, while it lives. */
  find(caller: string, taskId: string): { task: Task; result: CallToolResult } | undefined {
    const found = this.tasks.get(taskId);
    if (found === undefined || found.caller !== caller || expiresAt(found.task) <= Date.now())
      return undefined;
    return { task: { ...found.task }, result: found.result };
  }

  private sweep(): void {
    const now = Date.now();
    for (const [taskId, entry] of this.tasks) {
      if (expiresAt(entry.task) > now) break;
      this.tasks.delete(taskId);
    }
  }
}

const MAX_REFUSED = 1000;
