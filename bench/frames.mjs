/**
 * Frame sheets of finished videos: what a completed video's result costs with previews on (ffmpeg fetches,
 * decodes and tiles the clip: src/media/frames.ts) against previews off, for the sandbox's own clip (2 s,
 * 320x180) and for two 1080p 10 s testsrc2 clips made here with ffmpeg: x264's default keyframes (one long
 * GOP) and a keyframe every 2 s. The download of the clip alone is timed too: the sheet's cost is the rest.
 * Both servers talk to the sandbox through
 * a small proxy on 127.0.0.1 that rewrites the sandbox's media addresses to its own and, for the 1080p
 * round, serves that clip in place of the sandbox's.
 *
 * Each measured pair is get_status of a video neither server has seen, on and off interleaved, so every
 * on-call makes a fresh sheet; a second get_status of the same video on the on-server shows the cache.
 * Memory: the on-server's RSS after one warm-up sheet, its peak while making sheets (VmHWM, reset after
 * the warm-up), and its RSS 2 s after the last one: ffmpeg runs as its own process, so the server should not grow.
 */
import { execFileSync } from "node:child_process";
import { createReadStream, statSync } from "node:fs";
import { createServer } from "node:http";
import path from "node:path";
import { URL } from "node:url";
import { call, connectServer } from "./mcp.mjs";
import { now, procMemory, quantile, resetPeak, sleep, summary } from "./lib.mjs";

/**
 * Makes a 1080p 10 s clip (H.264, 30 fps) in `dir`; returns its path. x264's defaults put a keyframe every
 * 250 frames (at 0 and 8.33 s: one long GOP); `gop` frames between keyframes as encoded for the web.
 */
export function makeHdClip(dir, gop) {
  const file = path.join(dir, `testsrc2-1080p-10s${gop ? `-gop${gop}` : ""}.mp4`);
  execFileSync("ffmpeg", [
    ...["-hide_banner", "-loglevel", "error", "-nostdin", "-f", "lavfi"],
    ...["-i", "testsrc2=size=1920x1080:rate=30:duration=10", "-c:v", "libx264", "-preset", "veryfast"],
    ...(gop ? ["-g", String(gop)] : []),
    ...["-pix_fmt", "yuv420p", "-movflags", "+faststart", "-y", file],
  ]);
  return file;
}

