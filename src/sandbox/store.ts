/**
 * The service's records: video tasks, image results and uploads, plus the task lifecycle and the credit
 * ledger that goes with it.
 *
 * The lifecycle is derived from the clock instead of timers: the provider's view of a task is a pure
 * function of (start time, timings, now), and the service's record catches up with it ("settles") when it
 * can reach the provider. That makes tests deterministic with an injected clock, and it models the spec's
 * "the status call asks the upstream provider": during a provider outage nothing settles, so a status call
 * on a task whose record is not final fails with 502, while final records are still served from the store.
 */
import type { Account } from "./auth.js";
import type { ImageRequest, VideoRequest } from "./validation.js";
import type { SandboxTimings } from "./types.js";

export interface VideoTask {
  id: string;
  /** Breaks ties between tasks started at the same clock time, so "newest first" is stable. */
  seq: number;
  owner: Account;
  request: VideoRequest;
  creditsUsed: number;
  createdAt: number;
  /** The service's record once it learned the end; undefined while the task runs. */
  final: { status: "completed" | "failed"; at: number; message?: string } | undefined;
  /** Set by the fault knobs: the provider ends the task as failed at `at` (or at its normal end). */
  failPlan: { message: string; at: number | undefined } | undefined;
  refunded: number;
}

export interface ImageRecord {
  id: string;
  owner: Account;
  request: ImageRequest;
  width: number;
  height: number;
  creditsUsed: number;
  createdAt: number;
}

export interface UploadRecord {
  id: string;
  contentType: string;
  extension: string;
  bytes: Buffer;
  createdAt: number;
}

export interface TaskView {
  status: string;
  /** When the current status began. */
  since: number;
  final: boolean;
  message: string | undefined;
}

/**
 * Uploads are kept in memory (each is at most MAX_UPLOAD_BYTES); beyond this total the oldest are evicted
 * and their URLs answer 404, so a long demo session cannot grow without bound.
 */
export const MAX_STORED_UPLOAD_BYTES = 256 * 1024 * 1024;

export class Store {
  private readonly videos = new Map<string, VideoTask>();
  private readonly videosByOwner = new Map<Account, VideoTask[]>();
  private readonly running = new Set<VideoTask>();
  private readonly images = new Map<string, ImageRecord>();
  private readonly uploads = new Map<string, UploadRecord>();
  private uploadBytes = 0;
  private seq = 0;
  private readonly pendingFailures: string[] = [];
  providerDown = false;

  constructor(
    private readonly clock: () => number,
    private readonly timings: SandboxTimings,
    private readonly inProgressStatuses: () => readonly string[],
    private readonly maxUploadBytes = MAX_STORED_UPLOAD_BYTES,
  ) {}

  addVideo(id: string, owner: Account, request: VideoRequest, creditsUsed: number): VideoTask {
    if (this.videos.has(id)) throw new Error(`idGenerator returned a duplicate video id "${id}"`);
    const failMessage = this.pendingFailures.shift();
    const task: VideoTask = {
      id,
      seq: ++this.seq,
      owner,
      request,
      creditsUsed,
      createdAt: this.clock(),
      final: undefined,
      failPlan: failMessage === undefined ? undefined : { message: failMessage, at: undefined },
      refunded: 0,
    };
    this.videos.set(id, task);
    this.running.add(task);
    const owned = this.videosByOwner.get(owner) ?? [];
    owned.push(task);
    this.videosByOwner.set(owner, owned);
    return task;
  }

  /** Tasks of other accounts are invisible: the caller cannot tell them from unknown ids. */
  findVideo(id: string, owner: Account): VideoTask | undefined {
    const task = this.videos.get(id);
    return task?.owner === owner ? task : undefined;
  }

  /** Newest first. */
  listVideos(owner: Account): VideoTask[] {
    this.settleOwner(owner);
    const owned = [...(this.videosByOwner.get(owner) ?? [])];
    return owned.sort((a, b) => b.createdAt - a.createdAt || b.seq - a.seq);
  }

  failNextTask(message: string): void {
    this.pendingFailures.push(message);
  }

