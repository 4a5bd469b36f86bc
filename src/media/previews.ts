/**
 * Image previews the model can see: each source fetched under the download guards, decoded, scaled to at
 * most `maxSide` pixels and re-encoded as JPEG so that all previews of one result fit one budget. A preview
 * that cannot be made is a note saying why, never a failed call. sharp (an optional native dependency) is
 * loaded on the first preview only, in a worker process (preview-worker.ts) stopped when idle.
 */
import { fork, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { ImageContent } from "@modelcontextprotocol/server";

import { AbortedError } from "../api/errors.js";
import { fetchMediaBytes } from "../files/download.js";
import { SNIFF_LENGTH, sniffMediaExtension } from "../files/sniff.js";
import {
  PreviewError,
  answerer,
  importSharp,
  type Sharp,
  type WorkerReply,
  type WorkerRequest,
} from "./preview-worker.js";

/** At most this many previews per result; more images are named in a note. */
export const MAX_PREVIEWS = 4;
/** Base64 characters of all previews of one result: far below 1 MB, and 20k tokens if counted as text. */
export const PREVIEW_BUDGET_CHARS = 160_000;
/** The largest source file fetched for a preview (a 4k photo as PNG is some 20-30 MB). */
export const MAX_SOURCE_BYTES = 40 * 1024 * 1024;
/** All previews of one result together: they come on top of the call's own wait. */
export const PREVIEW_DEADLINE_MS = 10_000;
const WORKER_IDLE_MS = 30_000;
const PREVIEWABLE = new Set(["png", "jpg", "webp", "gif"]);

export interface PreviewSource {
  url: string;
  /** How the note names it: "image 2", "the video's still". */
  label: string;
}

export interface PreviewOptions {
  maxSide: number;
  /** Hosts a fetch may reach even on a non-public address: the service's own. */
  allowHosts: readonly string[];
  signal: AbortSignal;
  /** Runs sharp in this process, loaded by this function (tests: a missing library). */
  loadSharp?: (() => Promise<Sharp>) | undefined;
  /** Epoch ms when the call must answer, when that comes before PREVIEW_DEADLINE_MS. */
  deadline?: number | undefined;
}

type Decode = (request: WorkerRequest, timeoutMs: number) => Promise<WorkerReply>;
type Settle = (outcome: WorkerReply | Error) => void;

export async function makePreviews(
  sources: readonly PreviewSource[],
  options: PreviewOptions,
): Promise<{ images: ImageContent[]; notes: string[] }> {
  const chosen = sources.slice(0, MAX_PREVIEWS);
  const notes =
    sources.length > chosen.length
      ? [`Previews show the first ${chosen.length} of ${sources.length} images.`]
      : [];
  if (chosen.length === 0) return { images: [], notes };
  const decode = options.loadSharp === undefined ? sharedDecoder() : answerer(options.loadSharp);
  const deadline = Math.min(Date.now() + PREVIEW_DEADLINE_MS, options.deadline ?? Infinity);
  // Asked first, so a server without sharp fetches nothing; a slow start counts in the previews' time.
  const probe = await decode({ id: 0, probe: true }, PREVIEW_DEADLINE_MS).catch(
    (error: unknown) => error as Error,
  );
  if (probe instanceof Error) return { images: [], notes: [`No preview: ${reasonOf(probe)}`] };
  if (probe.unavailable !== undefined) {
    const note =
      "No preview: previews are unavailable because the optional image library sharp is not installed with " +
      `this copy of generation-mcp (${probe.unavailable}). Install sharp beside it for previews, or set ` +
      "GENERATION_PREVIEWS=off to leave this note out.";
    return { images: [], notes: [note] };
  }
  const images: ImageContent[] = [];
  const budget = Math.floor(PREVIEW_BUDGET_CHARS / chosen.length);
  // One at a time: four 4k images decoded at once would quadruple the memory peak for little gain.
  for (const source of chosen) {
    try {
      const bytes = await fetchMediaBytes({
        url: source.url,
        maxBytes: MAX_SOURCE_BYTES,
        signal: options.signal,
        timeoutMs: timeLeft(deadline),
        allowHosts: options.allowHosts,
      });
      if (!PREVIEWABLE.has(sniffMediaExtension(bytes.subarray(0, SNIFF_LENGTH)) ?? "")) {
        throw new PreviewError("the file is not a PNG, JPEG, WebP or GIF image.");
      }
      const reply = await decode({ id: 0, bytes, maxSide: options.maxSide, budget }, timeLeft(deadline));
      if (reply.jpeg === undefined)
        throw new PreviewError(reply.error ?? "the image decoder answered nothing.");
      const { buffer, byteOffset, byteLength } = reply.jpeg;
      const data = Buffer.from(buffer, byteOffset, byteLength).toString("base64");
      images.push({ type: "image", data, mimeType: "image/jpeg" });
    } catch (error) {
      // A cancelled call or a shutdown still answers with the finished media, only without previews.
      if (error instanceof AbortedError || options.signal.aborted) {
        notes.push("No preview: the call was cancelled or the server is stopping.");
        break;
      }
      notes.push(`No preview of ${source.label}: ${reasonOf(error)}`);
    }
  }
  return { images, notes };
}

function timeLeft(deadline: number): number {
  const left = deadline - Date.now();
  if (left <= 0) throw new PreviewError("the call's time for previews ran out.");
  return left;
}

// Download errors end with advice about saving; a preview note wants the cause only.
export function reasonOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/[;,]? ?nothing was (saved|fetched)\.?$/, ".").replace(/\.\.$/, ".");
}

