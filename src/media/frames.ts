/**
 * A contact sheet of a finished video's frames, so the model can see what it made: frames spread over the
 * clip, each with its timestamp, tiled into one JPEG. The video is fetched under the download guards into a
 * private temporary folder, always removed; ffmpeg decodes exactly the stream ffprobe checked (ffmpeg.ts).
 * Whatever goes wrong costs the sheet only: a note. Sheets are made once per video URL and kept in a small
 * LRU; one the call cannot wait for goes on being made for the next result.
 */
import { rmSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { ImageContent } from "@modelcontextprotocol/server";

import { abortable } from "../api/sleep.js";
import type { Config } from "../config/index.js";
import { downloadMedia } from "../files/download.js";
import { FILE_ONLY, FramesError, checkBinary, ffprobeBeside, lastLine, probeVideo, run } from "./ffmpeg.js";
import { MAX_INPUT_PIXELS } from "./preview-worker.js";
import { reasonOf, type PreviewOptions } from "./previews.js";
import { tilePlan } from "./tile-plan.js";
import { FairTurns } from "./turns.js";

/** The largest video fetched for a sheet: a 10 s 4k clip is some 50-150 MB. */
export const MAX_VIDEO_BYTES = 200 * 1024 * 1024;
/** The wait for a turn, the fetch and the decode together; a later result of the same video reuses the outcome. */
export const FRAMES_DEADLINE_MS = 30_000;
/** How long one decode may hold its turn: what another caller's sheet waits at most for each of yours. */
const DECODE_MS = 10_000;
/** A sheet above this is made again at a lower quality: it shares the result's 1 MB with everything else. */
export const SHEET_MAX_BYTES = 200_000;
const CACHED_SHEETS = 16;
const VIDEO_DEMUXERS: Readonly<Record<string, string>> = { mp4: "mov", mov: "mov", webm: "matroska" };
const BUSY = "the server is busy making other frame sheets; get_status of this video shows it later.";
const NOT_YET =
  "No frame preview yet: the sheet of the video's frames was not ready when this call had to answer; it is " +
  "still being made, and get_status of this video shows it.";

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
  /** Epoch ms when the call must answer: the sheet not made by then is a note, and goes on being made. */
  answerBy?: number | undefined;
  /** Who asks (ServerDeps.callerId): each caller has turns of its own. */
  caller?: string | undefined;
}

const sheets = new Map<string, Promise<Sheet>>();

/**
 * Each caller fetches at most 2 videos at once, 8 more waiting (a burst must not start an ffmpeg each); the 2
 * decodes at a time go round the callers, so another's videos delay a sheet by one decode of theirs at most.
 */
const fetches = new FairTurns({ slots: Infinity, perCaller: 2, waitingPerCaller: 8 });
const decodes = new FairTurns({ slots: 2, perCaller: 2, waitingPerCaller: Infinity });

/** The sheet of the video at `url`, or a note saying why there is none. */
export async function contactSheet(url: string, options: SheetOptions): Promise<Sheet> {
  const maxSide = Math.min(1024, options.maxSide);
  const key = `${options.ffmpegPath ?? ""} ${maxSide} ${url}`;
  let made = sheets.get(key);
  sheets.delete(key);
  const deadline = Date.now() + (options.deadlineMs ?? FRAMES_DEADLINE_MS);
  made ??= makeSheet(url, { ...options, maxSide }, deadline).catch((error: unknown) => {
    if (!(error instanceof FramesError && error.keep)) sheets.delete(key);
    return { note: noteFor(error) };
  });
  sheets.set(key, made);
  while (sheets.size > CACHED_SHEETS) sheets.delete(sheets.keys().next().value ?? "");
  const { answerBy } = options;
  return abortable(options.signal, (resolve, reject) => {
    const late =
      answerBy === undefined ? undefined : setTimeout(resolve, answerBy - Date.now(), { note: NOT_YET });
    void made.then(resolve, reject).finally(() => clearTimeout(late));
  });
}

function noteFor(error: unknown): string {
  const { code, syscall = "", path: binary = "ffmpeg" } = error as Partial<Record<string, string>>;
  if (code === "ENOENT" && syscall.startsWith("spawn")) {
    const name = path.basename(binary);
    return (
      `No frame preview: ${name} was not found${name === binary ? "" : ` at ${binary}`}, so the model cannot ` +
      "see the video's frames. Install ffmpeg, which brings ffprobe (apt install ffmpeg, brew install ffmpeg " +
      "or winget install ffmpeg), or set GENERATION_FFMPEG_PATH to its binary, with ffprobe beside it; " +
      "GENERATION_PREVIEWS=off leaves this note out."
    );
  }
  return `No frame preview of the video: ${reasonOf(error)}`;
}

async function makeSheet(url: string, options: SheetOptions, deadline: number): Promise<Sheet> {
  const caller = options.caller ?? "";
  if (!(await fetches.take(caller, deadline))) throw new FramesError(BUSY, false);
  const dir = await mkdtemp(path.join(tmpdir(), "generation-mcp-frames-")).catch((error: unknown) => {
    fetches.give(caller);
    throw error;
  });
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  // process.exit() skips finally blocks: the folder and a running ffmpeg go with the process all the same.
  process.once("exit", cleanup);
  try {
    const ffmpeg = options.ffmpegPath ?? "ffmpeg";
    const ffprobe = ffprobeBeside(ffmpeg);
    await checkBinary(ffmpeg, deadline);
    await checkBinary(ffprobe, deadline);
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
    const stream = await probeVideo(ffprobe, video.path, demuxer, deadline);
    const { width, height } = stream;
    if (width * height > MAX_INPUT_PIXELS) {
      throw new FramesError(
        `the video claims ${width}x${height} pixels, above the ${MAX_INPUT_PIXELS / 1e6}-megapixel preview limit, so it was not decoded.`,
      );
    }
    if (!(await decodes.take(caller, deadline))) throw new FramesError(BUSY, false);
    try {
      const decodeBy = Math.min(deadline, Date.now() + DECODE_MS);
      return await decode(video.path, { demuxer, ...stream }, options, decodeBy);
    } finally {
      decodes.give(caller);
    }
  } finally {
    process.removeListener("exit", cleanup);
    await rm(dir, { recursive: true, force: true });
    fetches.give(caller);
  }
}

