/**
 * Memory: the server's RSS idle after start (initialize + tools/list done, 1 s settled), then after every
 * block of `block` mixed tool calls. RSS after 1,000 calls is the headline; "trend" is the least-squares
 * slope of RSS from `trendFrom` calls to the end, in MiB per 1,000 calls: near 0 = no growth.
 */
import { call } from "./mcp.mjs";
import { procMemory, sleep } from "./lib.mjs";
import { makePng } from "./png.mjs";

const SMALL_PNG = makePng(16, 16).toString("base64");

function mixedCall(client, i, videoId) {
  switch (i % 6) {
    case 0:
      return call(client, "get_credits");
    case 1:
      return call(client, "list_videos", { page: 1, limit: 10 });
    case 2:
      return call(client, "get_status", { video_id: videoId });
    case 3:
      return call(client, "generate_video", { prompt: `memory bench ${i}`, dry_run: true });
    case 4:
      return call(client, "generate_image", { prompt: `memory bench ${i}`, dry_run: true });
    default:
      return call(client, "upload_image", { data_base64: SMALL_PNG, filename: `m${i}.png` });
  }
}

function slope(points) {
  const n = points.length;
  const mx = points.reduce((a, p) => a + p[0], 0) / n;
  const my = points.reduce((a, p) => a + p[1], 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

/** With `inspector` (see inspector.mjs), also the JS heap in use after a full GC at every sample. */
export async function memoryRound(session, { calls = 3000, block = 250, trendFrom = 1000, inspector } = {}) {
  const { client, pid } = session;
  await sleep(1000);
  const idle = procMemory(pid).rss;
  const heap = inspector ? [[0, await inspector.heapAfterGc()]] : [];
  const started = await call(client, "generate_video", { prompt: "memory bench task", wait: false });
  const videoId = started.structuredContent.video_id;
  const points = [[0, idle]];
  for (let done = 0; done < calls;) {
    for (let j = 0; j < block; j++, done++) await mixedCall(client, done, videoId);
    points.push([done, procMemory(pid).rss]);
    if (inspector) heap.push([done, await inspector.heapAfterGc()]);
  }
  const tail = points.filter(([x]) => x >= trendFrom);
  const heapTail = heap.filter(([x]) => x >= trendFrom);
  return {
    heapIdle: heap[0]?.[1],
    heapAfter1000: heap.find(([x]) => x >= 1000)?.[1],
    heapAfter: heap.at(-1)?.[1],
    heapTrendMiBPer1000: inspector ? (slope(heapTail) * 1000) / 2 ** 20 : undefined,
    heapPoints: heap,
    idle,
    after1000: points.find(([x]) => x >= 1000)?.[1],
    after: points.at(-1)[1],
    peak: procMemory(pid).hwm,
    trendMiBPer1000: (slope(tail) * 1000) / 2 ** 20,
    points,
  };
}
