/**
 * Waiting: K concurrent waits on short tasks against a sandbox that allows 60 requests per window.
 *
 * "ours"  = the server's real PollEngine + TokenBucketBudget + GenerationClient (from dist/, wired as
 *           src/runtime.ts wires them), in the bench process.
 * "naive" = every waiter loops GET /videos/:id with plain fetch every interval, on its own, and ignores
 *           rate-limit headers (a 429 is just a lost poll).
 * The two run at the same time, each against its own sandbox (own rate-limit window), so they see the
 * same machine load. The K tasks are started first (POST /generate with the same key), then both sides
 * wait until that window has reset, so every wait starts with the key's full budget of 60.
 *
 * Time is scaled to fit the run: the window and the poll interval are shrunk by the same factor, keeping
 * the spec's ratio (60 requests per 60 s at a 5 s interval = 5 requests per key per interval).
 */
/* global fetch */
import { GenerationClient } from "../dist/api/client.js";
import { TokenBucketBudget } from "../dist/api/rate-budget.js";
import { ALONE_POLLS } from "../dist/state/local/index.js";
import { PollEngine } from "../dist/generations/poll-engine.js";
import { sequentialIdGenerator, startSandbox } from "../dist/sandbox/index.js";
import { quantile, sleep } from "./lib.mjs";

const ACCOUNT = { key: "bench-wait-key", name: "bench", credits: 1e9, paidAccess: true, subscription: "pro" };

export async function prepare({ k, windowMs, intervalMs }) {
  const created = new Map();
  const ids = sequentialIdGenerator();
  // More tasks than one window allows are started over several windows; each still finishes after the waits start.
  const windows = Math.ceil(k / 60);
  const timings = { queuedMs: intervalMs, processingMs: windows * windowMs + 2 * intervalMs };
  const sandbox = await startSandbox({
    accounts: [ACCOUNT],
    rateLimit: { limit: 60, windowMs },
    timings,
    idGenerator: (kind) => {
      const id = ids(kind);
      if (kind === "video") created.set(id, Date.now());
      return id;
    },
  });
  let windowOpenedAt = Date.now();
  const videoIds = [];
  for (let i = 0; i < k; i++) {
    if (i > 0 && i % 60 === 0) {
      await sleep(Math.max(0, windowOpenedAt + windowMs + 50 - Date.now()));
      windowOpenedAt = Date.now();
    }
    const res = await fetch(`${sandbox.baseUrl}/generate`, {
      method: "POST",
      headers: { authorization: `Bearer ${ACCOUNT.key}`, "content-type": "application/json" },
      body: JSON.stringify({ prompt: `bench task ${i}`, generation_type: "text_to_video" }),
    });
    const body = await res.json();
    if (res.status !== 200) throw new Error(`POST /generate: ${res.status} ${JSON.stringify(body)}`);
    videoIds.push(body.data.video_id);
  }
  return { sandbox, videoIds, created, timings, windowOpenedAt };
}

async function runOurs(sandbox, videoIds, intervalMs, timeoutMs) {
  const budget = new TokenBucketBudget();
  const client = new GenerationClient({
    baseUrl: sandbox.baseUrl,
    apiKey: ACCOUNT.key,
    budget,
    userAgent: "bench",
  });
  const poller = new PollEngine({ api: client, intervalMs, coordinator: ALONE_POLLS });
  const detected = new Map();
  await Promise.all(
    videoIds.map(async (id) => {
      const result = await poller.wait(id, { timeoutMs });
      if (result.outcome === "final") detected.set(id, Date.now());
    }),
  );
  poller.close();
  await client.close();
  return detected;
}

async function runNaive(sandbox, videoIds, intervalMs, timeoutMs) {
  const detected = new Map();
  const deadline = Date.now() + timeoutMs;
  await Promise.all(
    videoIds.map(async (id) => {
      while (Date.now() < deadline) {
        const res = await fetch(`${sandbox.baseUrl}/videos/${id}`, {
          headers: { authorization: `Bearer ${ACCOUNT.key}` },
        });
        const body = await res.json().catch(() => ({}));
        const status = body?.data?.status;
        if (res.status === 200 && (status === "completed" || status === "failed")) {
          detected.set(id, Date.now());
          return;
        }
        await sleep(intervalMs);
      }
    }),
  );
  return detected;
}

export function score(setup, detected, k) {
  const { sandbox, created, timings } = setup;
  const polls = sandbox.requests.filter((r) => r.route === "video-status");
  const delays = [];
  for (const [id, at] of detected) {
    const completedAt = created.get(id) + timings.queuedMs + timings.processingMs;
    delays.push(at - completedAt);
  }
  return {
    completed: detected.size,
    requestsPerTask: polls.length / Math.max(1, detected.size),
    http429: polls.filter((r) => r.status === 429).length,
    delayP50: quantile(delays, 0.5),
    delayP95: quantile(delays, 0.95),
    k,
  };
}

/** One paired scenario: ours and naive at the same time, each on its own sandbox. */
export async function waitingScenario({ k, windowMs, intervalMs }) {
  const [a, b] = await Promise.all([
    prepare({ k, windowMs, intervalMs }),
    prepare({ k, windowMs, intervalMs }),
  ]);
  try {
    // Let the window opened by the POSTs end, so the waits start with the full budget.
    const startAt = Math.max(a.windowOpenedAt, b.windowOpenedAt) + windowMs + 50;
    await sleep(Math.max(0, startAt - Date.now()));
    a.sandbox.clearRequests();
    b.sandbox.clearRequests();
    const timeoutMs = 10 * windowMs + 20 * intervalMs;
    const [oursDetected, naiveDetected] = await Promise.all([
      runOurs(a.sandbox, a.videoIds, intervalMs, timeoutMs),
      runNaive(b.sandbox, b.videoIds, intervalMs, timeoutMs),
    ]);
    return { ours: score(a, oursDetected, k), naive: score(b, naiveDetected, k) };
  } finally {
    await Promise.all([a.sandbox.close(), b.sandbox.close()]);
  }
}