/**
 * Tiles the frames of the stream that was checked, and no other, refusing any frame above the pixel limit:
 * one ffmpeg run, one input per pass of the tile plan (tile-plan.ts), each seeking to its keyframe and ending
 * one frame after its last tile. B-frames (about half the decoding) and the deblocking filter (some 10%) are
 * skipped: a tile is a thumbnail.
 */
async function decode(
  file: string,
  stream: { demuxer: string; index: number; start: number; duration: number; keyframes: number[] },
  options: SheetOptions,
  deadline: number,
): Promise<Sheet> {
  const { demuxer, index, start, duration, keyframes } = stream;
  const [columns, rows] = duration < 1.5 ? [2, 2] : [3, 2];
  const count = columns * rows;
  const sheetFile = path.join(path.dirname(file), "sheet.jpg");
  const passes = tilePlan(start, duration, keyframes, count);
  const inputs = passes.flatMap(({ from = start, keyframesOnly }) => [
    ...[...FILE_ONLY, "-max_pixels", String(MAX_INPUT_PIXELS), "-skip_loop_filter", "all"],
    ...["-skip_frame", keyframesOnly ? "nokey" : "bidir"],
    // Just past the keyframe: the demuxer lands on it, and no frame from there on is dropped.
    ...(from > start ? ["-noaccurate_seek", "-ss", (from - start + 0.001).toFixed(3)] : []),
    ...["-f", demuxer, "-i", file],
  ]);
  const scale = `scale=${Math.floor(options.maxSide / columns)}:${Math.floor(options.maxSide / rows)}:force_original_aspect_ratio=decrease:force_divisible_by=2`;
  const stamp =
    "drawtext=text='%{pts\\:hms}':x=4:y=h-th-4:fontsize=14:fontcolor=white:box=1:boxcolor=black@0.6";
  const graph = (withStamp: boolean) => {
    const branches = passes.map(({ times }, pass) => {
      const picks = times.map((time, n) => `gte(t+0.001\\,${time.toFixed(6)})*eq(selected_n\\,${n})`);
      // The frame after the last tile, cut by trim: its end tells ffmpeg that this pass needs nothing more.
      const select = `select='${[...picks, `gte(selected_n\\,${times.length})`].join("+")}'`;
      const filters = [select, `trim=end_frame=${times.length}`, "showinfo", scale];
      return `[${pass}:${index}]${[...filters, ...(withStamp ? [stamp] : [])].join(",")}[pass${pass}]`;
    });
    // Tiles in the order of their times (-copyts: each pass keeps the clip's own).
    const ends = passes.map((_, pass) => `[pass${pass}]`).join("");
    return `${branches.join(";")};${ends}interleave=nb_inputs=${passes.length},tile=${columns}x${rows}`;
  };
  const encode = async (quality: number, withStamp: boolean) => {
    const output = ["-filter_complex", graph(withStamp), "-q:v", String(quality), "-frames:v", "1"];
    const args = ["-hide_banner", "-nostdin", "-nostats", "-copyts", ...inputs, ...output, "-update", "1"];
    const ran = await run(options.ffmpegPath ?? "ffmpeg", [...args, "-y", sheetFile], deadline);
    // No font (no fontconfig) or a build without drawtext: the sheet without timestamps drawn on.
    if (ran.code !== 0 && withStamp && /drawtext|font/i.test(ran.stderr)) return encode(quality, false);
    if (ran.code !== 0) throw new FramesError(`ffmpeg could not decode it (${lastLine(ran)}).`);
    // ffmpeg decodes the passes in its own order: the lines come in any order, the tiles in the sheet's.
    const times = [...ran.stderr.matchAll(/Parsed_showinfo.*? pts_time:(-?[\d.]+)/g)]
      .map((m) => Math.round((Number(m[1]) - start) * 100) / 100)
      .sort((a, b) => a - b);
    // Checked before the file is read: with no frame at all, ffmpeg writes none.
    if (times.length < count) {
      throw new FramesError(
        `the video looks damaged or cut short: only ${times.length} of the ${count} frames could be read.`,
      );
    }
    return { times, jpeg: await readFile(sheetFile), withStamp };
  };
  let made = await encode(5, true);
  if (made.jpeg.length > SHEET_MAX_BYTES) made = await encode(15, made.withStamp);
  if (made.jpeg.length > SHEET_MAX_BYTES) throw new FramesError("the sheet stayed too large.");
  const { times } = made;
  const layout = `${columns}x${rows}` as FramesInfo["layout"];
  const duration_s = Math.round(duration * 100) / 100;
  return {
    image: { type: "image", data: made.jpeg.toString("base64"), mimeType: "image/jpeg" },
    frames: { frames: times.length, layout, times_s: times, duration_s, ...jpegSize(made.jpeg) },
    text: `Frames of the video: ${times.length} frames at ${times.map(clock).join(", ")} (left to right, top to bottom).`,
  };
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