  failTask(id: string, message: string): boolean {
    const task = this.videos.get(id);
    if (!task) return false;
    this.settle(task);
    if (task.final || this.providerView(task, this.clock()).final) return false;
    task.failPlan = { message, at: this.clock() };
    this.settle(task);
    return true;
  }

  clearFaults(): void {
    this.pendingFailures.length = 0;
    this.providerDown = false;
  }

  /** Brings the record of every running task of `owner` up to date, refunding the ones that failed. */
  settleOwner(owner: Account): void {
    for (const task of this.running) if (task.owner === owner) this.settle(task);
  }

  settle(task: VideoTask): void {
    if (task.final || this.providerDown) return;
    const view = this.providerView(task, this.clock());
    if (!view.final) return;
    const status = view.status === "failed" ? "failed" : "completed";
    task.final =
      view.message === undefined
        ? { status, at: view.since }
        : { status, at: view.since, message: view.message };
    this.running.delete(task);
    // Our documented choice: credits are taken when a task starts and given back in full if it fails.
    if (status === "failed") {
      task.owner.refund(task.creditsUsed);
      task.refunded = task.creditsUsed;
    }
  }

  /**
   * What the service tells the caller. While the provider is down a task that already ended upstream still
   * shows its last in-progress status: the service has not learned the end yet.
   */
  view(task: VideoTask): TaskView {
    if (task.final)
      return { status: task.final.status, since: task.final.at, final: true, message: task.final.message };
    const now = this.clock();
    const upstream = this.providerView(task, now);
    if (!upstream.final) return upstream;
    return this.inProgressView(task, Math.max(task.createdAt, upstream.since - 1));
  }

  private providerView(task: VideoTask, now: number): TaskView {
    const endAt = task.createdAt + this.timings.queuedMs + this.timings.processingMs;
    if (task.failPlan) {
      const failAt = task.failPlan.at ?? endAt;
      if (now >= failAt)
        return { status: "failed", since: failAt, final: true, message: task.failPlan.message };
    }
    if (now >= endAt) return { status: "completed", since: endAt, final: true, message: undefined };
    return this.inProgressView(task, now);
  }

  /** The first status covers the queue time; the others share the processing time evenly. */
  private inProgressView(task: VideoTask, now: number): TaskView {
    const statuses = this.inProgressStatuses();
    const first = statuses[0] ?? "processing";
    const elapsed = Math.max(0, now - task.createdAt);
    if (statuses.length <= 1 || elapsed < this.timings.queuedMs) {
      return { status: first, since: task.createdAt, final: false, message: undefined };
    }
    const steps = statuses.length - 1;
    const stepMs = this.timings.processingMs / steps;
    const step =
      stepMs > 0 ? Math.min(steps - 1, Math.floor((elapsed - this.timings.queuedMs) / stepMs)) : steps - 1;
    return {
      status: statuses[step + 1] ?? first,
      since: task.createdAt + this.timings.queuedMs + Math.round(step * stepMs),
      final: false,
      message: undefined,
    };
  }

  addImage(record: ImageRecord): void {
    if (this.images.has(record.id))
      throw new Error(`idGenerator returned a duplicate image id "${record.id}"`);
    this.images.set(record.id, record);
  }

  findImage(id: string): ImageRecord | undefined {
    return this.images.get(id);
  }

  addUpload(record: UploadRecord): void {
    if (this.uploads.has(record.id))
      throw new Error(`idGenerator returned a duplicate upload id "${record.id}"`);
    this.uploads.set(record.id, record);
    this.uploadBytes += record.bytes.length;
    // Maps iterate in insertion order, so the first entries are the oldest.
    for (const [id, old] of this.uploads) {
      if (this.uploadBytes <= this.maxUploadBytes || id === record.id) break;
      this.uploads.delete(id);
      this.uploadBytes -= old.bytes.length;
    }
  }

  findUpload(id: string): UploadRecord | undefined {
    return this.uploads.get(id);
  }

  findCompletedVideo(id: string): VideoTask | undefined {
    const task = this.videos.get(id);
    if (!task) return undefined;
    this.settle(task);
    return task.final?.status === "completed" ? task : undefined;
  }
}
