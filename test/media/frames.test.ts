/**
 * contactSheet with the real ffmpeg against a real HTTP server on 127.0.0.1: the sheet of the sandbox's clip
 * (its tiles differ and follow the clip's order), hostile videos that each cost only the sheet (among them
 * pictures above the pixel limit that the headers or ffmpeg's text hide), a redirect to a private address,
 * a missing binary, the cache, turns shared fairly between callers, and no temporary file left behind.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import sharp from "sharp";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { contactSheet, type FramesInfo, type SheetOptions } from "../../src/media/frames.js";
import { SAMPLE_VIDEO_MP4 } from "../../src/sandbox/media/sample-video.js";
import { tinyPng } from "../helpers/harness.js";
import { ffmpegWrapper, flatJpeg, hostileVideos } from "../helpers/videos.js";

let server: Server;
let origin: string;
let scratch: string;
const files = new Map<string, Buffer>();
const fetched: string[] = [];
/** TMPDIR before this file set its own. */
let ownTmp: string | undefined;

beforeAll(async () => {
  // os.tmpdir() follows TMPDIR: the sheets' temporary folders land where this file alone looks.
  scratch = mkdtempSync(path.join(tmpdir(), "generation-mcp-frames-test-"));
  ownTmp = process.env["TMPDIR"];
  process.env["TMPDIR"] = path.join(scratch, "tmp");
  mkdirSync(path.join(scratch, "tmp"));
  const huge = path.join(scratch, "huge.mp4");
  execFileSync("ffmpeg", [
    ...["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "color=c=red:s=8000x8000:d=0.04"],
    ...["-frames:v", "1", "-c:v", "libx264", "-preset", "ultrafast", "-y", huge],
  ]);
  for (const file of Object.values(hostileVideos(path.join(scratch, "hostile"))))
    files.set(`/${path.basename(file)}`, readFileSync(file));
  // Every 5th frame of 24 (12 fps) a keyframe: at 0, 0.42, 0.83, 1.25 and 1.67 s (no B-frames, which the
  // sheet skips: each frame can be a tile).
  const keyframes = path.join(scratch, "keyframes.mp4");
  execFileSync("ffmpeg", [
    ...["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x64:rate=12:duration=2"],
    ...["-c:v", "libx264", "-bf", "0", "-g", "5", "-keyint_min", "5", "-sc_threshold", "0", "-y", keyframes],
  ]);
  files.set("/keyframes.mp4", readFileSync(keyframes));
  // 24 MJPEG frames (each a keyframe) at 12 fps; the third, at 0.17 s, is 16000x16000: a frame no tile shows.
  const between = path.join(scratch, "between");
  mkdirSync(between);
  for (let i = 0; i < 24; i++)
    writeFileSync(
      path.join(between, `${String(i).padStart(2, "0")}.jpg`),
      flatJpeg(...((i === 2 ? [16_000, 16_000] : [64, 64]) as [number, number])),
    );
  execFileSync("ffmpeg", [
    ...["-hide_banner", "-loglevel", "error", "-f", "image2", "-framerate", "12"],
    ...["-i", path.join(between, "%02d.jpg"), "-c", "copy", "-y", path.join(scratch, "between.mp4")],
  ]);
  files.set("/between.mp4", readFileSync(path.join(scratch, "between.mp4")));
  // One frame at 0 s of a 1 s clip: only the first tile's time has a frame at or after it.
  const oneFrame = path.join(scratch, "one-frame.mp4");
  writeFileSync(path.join(scratch, "one-frame.jpg"), flatJpeg(64, 64));
  execFileSync("ffmpeg", [
    ...["-hide_banner", "-loglevel", "error", "-f", "image2", "-framerate", "1"],
    ...["-i", path.join(scratch, "one-frame.jpg"), "-c", "copy", "-y", oneFrame],
  ]);
  files.set("/one-frame.mp4", readFileSync(oneFrame));
  files.set("/clip.mp4", SAMPLE_VIDEO_MP4);
  files.set("/again.mp4", SAMPLE_VIDEO_MP4);
  files.set("/truncated.mp4", SAMPLE_VIDEO_MP4.subarray(0, 10_000));
  files.set("/huge.mp4", readFileSync(huge));
  files.set("/image.png", tinyPng(64, 64));
  files.set("/noise.bin", randomBytes(50_000));
  // An ftyp box, then noise: sniffed as MP4, so ffmpeg itself has to refuse it.
  files.set("/noise.mp4", Buffer.concat([SAMPLE_VIDEO_MP4.subarray(0, 32), randomBytes(50_000)]));
  server = createServer((req, res) => {
    fetched.push(req.url ?? "");
    if (req.url === "/redirect.mp4") {
      res.writeHead(302, { location: "http://10.1.2.3/video.mp4" }).end();
      return;
    }
    const body = files.get(req.url ?? "");
    res.writeHead(body ? 200 : 404, { "content-type": "video/mp4" }).end(body ?? "missing");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  // The worker's environment as it was: a file run after this one in the same worker looks there.
  if (ownTmp === undefined) delete process.env["TMPDIR"];
  else process.env["TMPDIR"] = ownTmp;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(scratch, { recursive: true, force: true });
});

afterEach(() => {
  expect(readdirSync(path.join(scratch, "tmp"))).toEqual([]);
});

const options = (extra: Partial<SheetOptions> = {}): SheetOptions => ({
  maxSide: 1024,
  allowHosts: ["127.0.0.1"],
  signal: new AbortController().signal,
  ...extra,
});

/** The clip's own frames at `width` x `height`, as raw RGB, one buffer per frame. */
function clipFrames(width: number, height: number): Buffer[] {
  const input = path.join(scratch, "clip.mp4");
  writeFileSync(input, SAMPLE_VIDEO_MP4);
  const raw = execFileSync(
    "ffmpeg",
    [
      ...["-hide_banner", "-loglevel", "error", "-i", input, "-vf", `scale=${width}:${height}`],
      ...["-f", "rawvideo", "-pix_fmt", "rgb24", "pipe:1"],
    ],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  const size = width * height * 3;
  return Array.from({ length: raw.length / size }, (_, index) =>
    raw.subarray(index * size, (index + 1) * size),
  );
}

/** An ffmpeg whose errors go to `log` as well as to the server (which reads the tiles' times from them). */
function errorsLogged(name: string): { ffmpegPath: string; log: string } {
  const log = path.join(scratch, `${name}.log`);
  const script = `ffmpeg "$@" 2> ${log}.$$\nstatus=$?\ncat ${log}.$$ >&2\ncat ${log}.$$ >> ${log}\nrm ${log}.$$\nexit $status`;
  return { ffmpegPath: ffmpegWrapper(path.join(scratch, `${name}-bin`), script), log };
}

const distance = (a: Buffer, b: Buffer) => {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += Math.abs((a[i] ?? 0) - (b[i] ?? 0));
  return sum / a.length;
};

describe("contactSheet", () => {
  it("tiles six frames of the sandbox clip in order, as a JPEG of at most 1024 px and 200 kB", async () => {
    const sheet = await contactSheet(`${origin}/clip.mp4`, options());
    if (!("image" in sheet)) throw new Error(sheet.note);
    const jpeg = Buffer.from(sheet.image.data, "base64");
    expect(sheet.image.mimeType).toBe("image/jpeg");
    expect(jpeg.length).toBeLessThan(200_000);
    const { format, width = 0, height = 0 } = await sharp(jpeg).metadata();
    expect(format).toBe("jpeg");
    expect(Math.max(width, height)).toBeLessThanOrEqual(1024);
    expect(sheet.frames).toEqual<FramesInfo>({
      frames: 6,
      layout: "3x2",
      times_s: [0, 0.33, 0.67, 1, 1.33, 1.67],
      duration_s: 2,
      width,
      height,
    });
    expect(sheet.text).toBe(
      "Frames of the video: 6 frames at 0:00, 0:00.33, 0:00.67, 0:01, 0:01.33, 0:01.67 (left to right, top to bottom).",
    );

    // Each tile is closest to the clip's own frame at its time: the tiles differ and follow the clip.
    const [tileWidth, tileHeight] = [width / 3, height / 2];
    const frames = clipFrames(tileWidth, tileHeight);
    expect(frames).toHaveLength(24);
    const tiles = await Promise.all(
      Array.from({ length: 6 }, (_, index) =>
        sharp(jpeg)
          .extract({
            left: (index % 3) * tileWidth,
            top: Math.floor(index / 3) * tileHeight,
            width: tileWidth,
            height: tileHeight,
          })
          .removeAlpha()
          .raw()
          .toBuffer(),
      ),
    );
    const closest = tiles.map((tile) => {
      const distances = frames.map((frame) => distance(tile, frame));
      return distances.indexOf(Math.min(...distances));
    });
    expect(closest).toEqual([0, 4, 8, 12, 16, 20]);
    expect(new Set(tiles.map((tile) => tile.toString("base64"))).size).toBe(6);
  });

  it("shows the keyframe of each sixth of the clip where there is one, else the sixth's first frame", async () => {
    const sheet = await contactSheet(`${origin}/keyframes.mp4`, options());
    // Keyframes at 0, 0.42, 0.83, 1.25 (and 1.67) s; the sixth from 1.33 s has none: its first frame.
    expect(sheet).toMatchObject({ frames: { frames: 6, times_s: [0, 0.42, 0.83, 1.25, 1.33, 1.67] } });
  });

  it("seeks to each tile's keyframe: a frame no tile shows is never decoded", async () => {
    const { ffmpegPath, log } = errorsLogged("between");
    const sheet = await contactSheet(`${origin}/between.mp4`, options({ ffmpegPath }));
    expect(sheet).toMatchObject({ frames: { frames: 6, times_s: [0, 0.33, 0.67, 1, 1.33, 1.67] } });
    // Decoding from the start up to the last tile would have met the 16000x16000 frame at 0.17 s.
    expect(readFileSync(log, "utf8")).toMatch(/Parsed_showinfo/);
    expect(readFileSync(log, "utf8")).not.toMatch(/exceeds specified max pixel count/);
  });

  it("decodes each video once: a later result of it reuses the sheet", async () => {
    const first = await contactSheet(`${origin}/again.mp4`, options());
    const mark = fetched.length;
    const again = await Promise.all([1, 2].map(() => contactSheet(`${origin}/again.mp4`, options())));
    expect(again).toEqual([first, first]);
    expect(fetched.slice(mark)).toEqual([]);
  });

  it.each([
    [
      "/truncated.mp4",
      /^No frame preview of the video: the video looks damaged or cut short: only \d of the 6 frames could be read\.$/,
    ],
    [
      "/one-frame.mp4",
      /^No frame preview of the video: the video looks damaged or cut short: only 1 of the 4 frames could be read\.$/,
    ],
    [
      "/huge.mp4",
      /^No frame preview of the video: the video claims 8000x8000 pixels, above the 50-megapixel preview limit, so it was not decoded\.$/,
    ],
    ["/image.png", /^No frame preview of the video: the file is not an MP4, QuickTime or WebM video\.$/],
    ["/noise.bin", /^No frame preview of the video: the file is not an MP4, QuickTime or WebM video\.$/],
    ["/noise.mp4", /^No frame preview of the video: ffmpeg could not read it \(.+\)\.$/],
    [
      "/redirect.mp4",
      /^No frame preview of the video: Refused to fetch http:\/\/10\.1\.2\.3\/video\.mp4 .*private/,
    ],
  ])("costs only the sheet for %s, with a note that says why", async (file, note) => {
    const sheet = await contactSheet(`${origin}${file}`, options());
    expect(sheet).toEqual({ note: expect.stringMatching(note) });
  });

  it.each(["forged", "two-streams"])(
    "refuses the %s video from the largest stream ffprobe finds, and decodes nothing of it",
    async (name) => {
      const log = path.join(scratch, `${name}.log`);
      const ffmpegPath = ffmpegWrapper(path.join(scratch, name), `echo "$*" >> ${log}\nexec ffmpeg "$@"`);
      const sheet = await contactSheet(`${origin}/${name}.mp4`, options({ ffmpegPath }));
      expect(sheet).toEqual({
        note: "No frame preview of the video: the video claims 16000x16000 pixels, above the 50-megapixel preview limit, so it was not decoded.",
      });
      // ffmpeg was only asked for its version: no decode of any stream ran.
      expect(readFileSync(log, "utf8")).toBe("-version\n");
    },
  );

  it("decodes no frame above 50 megapixels, even one no header announces", async () => {
    const { ffmpegPath, log } = errorsLogged("growing");
    const sheet = await contactSheet(`${origin}/growing.mp4`, options({ ffmpegPath }));
    // The sheet of the 64x64 frames; the decoder refused the one of 16000x16000 (at 1 s, a keyframe as every
    // MJPEG frame) before allocating it, and its tile is the next frame.
    expect(sheet).toMatchObject({ frames: { frames: 6, times_s: [0, 0.33, 0.67, 1.17, 1.33, 1.67] } });
    expect(readFileSync(log, "utf8")).toMatch(/Picture size 16000x16000 exceeds specified max pixel count/);
  });

  it("makes the sheet of a clip with more packets than ffprobe's output may hold, in one pass", async () => {
    // An ffprobe whose packet listing floods (as half an hour of frames would); without packets, the real one.
    const dir = path.join(scratch, "many-packets");
    mkdirSync(dir);
    writeFileSync(path.join(dir, "ffmpeg"), '#!/bin/sh\nexec ffmpeg "$@"\n', { mode: 0o755 });
    const flood = "head -c 5000000 /dev/zero | tr '\\0' x";
    writeFileSync(
      path.join(dir, "ffprobe"),
      `#!/bin/sh\ncase "$*" in *packet=*) ${flood}; exit 0;; esac\nexec ffprobe "$@"\n`,
      { mode: 0o755 },
    );
    const sheet = await contactSheet(
      `${origin}/keyframes.mp4`,
      options({ ffmpegPath: path.join(dir, "ffmpeg") }),
    );
    // No keyframes known: each sixth's first frame (not the keyframes at 0.42, 0.83 and 1.25 s).
    expect(sheet).toMatchObject({ frames: { frames: 6, times_s: [0, 0.33, 0.67, 1, 1.33, 1.67] } });
  });

  it("says so when no ffprobe is beside the ffmpeg it was given", async () => {
    const alone = path.join(scratch, "alone", "ffmpeg");
    mkdirSync(path.dirname(alone));
    writeFileSync(alone, '#!/bin/sh\nexec ffmpeg "$@"\n', { mode: 0o755 });
    const sheet = await contactSheet(`${origin}/clip.mp4`, options({ ffmpegPath: alone }));
    expect(sheet).toEqual({
      note: expect.stringMatching(
        /^No frame preview: ffprobe was not found at \S+\/alone\/ffprobe, so .*GENERATION_FFMPEG_PATH/,
      ),
    });
  });

  it("hands decodes round the callers: another caller's many videos hold a sheet back by one decode", async () => {
    // Caller A's decodes take 2 s more each; B's video is like theirs.
    const decoding = path.join(scratch, "decoding.log");
    const slow = ffmpegWrapper(
      path.join(scratch, "slow-decodes"),
      `case "$*" in *tile=*) echo "$$" >> ${decoding}; sleep 2;; esac\nexec ffmpeg "$@"`,
    );
    for (const name of ["a-0", "a-1", "a-2", "a-3", "b"]) files.set(`/turns-${name}.mp4`, SAMPLE_VIDEO_MP4);
    const done: string[] = [];
    const sheetOf = (name: string, extra: Partial<SheetOptions>) =>
      contactSheet(`${origin}/turns-${name}.mp4`, options(extra)).then((sheet) => {
        done.push(name);
        return sheet;
      });
    const a = [0, 1, 2, 3].map((i) => sheetOf(`a-${i}`, { ffmpegPath: slow, caller: "A" }));
    // B asks once two of A's videos hold both decodes.
    for (let i = 0; i < 200 && !existsSync(decoding); i++) await new Promise((r) => setTimeout(r, 25));
    const b = await sheetOf("b", { caller: "B" });
    expect(b).toHaveProperty("image");
    expect(done.filter((name) => name.startsWith("a")).length).toBeLessThanOrEqual(2);
    for (const sheet of await Promise.all(a)) expect(sheet).toHaveProperty("image");
  }, 30_000);

  it("runs two ffmpeg at a time for a burst of finished videos, and tells the ones past the queue to come back", async () => {
    // A wrapper that logs each run's start and end around the real ffmpeg.
    const log = path.join(scratch, "runs.log");
    const wrapper = ffmpegWrapper(
      path.join(scratch, "logged"),
      `echo "start $$" >> ${log}\nffmpeg "$@"\nstatus=$?\necho "end $$" >> ${log}\nexit $status`,
    );
    for (let i = 0; i < 14; i++) files.set(`/burst-${i}.mp4`, SAMPLE_VIDEO_MP4);
    const sheets = await Promise.all(
      Array.from({ length: 14 }, (_, i) =>
        contactSheet(`${origin}/burst-${i}.mp4`, options({ ffmpegPath: wrapper })),
      ),
    );
    // Two running and eight waiting: the other four are told, without a fetch or an ffmpeg run.
    expect(sheets.filter((sheet) => "image" in sheet)).toHaveLength(10);
    const told = sheets.filter((sheet) => "note" in sheet);
    expect(told).toEqual(Array(4).fill({ note: expect.stringMatching(/busy.*get_status/) }));
    let running = 0;
    let most = 0;
    for (const line of readFileSync(log, "utf8").trim().split("\n")) {
      running += line.startsWith("start") ? 1 : -1;
      most = Math.max(most, running);
    }
    expect(most).toBe(2);
    // Told to come back, not remembered: the next result of such a video gets its sheet.
    const later = await contactSheet(`${origin}/burst-13.mp4`, options({ ffmpegPath: wrapper }));
    expect(later).toHaveProperty("image");
  }, 60_000);

  it("counts the wait for a turn in the call's deadline: a call still in line then is told to come back", async () => {
    // Two slow runs hold both turns past the deadline; the third call never gets one.
    const slow = ffmpegWrapper(path.join(scratch, "slow"), 'sleep 3\nexec ffmpeg "$@"');
    for (let i = 0; i < 3; i++) files.set(`/queued-${i}.mp4`, SAMPLE_VIDEO_MP4);
    const sheets = await Promise.all(
      [0, 1, 2].map((i) =>
        contactSheet(`${origin}/queued-${i}.mp4`, options({ ffmpegPath: slow, deadlineMs: 1500 })),
      ),
    );
    expect(sheets[2]).toEqual({ note: expect.stringMatching(/busy.*get_status/) });
    // The two that had a turn ran out of time in ffmpeg, not in line.
    for (const sheet of sheets.slice(0, 2))
      expect(sheet).toEqual({ note: expect.not.stringMatching(/busy/) });
  }, 20_000);

  it("gives a caller's turn back whatever fails, even before the video is fetched", async () => {
    // No folder for temporary files: each sheet fails at once; a turn kept by each would leave none after two.
    const tmp = process.env["TMPDIR"];
    process.env["TMPDIR"] = path.join(scratch, "missing");
    try {
      for (let i = 0; i < 3; i++) {
        const sheet = await contactSheet(`${origin}/clip.mp4`, options({ deadlineMs: 2000, caller: "T" }));
        expect(sheet).toEqual({
          note: expect.stringMatching(/^No frame preview of the video: ENOENT.*mkdtemp/),
        });
      }
    } finally {
      process.env["TMPDIR"] = tmp;
    }
  });

  it("says in words that the file looks damaged when ffmpeg floods its error output", async () => {
    const flooding = path.join(scratch, "ffmpeg-flooding");
    writeFileSync(flooding, "#!/bin/sh\nhead -c 5000000 /dev/zero | tr '\\0' x >&2\nexit 1\n", {
      mode: 0o755,
    });
    const sheet = await contactSheet(`${origin}/flood.mp4`, options({ ffmpegPath: flooding }));
    expect(sheet).toEqual({
      note: "No frame preview of the video: ffmpeg reported more than 4 MB of errors: the file looks damaged.",
    });
  });

  it("says how to get frame previews when the ffmpeg binary is missing", async () => {
    const sheet = await contactSheet(`${origin}/clip.mp4`, options({ ffmpegPath: "/nonexistent/ffmpeg" }));
    expect(sheet).toEqual({
      note: expect.stringMatching(
        /^No frame preview: ffmpeg was not found.*apt install ffmpeg.*GENERATION_FFMPEG_PATH/,
      ),
    });
  });
});
