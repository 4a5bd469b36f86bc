/**
 * The service's records (video tasks, images, uploads) and the images rendered from them. A task's provider
 * view is a pure function of (start, timings, now), so tests need no timers; the record catches up with it
 * ("settles") only while the provider answers, as the spec's status call "asks the upstream provider".
 */
import type { Account } from "./auth.js";
import type { SandboxTimings } from "./types.js";
import type { ImageRequest, VideoRequest } from "./validation.js";

export interface TaskView {
  status: string;
  /** When the current status began. */
  since: number;
  final: boolean;
  message?: string;
}

export interface VideoTask {
  id: string;
  owner: Account;
  request: VideoRequest;
  creditsUsed: number;
  createdAt: number;
  /** The service's record of the end, once it learned it. */
  final: TaskView | undefined;
  /** Set by the fault knobs: the provider ends the task as failed at `at` (or at its normal end). */
  failure: { message: string; at?: number } | undefined;
}

export interface UploadRecord {
  contentType: string;
  extension: string;
  bytes: Buffer;
}

/** Uploads are kept in memory; past this total the oldest are evicted (their URLs answer 404). */
const MAX_STORED_UPLOAD_BYTES = 256 * 1024 * 1024;

export class Store {
  private readonly videos = new Map<string, VideoTask>();
  readonly images = new Map<string, { request: ImageRequest; width: number; height: number }>();
  readonly uploads = new Map<string, UploadRecord>();
  private uploadBytes = 0;
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
    const message = this.pendingFailures.shift();
    const failure = message === undefined ? undefined : { message };
    const task = { id, owner, request, creditsUsed, createdAt: this.clock(), final: undefined, failure };
    this.videos.set(id, task);
    return task;
  }

  /** Tasks of other accounts are invisible: the caller cannot tell them from unknown ids. */
  findVideo(id: string, owner?: Account): VideoTask | undefined {
    const task = this.videos.get(id);
    if (task) this.settle(task);
    return owner === undefined || task?.owner === owner ? task : undefined;
  }

  /** Newest first (Maps keep insertion order, which is start order). */
  listVideos(owner: Account): VideoTask[] {
    this.settleOwner(owner);
    return [...this.videos.values()].filter((task) => task.owner === owner).reverse();
  }

  failNextTask(message: string): void {
    this.pendingFailures.push(message);
  }

  failTask(id: string, message: string): boolean {
    const task = this.findVideo(id);
    if (!task || task.final || this.providerView(task).final) return false;
    task.failure = { message, at: this.clock() };
    this.settle(task);
    return true;
  }

  clearFaults(): void {
    this.pendingFailures.length = 0;
    this.providerDown = false;
  }

  /** Brings the record of every running task of `owner` up to date, refunding the ones that failed. */
  settleOwner(owner: Account): void {
    for (const task of this.videos.values()) if (task.owner === owner) this.settle(task);
  }

  settle(task: VideoTask): void {
    if (task.final || this.providerDown) return;
    const view = this.providerView(task);
    if (!view.final) return;
    task.final = view;
    // Our documented choice: a failed task's credits are given back in full.
    if (view.status === "failed") task.owner.refund(task.creditsUsed);
  }

  /** What the service tells the caller: an end not yet learned shows as the last in-progress status. */
  view(task: VideoTask): TaskView {
    if (task.final) return task.final;
    const upstream = this.providerView(task);
    return upstream.final
      ? this.inProgressView(task, Math.max(task.createdAt, upstream.since - 1))
      : upstream;
  }

  private providerView(task: VideoTask): TaskView {
    const now = this.clock();
    const endAt = task.createdAt + this.timings.queuedMs + this.timings.processingMs;
    const { message, at: failAt = endAt } = task.failure ?? {};
    if (message !== undefined && now >= failAt)
      return { status: "failed", since: failAt, final: true, message };
    if (now >= endAt) return { status: "completed", since: endAt, final: true };
    return this.inProgressView(task, now);
  }

  /** The first status covers the queue time; the others share the processing time evenly. */
  private inProgressView(task: VideoTask, now: number): TaskView {
    const statuses = this.inProgressStatuses();
    const { queuedMs, processingMs } = this.timings;
    const [steps, elapsed] = [statuses.length - 1, Math.max(0, now - task.createdAt) - queuedMs];
    const stepMs = processingMs / steps;
    let step = -1;
    if (steps >= 1 && elapsed >= 0)
      step = stepMs > 0 ? Math.min(steps - 1, Math.floor(elapsed / stepMs)) : steps - 1;
    const since = task.createdAt + (step < 0 ? 0 : queuedMs + Math.round(step * stepMs));
    return { status: statuses[step + 1] ?? "processing", since, final: false };
  }

  addUpload(id: string, record: UploadRecord): void {
    this.uploadBytes -= this.uploads.get(id)?.bytes.length ?? 0;
    this.uploads.set(id, record);
    this.uploadBytes += record.bytes.length;
    // Maps iterate in insertion order, so the first entries are the oldest.
    for (const [oldId, old] of this.uploads) {
      if (this.uploadBytes <= this.maxUploadBytes || oldId === id) break;
      this.uploads.delete(oldId);
      this.uploadBytes -= old.bytes.length;
    }
  }
}

/** Images are rendered when first fetched and only the last 8 kept, so a long demo's memory stays bounded. */
export class ImageCache {
  private readonly entries = new Map<string, Promise<Buffer>>();

  get(key: string, render: () => Buffer | Promise<Buffer>): Promise<Buffer> {
    const rendering = this.entries.get(key) ?? Promise.resolve(render());
    this.entries.delete(key);
    this.entries.set(key, rendering);
    rendering.catch(() => this.entries.delete(key));
    for (const old of this.entries.keys()) if (this.entries.size > 8) this.entries.delete(old);
    return rendering;
  }
}