/** A proxy to `sandboxUrl` (its /api/v1 base) answering its media under its own origin; `clip` replaces videos. */
async function startProxy(sandboxUrl, clip) {
  const target = new URL(sandboxUrl).origin;
  let origin = "";
  const server = createServer(async (req, res) => {
    try {
      if (clip !== undefined && /^\/media\/videos\/[^/]+\.mp4$/.test(req.url ?? "")) {
        res.writeHead(200, { "content-type": "video/mp4", "content-length": statSync(clip).size });
        createReadStream(clip).pipe(res);
        return;
      }
      const chunks = [];
      for await (const chunk of req) chunks.push(chunk);
      const headers = { ...req.headers };
      delete headers.host;
      delete headers["content-length"];
      const answer = await globalThis.fetch(`${target}${req.url}`, {
        method: req.method,
        headers,
        ...(chunks.length > 0 && { body: Buffer.concat(chunks) }),
      });
      const type = answer.headers.get("content-type") ?? "";
      const body = type.includes("json")
        ? Buffer.from((await answer.text()).replaceAll(target, origin))
        : Buffer.from(await answer.arrayBuffer());
      const passed = Object.fromEntries(
        [...answer.headers].filter(
          ([name]) => !["content-length", "content-encoding", "transfer-encoding"].includes(name),
        ),
      );
      res.writeHead(answer.status, passed).end(body);
    } catch (error) {
      res.writeHead(502).end(String(error));
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${server.address().port}`;
  return { baseUrl: `${origin}/api/v1`, close: () => new Promise((resolve) => server.close(resolve)) };
}

const sheetOf = (result) => result.content.find((item) => item.type === "image");

async function timed(client, args) {
  const t0 = now();
  const result = await call(client, "get_status", args, { timeout: 120_000 });
  return { ms: now() - t0, result };
}

/** One clip: `calls` fresh videos, each read once on each server (interleaved), then again on the on-server. */
export async function framesRound(serverEnv, { clip, calls }) {
  const proxy = await startProxy(serverEnv.GENERATION_BASE_URL, clip);
  const env = { ...serverEnv, GENERATION_BASE_URL: proxy.baseUrl };
  const on = await connectServer({ ...env, GENERATION_PREVIEWS: "on" });
  const off = await connectServer({ ...env, GENERATION_PREVIEWS: "off" });
  try {
    const video = async (i) => {
      const made = await call(
        off.client,
        "generate_video",
        { prompt: `frames bench ${i} ${Date.now()}`, duration: 2 },
        { timeout: 120_000 },
      );
      if (made.structuredContent?.status !== "completed") throw new Error(`video ${i} did not complete`);
      return { video_id: made.structuredContent.video_id };
    };
    // What the bar leaves out: fetching the clip itself from the same proxy (the sheet's first step).
    const download = [];
    const sample = await video("download");
    const { structuredContent } = await call(off.client, "get_status", sample);
    for (let i = 0; i < 9; i++) {
      const t0 = now();
      await (await globalThis.fetch(structuredContent.video_url)).arrayBuffer();
      download.push(now() - t0);
    }
    await sleep(500);
    const idle = procMemory(on.pid).rss;
    const warm = await timed(on.client, await video("warm"));
    if (sheetOf(warm.result) === undefined) {
      throw new Error(
        `no sheet: ${JSON.stringify(warm.result.content.filter((item) => item.type === "text"))}`,
      );
    }
    await sleep(500);
    const warmed = procMemory(on.pid).rss;
    const peakReset = resetPeak(on.pid);
    const added = [];
    const cachedAdded = [];
    const onMs = [];
    let sheetBytes = 0;
    let frames;
    for (let i = 0; i < calls; i++) {
      const args = await video(i);
      const first = i % 2 === 0 ? on : off;
      const a = await timed(first.client, args);
      const b = await timed((first === on ? off : on).client, args);
      const [withSheet, without] = first === on ? [a, b] : [b, a];
      const again = await timed(on.client, args);
      onMs.push(withSheet.ms);
      added.push(withSheet.ms - without.ms);
      cachedAdded.push(again.ms - without.ms);
      sheetBytes = Buffer.from(sheetOf(withSheet.result)?.data ?? "", "base64").length;
      frames = withSheet.result.structuredContent?.frames;
    }
    const peak = procMemory(on.pid).hwm;
    await sleep(2000);
    const after = procMemory(on.pid).rss;
    return {
      addedP50Ms: quantile(added, 0.5),
      addedP95Ms: quantile(added, 0.95),
      downloadP50Ms: quantile(download, 0.5),
      cachedAddedP50Ms: quantile(cachedAdded, 0.5),
      onP50Ms: quantile(onMs, 0.5),
      sheetBytes,
      frames,
      idleRss: idle,
      warmedRss: warmed,
      peakGrowth: peakReset ? peak - warmed : undefined,
      afterGrowth: after - warmed,
    };
  } finally {
    await on.close();
    await off.close();
    await proxy.close();
  }
}

/** Both clips, `rounds` fresh server pairs each; figures summarized over the rounds. */
export async function framesBench(serverEnv, { rounds, calls, tmp, log }) {
  const clips = { sandbox: undefined, "1080p-10s": makeHdClip(tmp), "1080p-10s-gop60": makeHdClip(tmp, 60) };
  const byClip = {};
  for (const [name, clip] of Object.entries(clips)) {
    const runs = [];
    for (let r = 0; r < rounds; r++) runs.push(await framesRound(serverEnv, { clip, calls }));
    const pick = (key) => summary(runs.map((run) => run[key]));
    byClip[name] = {
      addedP50Ms: pick("addedP50Ms"),
      addedP95Ms: pick("addedP95Ms"),
      downloadP50Ms: pick("downloadP50Ms"),
      cachedAddedP50Ms: pick("cachedAddedP50Ms"),
      onP50Ms: pick("onP50Ms"),
      sheetBytes: pick("sheetBytes"),
      idleRssBytes: pick("idleRss"),
      warmedRssBytes: pick("warmedRss"),
      peakRssGrowthBytes: pick("peakGrowth"),
      rssGrowthAfterBytes: pick("afterGrowth"),
      frames: runs[0].frames,
    };
    const mb = (bytes) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
    const c = byClip[name];
    log?.(
      `  frames ${name}: added p50 ${c.addedP50Ms.median.toFixed(0)} ms (p95 ${c.addedP95Ms.median.toFixed(0)}), ` +
        `its download alone ${c.downloadP50Ms.median.toFixed(0)} ms, ` +
        `cached ${c.cachedAddedP50Ms.median.toFixed(1)} ms, sheet ${(c.sheetBytes.median / 1000).toFixed(0)} kB ` +
        `${c.frames?.width}x${c.frames?.height}; server RSS ${mb(c.idleRssBytes.median)} idle, ` +
        `${mb(c.warmedRssBytes.median)} warmed, peak +${mb(c.peakRssGrowthBytes.median ?? NaN)}, after +${mb(c.rssGrowthAfterBytes.median)}`,
    );
  }
  return byClip;
}
