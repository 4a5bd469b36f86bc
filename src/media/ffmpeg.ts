/**
 * ffmpeg and ffprobe as the frame sheet runs them: processes that read one local file, under a deadline,
 * without the server's settings in their environment. The streams are read from ffprobe's JSON: ffmpeg's own
 * text prints metadata first (a title can forge "Video: h264, 64x64").
 */
import { execFile } from "node:child_process";
import path from "node:path";

/** `keep` false: worth trying again on a later result (the network may be back). */
export class FramesError extends Error {
  constructor(
    message: string,
    readonly keep = true,
  ) {
    super(message);
  }
}

type Run = { code: number; stdout: string; stderr: string };

/** ffmpeg and ffprobe may read the one local file and nothing else (and their stdin is closed at once). */
export const FILE_ONLY = ["-protocol_whitelist", "file"];
const SAFE_ARGS = ["-hide_banner", ...FILE_ONLY];
const MAX_OUTPUT_BYTES = 4 * 1024 * 1024;
const TOO_MUCH_OUTPUT = "ffmpeg reported more than 4 MB of errors: the file looks damaged.";

/** Runs `binary` until the deadline; a missing binary rejects with its ENOENT error. */
export function run(binary: string, args: string[], deadline: number): Promise<Run> {
  const timeout = deadline - Date.now();
  const timedOut = new FramesError("ffmpeg did not finish in time.");
  if (timeout <= 0) return Promise.reject(timedOut);
  // Never the service key or tokens: ffmpeg gets the environment without the server's settings.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^GENERATION_|KEY|TOKEN|SECRET|PASSWORD/i.test(name)),
  );
  return new Promise((resolve, reject) => {
    const kill = () => child.kill("SIGKILL");
    const child = execFile(
      binary,
      args,
      { env, timeout, killSignal: "SIGKILL", maxBuffer: MAX_OUTPUT_BYTES, windowsHide: true },
      (error, stdout, stderr) => {
        process.removeListener("exit", kill);
        if (error === null) resolve({ code: 0, stdout, stderr });
        else if (typeof error.code === "number") resolve({ code: error.code, stdout, stderr });
        else if (error.code === "ERR_CHILD_PROCESS_STDIO_MAXBUFFER") reject(new FramesError(TOO_MUCH_OUTPUT));
        else reject(error.signal ? timedOut : error);
      },
    );
    child.stdin?.end();
    process.once("exit", kill);
  });
}

/** ffprobe beside the ffmpeg in use: `ffmpeg` → `ffprobe` on the PATH, `/opt/bin/ffmpeg-7` → `/opt/bin/ffprobe-7`. */
export function ffprobeBeside(ffmpeg: string): string {
  const name = path.basename(ffmpeg);
  const probe = /ffmpeg/i.test(name) ? name.replace(/ffmpeg(?!.*ffmpeg)/i, "ffprobe") : "ffprobe";
  return name === ffmpeg ? probe : path.join(path.dirname(ffmpeg), probe);
}

const working = new Set<string>();

/** A missing binary is found before anything is fetched; one that ran once is not asked again. */
export async function checkBinary(binary: string, deadline: number): Promise<void> {
  if (!working.has(binary) && (await run(binary, ["-version"], deadline)).code === 0) working.add(binary);
}

/**
 * The largest video stream ffprobe finds (cover pictures aside), with the clip's start and length and its
 * keyframes' times (from the packets: nothing is decoded); else refused. A clip with more packets than the
 * output allows (about half an hour at 30 fps) is probed again without them: one pass from the start.
 */
export async function probeVideo(ffprobe: string, file: string, demuxer: string, deadline: number) {
  const entries =
    "stream=index,width,height,duration:stream_disposition=attached_pic:format=start_time,duration";
  const probe = (more = "") => {
    const args = ["-v", "error", "-select_streams", "v", "-of", "json=c=1"];
    return run(
      ffprobe,
      [...SAFE_ARGS, ...args, "-show_entries", `${entries}${more}`, "-f", demuxer, file],
      deadline,
    );
  };
  const found = await probe(":packet=stream_index,pts_time,flags").catch((error: unknown) => {
    if (error instanceof FramesError && error.message === TOO_MUCH_OUTPUT) return probe();
    throw error;
  });
  if (found.code !== 0) throw new FramesError(`ffmpeg could not read it (${lastLine(found)}).`);
  type Stream = { index: number; width?: number; height?: number; duration?: string };
  const {
    streams = [],
    format,
    packets = [],
  } = JSON.parse(found.stdout) as {
    streams?: (Stream & { disposition?: { attached_pic?: number } })[];
    format?: { start_time?: string; duration?: string };
    packets?: { stream_index?: number; pts_time?: string; flags?: string }[];
  };
  const pixels = (stream?: Stream) => (stream?.width ?? 0) * (stream?.height ?? 0);
  let largest: Stream | undefined;
  for (const stream of streams) {
    if (stream.disposition?.attached_pic !== 1 && pixels(stream) > pixels(largest)) largest = stream;
  }
  const duration = Number(largest?.duration) || Number(format?.duration) || 0;
  if (largest === undefined || !(pixels(largest) > 0) || !(duration > 0))
    throw new FramesError("ffmpeg could not read it (no video stream with a size and a length).");
  const { index, width = 0, height = 0 } = largest;
  const keyframes = packets
    .filter((packet) => packet.stream_index === index && packet.flags?.startsWith("K"))
    .map((packet) => Number(packet.pts_time))
    .filter(Number.isFinite)
    .sort((a, b) => a - b);
  return { index, width, height, start: Number(format?.start_time) || 0, duration, keyframes };
}

/** The last line of ffmpeg's errors that says something, without its "[component @ 0x...]" prefix. */
export function lastLine({ stderr }: Run): string {
  const lines = stderr.split("\n").filter((line) => /^[^\s[]|^\[(?!Parsed_)/.test(line));
  return (lines.at(-1) ?? "no output").replace(/^\[[^\]]*\] /, "").slice(0, 200);
}
