/**
 * Where previews are decoded. In the built server, a worker process (preview-worker.ts) started on the
 * first preview and stopped after WORKER_IDLE_MS without one: the server itself never loads sharp, so its
 * memory is back to where it was once the worker ends, and a crash or a hang of the native decoder fails one
 * preview only. Without the worker file (the TypeScript sources under test) the same code runs in-process.
 */
import { fork, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import {
  PreviewError,
  importSharp,
  type Sharp,
  type TransformOptions,
  transformImage,
} from "./preview-transform.js";
import type { WorkerReply, WorkerRequest } from "./preview-worker.js";

/** A worker without a preview to make for this long is stopped, and its memory with it. */
const WORKER_IDLE_MS = 30_000;

export interface PreviewEngine {
  /** Undefined when previews can be made; otherwise why not (the image library is missing). */
  unavailable(): Promise<string | undefined>;
  /** The JPEG preview, or a PreviewError; gives up (and stops a stuck decoder) after `timeoutMs`. */
  transform(bytes: Buffer, options: TransformOptions, timeoutMs: number): Promise<Buffer>;
}

let shared: PreviewEngine | undefined;

/** The process's engine: the worker when its file is there, else in-process. */
export function defaultEngine(): PreviewEngine {
  if (shared === undefined) {
    const file = workerFile();
    shared = file === undefined ? inProcessEngine(importSharp) : new WorkerEngine(file);
  }
  return shared;
}

export function inProcessEngine(load: () => Promise<Sharp>): PreviewEngine {
  let loading: Promise<Sharp> | undefined;
  const library = () => (loading ??= load());
  return {
    async unavailable() {
      try {
        await library();
        return undefined;
      } catch (error) {
        return error instanceof Error ? (error.message.split("\n")[0] ?? error.message) : String(error);
      }
    },
    async transform(bytes, options) {
      return transformImage(await library(), bytes, options);
    },
  };
}

/** Next to the bundle's entry (dist/bundle/preview-worker.js) or to this module in the tsc output. */
function workerFile(): string | undefined {
  for (const candidate of ["../preview-worker.js", "./preview-worker.js"]) {
    const file = fileURLToPath(new URL(candidate, import.meta.url));
    if (existsSync(file)) return file;
  }
  return undefined;
}

/** The worker ended while a request was out: a crash, or a kill the server had not heard of yet. */
class WorkerExitError extends PreviewError {}

interface Pending {
  resolve(reply: WorkerReply): void;
  reject(error: Error): void;
}

class WorkerEngine implements PreviewEngine {
  private child: ChildProcess | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private idle: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly file: string) {}

  async unavailable(): Promise<string | undefined> {
    const reply = await this.retried({ id: 0, probe: true }, WORKER_IDLE_MS);
    return reply.unavailable;
  }

  async transform(bytes: Buffer, options: TransformOptions, timeoutMs: number): Promise<Buffer> {
    const reply = await this.retried({ id: 0, bytes, ...options }, timeoutMs);
    if (reply.unavailable !== undefined)
      throw new PreviewError(`previews are unavailable (${reply.unavailable}).`);
    if (reply.error !== undefined) throw new PreviewError(reply.error);
    if (reply.jpeg === undefined) throw new PreviewError("the image decoder answered nothing.");
    return Buffer.from(reply.jpeg.buffer, reply.jpeg.byteOffset, reply.jpeg.byteLength);
  }

  /**
   * Requests are pure, so one that met a dead worker goes once more to a fresh one: a worker killed from
   * outside (or crashed on an earlier image) costs nothing. One that kills its worker twice is given up.
   */
  private async retried(message: WorkerRequest, timeoutMs: number): Promise<WorkerReply> {
    const startedAt = Date.now();
    try {
      return await this.request(message, timeoutMs);
    } catch (error) {
      if (!(error instanceof WorkerExitError)) throw error;
      return this.request(message, Math.max(1, timeoutMs - (Date.now() - startedAt)));
    }
  }

  private request(message: WorkerRequest, timeoutMs: number): Promise<WorkerReply> {
    const child = this.start();
    clearTimeout(this.idle);
    const id = this.nextId++;
    return new Promise<WorkerReply>((resolve, reject) => {
      const timer = setTimeout(
        () => {
          // A decoder that does not answer in time may be stuck: stop it; the next preview gets a fresh one.
          this.pending.delete(id);
          reject(new PreviewError(`the image took longer than ${Math.round(timeoutMs / 1000)} s to decode.`));
          child.kill("SIGKILL");
        },
        Math.max(1, timeoutMs),
      );
      const settle = () => {
        clearTimeout(timer);
        this.pending.delete(id);
        if (this.pending.size === 0) this.armIdle();
      };
      this.pending.set(id, {
        resolve: (reply) => {
          settle();
          resolve(reply);
        },
        reject: (error) => {
          settle();
          reject(error);
        },
      });
      child.send({ ...message, id });
    });
  }

  private start(): ChildProcess {
    if (this.child !== undefined) return this.child;
    const child = fork(this.file, [], {
      // stdout is the MCP channel in stdio mode: the worker gets none; its stderr is the server's log.
      stdio: ["ignore", "ignore", "inherit", "ipc"],
      serialization: "advanced",
      execArgv: [],
      // glibc otherwise keeps an arena per decoding thread; the worker's memory is returned at its end anyway.
      env: { ...process.env, MALLOC_ARENA_MAX: process.env["MALLOC_ARENA_MAX"] ?? "2" },
    });
    child.on("message", (reply: WorkerReply) => this.pending.get(reply.id)?.resolve(reply));
    child.on("error", () => undefined);
    child.once("exit", (code, signal) => {
      if (this.child === child) this.child = undefined;
      const why = new WorkerExitError(
        `the image decoder stopped unexpectedly (${signal ?? `exit ${code}`}).`,
      );
      for (const pending of [...this.pending.values()]) pending.reject(why);
    });
    // Neither the worker nor its channel keeps the server alive.
    child.unref();
    (child.channel as { unref?: () => void } | undefined)?.unref?.();
    this.child = child;
    return child;
  }

  private armIdle(): void {
    clearTimeout(this.idle);
    this.idle = setTimeout(() => {
      const child = this.child;
      this.child = undefined;
      child?.disconnect();
    }, WORKER_IDLE_MS);
    this.idle.unref();
  }
}
