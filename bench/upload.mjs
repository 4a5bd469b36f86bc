/**
 * Upload: a PNG just under the 10 MiB limit through `upload_image` (path) against the sandbox. Reports the
 * throughput (file bytes / call time) and the server's peak RSS growth during the call as a share of the
 * file size, from /proc/<pid>/status: VmHWM (the peak) is reset to the current RSS before each call by
 * writing 5 to /proc/<pid>/clear_refs; where that is not allowed, VmRSS is sampled every 2 ms instead.
 */
import { call } from "./mcp.mjs";
import { now, procMemory, resetPeak, sleep } from "./lib.mjs";

export async function uploadRound(session, file, size) {
  const { client, pid } = session;
  await sleep(50);
  const peakReset = resetPeak(pid);
  const before = procMemory(pid);
  let sampledPeak = before.rss ?? 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const m = procMemory(pid);
      if (m.rss !== undefined && m.rss > sampledPeak) sampledPeak = m.rss;
      await sleep(2);
    }
  })();
  const t = now();
  const result = await call(client, "upload_image", { path: file });
  const ms = now() - t;
  sampling = false;
  await sampler;
  const after = procMemory(pid);
  const peak = peakReset && after.hwm !== undefined ? Math.max(after.hwm, sampledPeak) : sampledPeak;
  const url = result.structuredContent?.url;
  if (typeof url !== "string") throw new Error("upload_image returned no url");
  return {
    ms,
    mibPerS: size / 2 ** 20 / (ms / 1000),
    rssBefore: before.rss,
    peakGrowth: Math.max(0, peak - before.rss),
    shareOfFile: Math.max(0, peak - before.rss) / size,
    peakMethod: peakReset ? "VmHWM after clear_refs" : "VmRSS sampled every 2 ms",
  };
}
