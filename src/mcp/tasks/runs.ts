/**
 * The background waits of the MCP task records (store.ts): the tool handler a plain call runs, for a new task
 * or taken up again from its video_id. A run's first progress that names the started task announces it; a run
 * that ends hands its result to the store, unless the server is stopping (the task stays `working`, to be
 * taken up at the next start) or the task has ended already (a cancel).
 */
import type { Logger } from "../../logger.js";
import type { ResumeInfo } from "../../tools/define-tool.js";
import { errorText, expiresAt, type StoredResult, type TaskRecord } from "../../state/records.js";

/** Failed: an error answer, or a failed generation (a plain call answers that with status "failed"). */
function failed(result: StoredResult): boolean {
  const status = (result.structuredContent as { status?: unknown } | undefined)?.status;
  return result.isError === true || status === "failed";
}

/** A progress message that names the started task: "video_id <id>: started". */
const ANNOUNCEMENT = /^video_id (\S+?):/;

export interface TaskRun {
  signal: AbortSignal;
  /** Progress from the tool: becomes the task's statusMessage. */
  progress(message: string): void;
}

/** Runs a restarted task's wait, or answers undefined when its tool cannot take it up. */
export type Resumer = (
  record: { tool: string; scope?: string | undefined } & ResumeInfo,
  run: TaskRun,
) => Promise<StoredResult> | undefined;

interface RunHooks {
  progress(record: TaskRecord, message: string): void;
  finish(record: TaskRecord, status: "completed" | "failed", result: StoredResult): Promise<void>;
}

export class TaskRuns {
  private readonly controllers = new Map<string, AbortController>();
  private resumer: { resume: Resumer; stopping: AbortSignal } | undefined;

  constructor(
    private readonly hooks: RunHooks,
    private readonly logger: Logger,
  ) {}

  /** The waits running here, by task id (only this class starts and ends them). */
  get waits(): ReadonlyMap<string, AbortController> {
    return this.controllers;
  }

  abort(taskId: string): void {
    this.controllers.get(taskId)?.abort();
  }

  resumeWith(resume: Resumer, stopping: AbortSignal): void {
    this.resumer = { resume, stopping };
  }

  /** Follows a working task from its video_id; one that never named a task fails with advice. */
  takeUp(record: TaskRecord): void {
    const resumer = this.resumer;
    if (resumer === undefined || this.controllers.has(record.task.taskId)) return;
    const { tool, scope, videoId, saved = {} } = record;
    const info = { tool, scope, saved, windowMs: expiresAt(record.task) - Date.now() };
    const launched =
      videoId !== undefined &&
      this.launch(record, resumer.stopping, (run) => resumer.resume({ ...info, videoId }, run)) !== undefined;
    if (!launched) {
      void this.hooks.finish(
        record,
        "failed",
        errorText(
          "timeout: the server restarted before this task's generation was confirmed. " +
            "Call the tool again: an identical request within 10 minutes returns the earlier task or image (reused: true) instead of paying twice.",
        ),
      );
    }
  }

  /** Runs one background wait: settles once it named its video_id or ended; undefined when nothing ran. */
  launch(
    record: TaskRecord,
    stopping: AbortSignal,
    run: (task: TaskRun) => Promise<StoredResult> | undefined,
  ): Promise<void> | undefined {
    const controller = new AbortController();
    let announced = () => {};
    const started = new Promise<void>((resolve) => (announced = resolve));
    const progress = (message: string) => {
      const videoId = ANNOUNCEMENT.exec(message)?.[1];
      if (videoId !== undefined && record.videoId === undefined) {
        record.videoId = videoId;
        announced();
      }
      this.hooks.progress(record, message);
    };
    const running = run({ signal: AbortSignal.any([controller.signal, stopping]), progress });
    if (running === undefined) return undefined;
    this.controllers.set(record.task.taskId, controller);
    running
      .then(
        (result) => {
          if (stopping.aborted || record.task.status !== "working") return;
          // Refused before the service started anything: a flood of such calls must cost no disk or sharing.
          if (record.videoId === undefined && result.isError === true) record.ephemeral = true;
          void this.hooks.finish(record, failed(result) ? "failed" : "completed", result);
        },
        (error: unknown) => {
          this.logger.error("a background task failed unexpectedly", { error: String(error) });
          void this.hooks.finish(
            record,
            "failed",
            errorText("internal_error: the wait for this task failed unexpectedly."),
          );
        },
      )
      .finally(() => {
        this.controllers.delete(record.task.taskId);
        announced();
      });
    return started;
  }
}
