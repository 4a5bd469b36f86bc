/**
 * A contact sheet of a finished video's frames, so the model can see what it made: frames spread over the
 * whole clip, each with its timestamp, tiled into one JPEG. The video is fetched under the download guards
 * into a private temporary folder, always removed; ffmpeg (a separate process: its memory ends with it)
 * reads only that file, under a time limit. Whatever goes wrong costs the sheet only: a note, never a failed
 * call. Sheets are made once per video URL and kept in a small LRU shared by every later result of it.
 */
import { execFile } from "node:child_process";
import { rmSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { ImageContent } from "@modelcontextprotocol/server";

import { abortable } from "../api/sleep.js";
import type { Config } from "../config/index.js";
import { downloadMedia } from "../files/download.js";
import { MAX_INPUT_PIXELS } from "./preview-worker.js";
import { reasonOf, type PreviewOptions } from "./previews.js";

/** The largest video fetched for a sheet: a 10 s 4k clip is some 50-150 MB. */
export const MAX_VIDEO_BYTES = 200 * 1024 * 1024;
/** The wait for a turn, the fetch and the decode together; a later result of the same video reuses the outcome. */
export const FRAMES_DEADLINE_MS = 30_000;
/** A sheet above this is made again at a lower quality: it shares the result's 1 MB with everything else. */
export const SHEET_MAX_BYTES = 200_000;
const CACHED_SHEETS = 16;
const MAX_STDERR_BYTES = 4 * 1024 * 1024;
const TOO_MUCH_OUTPUT = "ffmpeg reported more than 4 MB of errors: the file looks damaged.";
const TIMED_OUT = `ffmpeg did not finish within ${FRAMES_DEADLINE_MS / 1000} s.`;
const VIDEO_DEMUXERS: Readonly<Record<string, string>> = { mp4: "mov", mov: "mov", webm: "matroska" };

export interface FramesInfo {
  frames: number;
  layout: "3x2" | "2x2";
  times_s: number[];
  duration_s: number;
  width: number;
  height: number;
}

export type Sheet = { image: ImageContent; frames: FramesInfo; text: string } | { note: string };

/** The `signal` is the caller's: it stops waiting, while the decode goes on for the video's next result. */
export interface SheetOptions extends Omit<PreviewOptions, "loadSharp">, Pick<Config, "ffmpegPath"> {
  /** FRAMES_DEADLINE_MS unless given (tests). */
  deadlineMs?: number;
}

/** `keep` false: worth trying again on a later result (the network may be back). */
class FramesError extends Error {
  constructor(
    message: string,
    readonly keep = true,
  ) {
    super(message);
  }
}

const sheets = new Map<string, Promise<Sheet>>();

/** Sheets made at once, and waiting for a turn: a burst of finished videos must not start an ffmpeg each. */
const AT_ONCE = 2;
const WAITING_AT_MOST = 8;
let running = 0;
const turns: (() => void)[] = [];

async function inTurn<T>(deadline: number, make: () => Promise<T>): Promise<T> {
  if (running < AT_ONCE) running += 1;
  else if (turns.length >= WAITING_AT_MOST || !(await turnBefore(deadline))) {
    throw new FramesError(
      "the server is busy making other videos' frame sheets; get_status of this video shows them later.",
      false,
    );
  }
  try {
    return await make();
  } finally {
    // The turn passes straight to the next in line, so no newcomer slips in between.
    const next = turns.shift();
    if (next === undefined) running -= 1;
    else next();
  }
}

/** Waits for a turn; false when the deadline comes first (the place in line is given up). */
function turnBefore(deadline: number): Promise<boolean> {
  return new Promise((resolve) => {
    const take = () => {
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(() => {
      turns.splice(turns.indexOf(take), 1);
      resolve(false);
    }, deadline - Date.now());
    turns.push(take);
  });
}

/** The sheet of the video at `url`, or a note saying why there is none. */
export async function contactSheet(url: string, options: SheetOptions): Promise<Sheet> {
  const maxSide = Math.min(1024, options.maxSide);
  const key = `${options.ffmpegPath ?? ""} ${maxSide} ${url}`;
  let made = sheets.get(key);
  sheets.delete(key);
  const deadline = Date.now() + (options.deadlineMs ?? FRAMES_DEADLINE_MS);
  made ??= inTurn(deadline, () => makeSheet(url, { ...options, maxSide }, deadline)).catch(
    (error: unknown) => {
      if (!(error instanceof FramesError && error.keep)) sheets.delete(key);
      return { note: noteFor(error) };
    },
  );
  sheets.set(key, made);
  while (sheets.size > CACHED_SHEETS) sheets.delete(sheets.keys().next().value ?? "");
  return abortable(options.signal, (resolve, reject) => void made.then(resolve, reject));
}

function noteFor(error: unknown): string {
  if ((error as { code?: unknown }).code === "ENOENT") {
    return (
      "No frame preview: ffmpeg was not found, so the model cannot see the video's frames. Install ffmpeg " +
      "(apt install ffmpeg, brew install ffmpeg or winget install ffmpeg) or set GENERATION_FFMPEG_PATH to its " +
      "binary; GENERATION_PREVIEWS=off leaves this note out."
    );
  }
  return `No frame preview of the video: ${reasonOf(error)}`;
}

async function makeSheet(url: string, options: SheetOptions, deadline: number): Promise<Sheet> {
  const dir = await mkdtemp(path.join(tmpdir(), "generation-mcp-frames-"));
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  // process.exit() skips finally blocks: the folder and a running ffmpeg go with the process all the same.
  process.once("exit", cleanup);
  try {
    await checkBinary(options.ffmpegPath ?? "ffmpeg", deadline);
    const video = await downloadMedia({
      url,
      dir,
      baseName: "video",
      maxBytes: MAX_VIDEO_BYTES,
      timeoutMs: deadline - Date.now(),
      allowHosts: options.allowHosts,
    }).catch((error: unknown) => {
      throw new FramesError(reasonOf(error), false);
    });
    const demuxer = VIDEO_DEMUXERS[path.extname(video.path).slice(1)];
    if (demuxer === undefined) throw new FramesError("the file is not an MP4, QuickTime or WebM video.");
    const input = ["-f", demuxer, "-i", video.path];
    const ffmpeg = (args: string[]) =>
      runFfmpeg(options.ffmpegPath ?? "ffmpeg", [...SAFE_ARGS, ...input, ...args], deadline);
    const probe = await ffmpeg([]);
    const size = /Video: .*?, (\d+)x(\d+)/.exec(probe.stderr);
    const time = /Duration: (\d+):(\d+):(\d+(?:\.\d+)?)/.exec(probe.stderr);
    const duration = time ? Number(time[1]) * 3600 + Number(time[2]) * 60 + Number(time[3]) : 0;
    if (size === null || !(duration > 0))
      throw new FramesError(`ffmpeg could not read it (${lastLine(probe)}).`);
    const [width, height] = [Number(size[1]), Number(size[2])];
    if (width * height > MAX_INPUT_PIXELS) {
      throw new FramesError(
        `the video claims ${width}x${height} pixels, above the ${MAX_INPUT_PIXELS / 1e6}-megapixel preview limit, so it was not decoded.`,
      );
    }
    const [columns, rows] = duration < 1.5 ? [2, 2] : [3, 2];
    const count = columns * rows;
    const sheetFile = path.join(dir, "sheet.jpg");
    // Each tile shows the frame at the middle of its share of the clip, scaled before it is drawn on.
    const select = `select='gte(t+0.001\\,(selected_n+0.5)*${duration / count})'`;
    const scale = `scale=${Math.floor(options.maxSide / columns)}:${Math.floor(options.maxSide / rows)}:force_original_aspect_ratio=decrease:force_divisible_by=2`;
    const stamp =
      "drawtext=text='%{pts\\:hms}':x=4:y=h-th-4:fontsize=14:fontcolor=white:box=1:boxcolor=black@0.6";
    const encode = async (quality: number, withStamp: boolean) => {
      const filters = [select, "showinfo", scale, ...(withStamp ? [stamp] : []), `tile=${columns}x${rows}`];
      const output = ["-frames:v", "1", "-q:v", String(quality), "-update", "1", "-y", sheetFile];
      const run = await ffmpeg(["-an", "-sn", "-dn", "-vf", filters.join(","), ...output]);
      // No font (no fontconfig) or a build without drawtext: the sheet without timestamps drawn on.
      if (run.code !== 0 && withStamp && /drawtext|font/i.test(run.stderr)) return encode(quality, false);
      if (run.code !== 0) throw new FramesError(`ffmpeg could not decode it (${lastLine(run)}).`);
      return { run, jpeg: await readFile(sheetFile), withStamp };
    };
    let made = await encode(5, true);
    if (made.jpeg.length > SHEET_MAX_BYTES) made = await encode(15, made.withStamp);
    if (made.jpeg.length > SHEET_MAX_BYTES) throw new FramesError("the sheet stayed too large.");
    const times = [...made.run.stderr.matchAll(/Parsed_showinfo.*? pts_time:(-?[\d.]+)/g)].map(
      (m) => Math.round(Number(m[1]) * 100) / 100,
    );
    if (times.length < count) {
      throw new FramesError(
        `the video looks damaged or cut short: only ${times.length} of the ${count} frames could be read.`,
      );
    }
    const layout = `${columns}x${rows}` as FramesInfo["layout"];
    const duration_s = Math.round(duration * 100) / 100;
    return {
      image: { type: "image", data: made.jpeg.toString("base64"), mimeType: "image/jpeg" },
      frames: { frames: times.length, layout, times_s: times, duration_s, ...jpegSize(made.jpeg) },
      text: `Frames of the video: ${times.length} frames at ${times.map(clock).join(", ")} (left to right, top to bottom).`,
    };
  } finally {
    process.removeListener("exit", cleanup);
    await rm(dir, { recursive: true, force: true });
  }
}

const working = new Set<string>();

/** A missing binary is found before anything is fetched; one that ran once is not asked again. */
async function checkBinary(binary: string, deadline: number): Promise<void> {
  if (!working.has(binary) && (await runFfmpeg(binary, ["-version"], deadline)).code === 0)
    working.add(binary);
}

/** ffmpeg may read the one local file and nothing else, never the terminal; its own limits come on top. */
const SAFE_ARGS = ["-hide_banner", "-nostdin", "-nostats", "-protocol_whitelist", "file"];

type Run = { code: number; stderr: string };

/** Runs ffmpeg until the deadline; a missing binary rejects with its ENOENT error. */
function runFfmpeg(binary: string, args: string[], deadline: number): Promise<Run> {
  const timeout = deadline - Date.now();
  if (timeout <= 0) return Promise.reject(new FramesError(TIMED_OUT));
  // Never the service key or tokens: ffmpeg gets the environment without the server's settings.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^GENERATION_|KEY|TOKEN|SECRET|PASSWORD/i.test(name)),
  );
  return new Promise((resolve, reject) => {
    const kill = () => child.kill("SIGKILL");
    const child = execFile(
      binary,
      args,
      { env, timeout, killSignal: "SIGKILL", maxBuffer: MAX_STDERR_BYTES, windowsHide: true },
      (error, _stdout, stderr) => {
        process.removeListener("exit", kill);
        if (error === null) resolve({ code: 0, stderr });
        else if (typeof error.code === "number") resolve({ code: error.code, stderr });
        else if (error.code === "ERR_CHILD_PROCESS_STDIO_MAXBUFFER") reject(new FramesError(TOO_MUCH_OUTPUT));
        else reject(error.signal ? new FramesError(TIMED_OUT) : error);
      },
    );
    process.once("exit", kill);
  });
}

function lastLine({ stderr }: Run): string {
  const lines = stderr.split("\n").filter((line) => /^[^\s[]|^\[(?!Parsed_)/.test(line));
  return (lines.at(-1) ?? "no output").replace(/^\[[^\]]*\] /, "").slice(0, 200);
}

function jpegSize(jpeg: Buffer): { width: number; height: number } {
  for (let at = 2; at + 9 < jpeg.length && jpeg[at] === 0xff; at += 2 + jpeg.readUInt16BE(at + 2)) {
    const marker = jpeg[at + 1] ?? 0;
    if (marker >= 0xc0 && marker <= 0xc3)
      return { height: jpeg.readUInt16BE(at + 5), width: jpeg.readUInt16BE(at + 7) };
  }
  throw new FramesError("ffmpeg wrote no readable JPEG.");
}

/** 83.5 s -> "1:23.50", 2 s -> "0:02". */
function clock(seconds: number): string {
  const rest = (seconds % 60).toFixed(2).replace(/\.00$/, "");
  return `${Math.floor(seconds / 60)}:${rest.padStart(rest.includes(".") ? 5 : 2, "0")}`;
}