let shared: Decode | undefined;

/** The worker where its file is (next to the bundle's entry, or in the tsc output), else in-process. */
function sharedDecoder(): Decode {
  if (shared !== undefined) return shared;
  const file = ["../preview-worker.js", "./preview-worker.js"]
    .map((candidate) => fileURLToPath(new URL(candidate, import.meta.url)))
    .find((candidate) => existsSync(candidate));
  return (shared = file === undefined ? answerer(importSharp) : workerDecoder(file));
}

/** The worker ended while a request was out: a crash, or a kill the server had not heard of yet. */
class WorkerExitError extends PreviewError {}

function workerDecoder(file: string): Decode {
  let worker: { process: ChildProcess; pending: Map<number, Settle> } | undefined;
  let idle: NodeJS.Timeout | undefined;
  let nextId = 1;
  const start = () => {
    if (worker !== undefined) return worker;
    const child = fork(file, [], {
      // stdout is the MCP channel in stdio mode: the worker gets none; its stderr is the server's log.
      stdio: ["ignore", "ignore", "inherit", "ipc"],
      serialization: "advanced",
      execArgv: [],
      // glibc otherwise keeps an arena per decoding thread (the memory returns when the worker ends anyway).
      env: {
        ...process.env,
        GENERATION_PREVIEW_WORKER: "1",
        MALLOC_ARENA_MAX: process.env["MALLOC_ARENA_MAX"] ?? "2",
      },
    });
    const started = { process: child, pending: new Map<number, Settle>() };
    child.on("message", (reply: WorkerReply) => started.pending.get(reply.id)?.(reply));
    child.on("error", () => undefined);
    child.once("exit", (code, signal) => {
      if (worker === started) worker = undefined;
      const why = new WorkerExitError(
        `the image decoder stopped unexpectedly (${signal ?? `exit ${code}`}).`,
      );
      for (const settle of [...started.pending.values()]) settle(why);
    });
    // Neither the worker nor its channel keeps the server alive.
    child.unref();
    child.channel?.unref();
    return (worker = started);
  };
  const ask = (request: WorkerRequest, timeoutMs: number) =>
    new Promise<WorkerReply>((resolve, reject) => {
      const { process: child, pending } = start();
      const id = nextId++;
      clearTimeout(idle);
      const timer = setTimeout(
        () => {
          // A decoder that does not answer in time may be stuck: stop it; the next preview gets a fresh one.
          settle(new PreviewError(`the image took longer than ${Math.round(timeoutMs / 1000)} s to decode.`));
          child.kill("SIGKILL");
        },
        Math.max(1, timeoutMs),
      );
      const settle: Settle = (outcome) => {
        clearTimeout(timer);
        pending.delete(id);
        if (pending.size === 0) idle = setTimeout(stopIdle, WORKER_IDLE_MS).unref();
        if (outcome instanceof Error) reject(outcome);
        else resolve(outcome);
      };
      pending.set(id, settle);
      child.send({ ...request, id });
    });
  const stopIdle = () => {
    const stopping = worker;
    worker = undefined;
    stopping?.process.disconnect();
  };
  // Requests are pure: one that met a dead worker goes once more to a fresh one, never a third time.
  return async (request, timeoutMs) => {
    const startedAt = Date.now();
    try {
      return await ask(request, timeoutMs);
    } catch (error) {
      if (!(error instanceof WorkerExitError)) throw error;
      return ask(request, Math.max(1, timeoutMs - (Date.now() - startedAt)));
    }
  };
}
