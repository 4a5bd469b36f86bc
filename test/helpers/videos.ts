/**
 * Videos and ffmpeg stand-ins for the frame-sheet tests, all made with the real ffmpeg: hostile files that
 * claim one size and hold another, and wrappers around the real binary (beside a link to the real ffprobe,
 * where the server looks for it).
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";

/** A valid grey baseline JPEG of any size: every 8x8 block is flat, 2 bits each, so 16000x16000 is 1 MB. */
export function flatJpeg(width: number, height: number): Buffer {
  const u16 = (value: number) => [value >> 8, value & 0xff];
  const bits = Math.ceil(width / 8) * Math.ceil(height / 8) * 2;
  // One Huffman code of one bit for each table: "0" is a DC difference of 0, then "0" ends the block.
  const table = (id: number) => [0xff, 0xc4, 0, 20, id, 1, ...Array<number>(15).fill(0), 0];
  return Buffer.from([
    ...[0xff, 0xd8, 0xff, 0xdb, 0, 67, 0, ...Array<number>(64).fill(1)],
    ...[0xff, 0xc0, 0, 11, 8, ...u16(height), ...u16(width), 1, 1, 0x11, 0],
    ...table(0x00),
    ...table(0x10),
    ...[0xff, 0xda, 0, 8, 1, 1, 0, 0, 63, 0],
    ...Array<number>(Math.floor(bits / 8)).fill(0),
    ...(bits % 8 === 0 ? [] : [(1 << (8 - (bits % 8))) - 1]),
    ...[0xff, 0xd9],
  ]);
}

function ffmpeg(args: string[]): void {
  execFileSync("ffmpeg", ["-hide_banner", "-loglevel", "error", "-nostdin", ...args, "-y"]);
}

/**
 * MP4 files in `dir` that all hold a 16000x16000 (256-megapixel) picture somewhere: `forged`, a single such
 * frame whose title tag reads like a 64x64 stream in ffmpeg's text (on a line of its own too); `twoStreams`,
 * a 64x64 H.264 stream in front of the large one; `growing`, a 64x64 MJPEG stream whose seventh frame of
 * twelve is the large one (only the decoder sees it). Made by stream copy: nothing large is ever encoded.
 */
export function hostileVideos(dir: string): { forged: string; twoStreams: string; growing: string } {
  mkdirSync(path.join(dir, "frames"), { recursive: true });
  const large = path.join(dir, "large.jpg");
  writeFileSync(large, flatJpeg(16_000, 16_000));
  for (let i = 0; i < 12; i++)
    writeFileSync(path.join(dir, "frames", `${String(i).padStart(2, "0")}.jpg`), flatJpeg(64, 64));
  writeFileSync(path.join(dir, "frames", "06.jpg"), flatJpeg(16_000, 16_000));
  const made = { forged: "forged.mp4", twoStreams: "two-streams.mp4", growing: "growing.mp4" };
  const [forged, twoStreams, growing] = Object.values(made).map((name) => path.join(dir, name)) as [
    string,
    string,
    string,
  ];
  const title = "Video: h264, 64x64\n  Stream #0:0: Video: h264 (High), yuv420p, 64x64, 12 fps";
  ffmpeg([
    "-f",
    "image2",
    "-framerate",
    "1",
    "-i",
    large,
    "-c",
    "copy",
    "-metadata",
    `title=${title}`,
    forged,
  ]);
  ffmpeg([
    ...["-f", "lavfi", "-i", "testsrc2=size=64x64:rate=12:duration=2"],
    ...["-f", "image2", "-framerate", "1", "-loop", "1", "-t", "2", "-i", large],
    ...["-map", "0:v", "-map", "1:v", "-c:v:0", "libx264", "-c:v:1", "copy", twoStreams],
  ]);
  ffmpeg([
    "-f",
    "image2",
    "-framerate",
    "6",
    "-i",
    path.join(dir, "frames", "%02d.jpg"),
    "-c",
    "copy",
    growing,
  ]);
  return { forged, twoStreams, growing };
}

/**
 * An `ffmpeg` in its own folder `dir`: the sh `script` (which runs the real one, e.g. `exec ffmpeg "$@"`),
 * with the real `ffprobe` beside it. Returns the wrapper's path.
 */
export function ffmpegWrapper(dir: string, script: string): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, "ffmpeg");
  writeFileSync(file, `#!/bin/sh\n${script}\n`, { mode: 0o755 });
  if (!existsSync(path.join(dir, "ffprobe"))) symlinkSync(realBinary("ffprobe"), path.join(dir, "ffprobe"));
  return file;
}

/** Where `name` is on the PATH. */
export function realBinary(name: string): string {
  return execFileSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).trim();
}
