/**
 * Image previews: what `generate_image` costs with previews on against the same call with them off, at the
 * sandbox's 1k, 2k and 4k sizes (PNG, 1:1). Two servers (GENERATION_PREVIEWS=on / off) against one sandbox,
 * called in interleaved pairs with the same prompt, so the sandbox renders each image once (its cache is
 * keyed by content) and only the preview (fetch, decode, scale, encode) separates the two.
 *
 * Memory, per size, on a fresh previews-on server. The server decodes in a worker process (src/media/
 * previews.ts) that it stops after WORKER_IDLE_MS without a preview, so both are measured: the
 * server's RSS idle after start, after the warm-up and its peak (VmHWM, reset after the warm-up); the
 * worker's peak; and the server plus its children once the worker has had time to stop (back to baseline?).
 */
import { readFileSync } from "node:fs";
import { call, connectServer } from "./mcp.mjs";
import { now, procMemory, quantile, resetPeak, sleep, summary } from "./lib.mjs";

/** The README's previews table is formatted in bench/report.mjs (it runs without a build). */
export { previewRows } from "./report.mjs";

/** src/media/previews.ts WORKER_IDLE_MS, plus a margin. */
const WORKER_STOP_WAIT_MS = 32_000;

function childPids(pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8")
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/** RSS of a process and all its children. */
function treeRss(pid) {
  return [pid, ...childPids(pid)].reduce((sum, each) => sum + (procMemory(each).rss ?? 0), 0);
}

export const PREVIEW_SIZES = ["1k", "2k", "4k"];

async function timedCall(client, args) {
  const t0 = now();
  const result = await call(client, "generate_image", args, { timeout: 120_000 });
  return { ms: now() - t0, result };
}

/** One size: `calls` interleaved pairs (on, off alternating which goes first). */
export async function previewsRound(serverEnv, { resolution, calls, waitForWorkerStop = false }) {
  const on = await connectServer({ ...serverEnv, GENERATION_PREVIEWS: "on" });
  const off = await connectServer({ ...serverEnv, GENERATION_PREVIEWS: "off" });
  try {
    await sleep(500);
    const idle = procMemory(on.pid).rss;
    const args = { prompt: `previews bench ${resolution}`, resolution, aspect_ratio: "1:1" };
    // Warm-up: renders the image in the sandbox, loads sharp in the on-server, JITs both paths.
    for (let i = 0; i < 3; i++) {
      const warm = await timedCall(on.client, args);
      if (!warm.result.content.some((item) => item.type === "image")) {
        throw new Error(`no preview at ${resolution}: ${JSON.stringify(warm.result.content.slice(1))}`);
      }
      await timedCall(off.client, args);
    }
    await sleep(500);
    const warmed = procMemory(on.pid).rss;
    const peakReset = resetPeak(on.pid);
    const added = [];
    const onMs = [];
    const offMs = [];
    let previewChars = 0;
    for (let i = 0; i < calls; i++) {
      const first = i % 2 === 0 ? on : off;
      const second = first === on ? off : on;
      const a = await timedCall(first.client, args);
      const b = await timedCall(second.client, args);
      const [withPreview, without] = first === on ? [a, b] : [b, a];
      onMs.push(withPreview.ms);
      offMs.push(without.ms);
      added.push(withPreview.ms - without.ms);
      previewChars = withPreview.result.content
        .filter((item) => item.type === "image")
        .reduce((sum, item) => sum + item.data.length, 0);
    }
    const peak = procMemory(on.pid).hwm;
    const workers = childPids(on.pid);
    const workerPeak = workers.reduce((max, pid) => Math.max(max, procMemory(pid).hwm ?? 0), 0);
    await sleep(2000);
    const after = procMemory(on.pid).rss;
    let settled;
    if (waitForWorkerStop) {
      await sleep(WORKER_STOP_WAIT_MS);
      settled = { treeRss: treeRss(on.pid), children: childPids(on.pid).length };
    }
    return {
      resolution,
      addedP50Ms: quantile(added, 0.5),
      addedP95Ms: quantile(added, 0.95),
      onP50Ms: quantile(onMs, 0.5),
      offP50Ms: quantile(offMs, 0.5),
      previewBase64Chars: previewChars,
      idleRss: idle,
      warmedRss: warmed,
      peakGrowth: peakReset ? peak - warmed : undefined,
      afterGrowth: after - warmed,
      workerPeakRss: workers.length > 0 ? workerPeak : undefined,
      settledGrowth: settled === undefined ? undefined : settled.treeRss - idle,
      settledChildren: settled?.children,
      peakMethod: peakReset ? "VmHWM reset after warm-up" : "VmHWM not resettable: peak not measured",
    };
  } finally {
    await on.close();
    await off.close();
  }
}

/** Every size, `rounds` fresh server pairs each; figures summarized over the rounds. */
export async function previewsBench(serverEnv, { rounds, calls, log }) {
  const bySize = {};
  for (const resolution of PREVIEW_SIZES) {
    const runs = [];
    for (let r = 0; r < rounds; r++) {
      // The first round of each size also waits for the worker to stop: does memory return to baseline?
      runs.push(await previewsRound(serverEnv, { resolution, calls, waitForWorkerStop: r === 0 }));
    }
    log?.(`  previews ${resolution}: added p50 ${runs[0].addedP50Ms.toFixed(1)} ms (first round)`);
    const pick = (key) => summary(runs.map((run) => run[key]));
    bySize[resolution] = {
      addedP50Ms: pick("addedP50Ms"),
      addedP95Ms: pick("addedP95Ms"),
      onP50Ms: pick("onP50Ms"),
      offP50Ms: pick("offP50Ms"),
      previewBase64Chars: pick("previewBase64Chars"),
      idleRssBytes: pick("idleRss"),
      warmedRssBytes: pick("warmedRss"),
      peakRssGrowthBytes: pick("peakGrowth"),
      rssGrowthAfterBytes: pick("afterGrowth"),
      workerPeakRssBytes: pick("workerPeakRss"),
      settledGrowthBytes: runs[0].settledGrowth,
      workerStopped: runs[0].settledChildren === 0,
      peakMethod: runs[0].peakMethod,
    };
  }
  return bySize;
}
