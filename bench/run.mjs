#!/usr/bin/env node
/**
 * The benchmark suite: `npm run bench` (builds first). Prints one table, writes bench/results/latest.json,
 * then draws the headline chart and README section from it (bench/chart.mjs: latest.svg, headline.md).
 * Every figure is the median of repeated runs with min and max beside it; every comparison is a ratio
 * measured in the same run (interleaved or simultaneous), because the machine may be shared and noisy.
 *
 * Options (environment): BENCH_QUICK=1 runs fewer repetitions (a smoke test, not for publishing).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startSandbox } from "../dist/sandbox/index.js";
import { BARE_NODE_SCRIPT, measureColdStarts, pairedRatio } from "./cold-start.mjs";
import { fmtMB, fmtNum, machineInfo, summary } from "./lib.mjs";
import { BIN, ROOT, TSC_ENTRY, connectServer, call } from "./mcp.mjs";
import { connectInspector, inspectorUrl } from "./inspector.mjs";
import { memoryRound } from "./memory.mjs";
import { directGetter, overheadRound } from "./overhead.mjs";
import { connectHttpClients, httpOverheadRound, paths, startHttpServer, warmUp } from "./http.mjs";
import { ensurePeers } from "./peers.mjs";
import { buildMinimalSdkServer } from "./min-sdk-server.mjs";
import { writePngUnder } from "./png.mjs";
import { previewsBench } from "./previews.mjs";
import { uploadRound } from "./upload.mjs";
import { waitingScenario } from "./waiting.mjs";
import { replicasBench } from "./replicas.mjs";
import { benchReport } from "./report.mjs";
import { writeChart } from "./chart.mjs";

const QUICK = process.env.BENCH_QUICK === "1";
const N = {
  coldRounds: QUICK ? 4 : 15,
  overheadRounds: QUICK ? 2 : 5,
  overheadCalls: QUICK ? 100 : 300,
  throughputCalls: QUICK ? 100 : 400,
  httpRounds: QUICK ? 2 : 5,
  httpCalls: QUICK ? 100 : 300,
  httpThroughputCalls: QUICK ? 320 : 640,
  uploadRounds: QUICK ? 2 : 15,
  memoryRounds: QUICK ? 1 : 3,
  waitRounds: QUICK ? 1 : 3,
  previewRounds: QUICK ? 1 : 3,
  previewCalls: QUICK ? 10 : 40,
};
/** Time scaling of the waiting benchmark: 60 requests per WINDOW_MS, polls every INTERVAL_MS (spec 60 s / 5 s). */
const WAIT = { windowMs: 3000, intervalMs: 250, ks: [1, 10, 50] };
/** Replicas sharing state on Redis, at the same time scale: K waits over each replica count. */
const REPLICAS = { ks: [10, 50, 100], replicaCounts: [1, 2, 4] };
const UPLOAD_LIMIT = 10 * 1024 * 1024;
/** Concurrent clients of the HTTP comparison (the server's per-key cap is raised above it for the bench). */
const HTTP_CLIENTS = 32;

const started = Date.now();
const log = (message) =>
  process.stderr.write(`[bench ${((Date.now() - started) / 1000).toFixed(0)}s] ${message}\n`);

const machine = machineInfo();
const tmp = mkdtempSync(path.join(os.tmpdir(), "generation-mcp-bench-"));
const dirs = {
  home: path.join(tmp, "home"),
  state: path.join(tmp, "state"),
  uploads: path.join(tmp, "uploads"),
  out: path.join(tmp, "out"),
  httpState: path.join(tmp, "http-state"),
  peerRoot: path.join(tmp, "peer-root"),
};
for (const dir of Object.values(dirs)) mkdirSync(dir, { recursive: true });

const results = {};
let sandbox;
try {
  // --- cold start ---------------------------------------------------------------------------------------
  const peers = ensurePeers(path.join(ROOT, "bench", ".peers"), log);
  const minimalSdk = await buildMinimalSdkServer(ROOT, path.join(ROOT, "bench", ".peers", "minimal"));
  sandbox = await startSandbox({
    rateLimit: { limit: 100_000, windowMs: 60_000 },
    timings: { queuedMs: 200, processingMs: 800 },
  });
  const serverEnv = {
    HOME: dirs.home,
    GENERATION_API_KEY: sandbox.keys.paid,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_STATE_DIR: dirs.state,
    GENERATION_ALLOWED_DIRS: dirs.uploads,
    GENERATION_OUTPUT_DIR: dirs.out,
  };
  const plainEnv = { PATH: process.env.PATH ?? "", HOME: dirs.home };
  const childEnv = { PATH: process.env.PATH ?? "", ...serverEnv };

  const targets = [
    {
      name: "bare node -e (floor)",
      command: process.execPath,
      args: ["-e", BARE_NODE_SCRIPT],
      env: plainEnv,
    },
    {
      name: "minimal MCP SDK server, bundled (reference)",
      command: process.execPath,
      args: [minimalSdk],
      env: plainEnv,
    },
    { name: "generation-mcp", command: process.execPath, args: [BIN], env: childEnv },
    {
      name: "generation-mcp, unbundled tsc output",
      command: process.execPath,
      args: [TSC_ENTRY],
      env: childEnv,
    },
    ...peers.map((p) => ({
      name: `${p.name}@${p.version}`,
      command: process.execPath,
      args: [p.entry, ...p.args(dirs.peerRoot)],
      env: plainEnv,
      peer: true,
    })),
  ];
  log(`cold start: ${targets.length} targets x ${N.coldRounds} interleaved rounds`);
  const cold = await measureColdStarts(targets, N.coldRounds, (r) => {
    if (r % 5 === 0) log(`  round ${r}/${N.coldRounds}`);
  });
  const oursName = "generation-mcp";
  const bare = "bare node -e (floor)";
  results.coldStart = {
    measured: "spawn -> initialize answered -> tools/list answered (raw JSON-RPC over stdio), ms",
    floor:
      "bare `node -e` process speaking the same exchange at its floor: reads the JSON-RPC lines, answers initialize and tools/list (one tool)",
    targets: Object.fromEntries(
      targets.map((t) => [
        t.name,
        {
          ms: cold[t.name].total,
          initializeMs: cold[t.name].init,
          tools: cold[t.name].tools,
          peer: !!t.peer,
        },
      ]),
    ),
    ratios: {
      [`${oursName} / bare node`]: pairedRatio(cold[oursName].raw, cold[bare].raw),
      [`minimal SDK server / bare node`]: pairedRatio(
        cold["minimal MCP SDK server, bundled (reference)"].raw,
        cold[bare].raw,
      ),
      [`${oursName} / minimal SDK server`]: pairedRatio(
        cold[oursName].raw,
        cold["minimal MCP SDK server, bundled (reference)"].raw,
      ),
      [`${oursName} unbundled / bare node`]: pairedRatio(
        cold["generation-mcp, unbundled tsc output"].raw,
        cold[bare].raw,
      ),
      ...Object.fromEntries(
        targets
          .filter((t) => t.peer)
          .map((t) => [`${oursName} / ${t.name}`, pairedRatio(cold[oursName].raw, cold[t.name].raw)]),
      ),
    },
  };

  // --- per-call overhead --------------------------------------------------------------------------------
  log(`per-call overhead: ${N.overheadRounds} rounds of ${N.overheadCalls} interleaved get_credits pairs`);
  {
    const session = await connectServer(serverEnv);
    const direct = directGetter(sandbox.baseUrl, sandbox.keys.paid);
    try {
      for (let i = 0; i < 100; i++) {
        await direct.get();
        await call(session.client, "get_credits");
      }
      const rounds = [];
      for (let r = 0; r < N.overheadRounds; r++) {
        rounds.push(
          await overheadRound(session.client, direct, {
            calls: N.overheadCalls,
            throughputCalls: N.throughputCalls,
          }),
        );
      }
      const pick = (key) => summary(rounds.map((x) => x[key]));
      const ratio = (a, b) => summary(rounds.map((x) => x[a] / x[b]));
      results.callOverhead = {
        measured:
          "get_credits through MCP over stdio (SDK client -> server -> sandbox) vs a direct undici GET /credits of the same sandbox, interleaved",
        addedP50Ms: pick("addedP50"),
        addedP99Ms: pick("addedP99"),
        mcpP50Ms: pick("mcpP50"),
        mcpP99Ms: pick("mcpP99"),
        httpP50Ms: pick("httpP50"),
        httpP99Ms: pick("httpP99"),
        mcpCallsPerS1: pick("mcpRps1"),
        mcpCallsPerS16: pick("mcpRps16"),
        httpCallsPerS1: pick("httpRps1"),
        httpCallsPerS16: pick("httpRps16"),
        mcpOverHttpRps1: ratio("mcpRps1", "httpRps1"),
        mcpOverHttpRps16: ratio("mcpRps16", "httpRps16"),
      };
    } finally {
      await direct.close();
      await session.close();
    }
  }

  // --- per-call overhead: Streamable HTTP against stdio and direct ------------------------------------------
  log(
    `HTTP overhead: ${N.httpRounds} rounds of ${N.httpCalls} interleaved get_credits triples, calls/s at 1 and ${HTTP_CLIENTS}`,
  );
  {
    const httpServer = await startHttpServer({
      HOME: dirs.home,
      GENERATION_BASE_URL: sandbox.baseUrl,
      GENERATION_STATE_DIR: dirs.httpState,
      GENERATION_HTTP_MAX_CONCURRENT: String(HTTP_CLIENTS * 2),
    });
    const stdio = await connectServer(serverEnv);
    const direct = directGetter(sandbox.baseUrl, sandbox.keys.paid);
    let httpClients = [];
    try {
      httpClients = await connectHttpClients(httpServer.url, sandbox.keys.paid, HTTP_CLIENTS);
      const byPath = paths({ httpClients, stdioClient: stdio.client, direct });
      await warmUp(byPath, { calls: 100, concurrency: HTTP_CLIENTS });
      const rounds = [];
      for (let r = 0; r < N.httpRounds; r++) {
        rounds.push(
          await httpOverheadRound(byPath, {
            calls: N.httpCalls,
            throughputCalls: N.httpThroughputCalls,
            concurrency: HTTP_CLIENTS,
          }),
        );
      }
      const pick = (get) => summary(rounds.map(get));
      const side = (name) => ({
        p50Ms: pick((x) => x[name].p50),
        p99Ms: pick((x) => x[name].p99),
        callsPerS1: pick((x) => x[name].callsPerS1),
        [`callsPerS${HTTP_CLIENTS}`]: pick((x) => x[name].callsPerSN),
        errorsAt1: pick((x) => x[name].errors1),
        [`errorsAt${HTTP_CLIENTS}`]: pick((x) => x[name].errorsN),
      });
      results.httpOverhead = {
        measured: `get_credits through MCP Streamable HTTP (--http, passthrough key; SDK client -> server -> sandbox) vs the same over stdio vs a direct undici GET /credits of the same sandbox, interleaved call by call at concurrency 1; then calls/s at 1 and ${HTTP_CLIENTS} concurrent clients`,
        clients: `HTTP: ${HTTP_CLIENTS} separate SDK Client + StreamableHTTPClientTransport instances, one call in flight each; stdio: one SDK client with ${HTTP_CLIENTS} calls in flight (a stdio server has one client); direct: ${HTTP_CLIENTS} requests in flight on one undici keep-alive Agent`,
        errors:
          "per round: rejected calls, isError results and non-200 direct answers; calls/s counts calls answered without error",
        maxConcurrentPerKey: HTTP_CLIENTS * 2,
        httpAddedP50Ms: pick((x) => x.httpAddedP50),
        httpAddedP99Ms: pick((x) => x.httpAddedP99),
        stdioAddedP50Ms: pick((x) => x.stdioAddedP50),
        stdioAddedP99Ms: pick((x) => x.stdioAddedP99),
        httpOverStdioP50Ms: pick((x) => x.httpOverStdioP50),
        http: side("http"),
        stdio: side("stdio"),
        direct: side("direct"),
      };
    } finally {
      await Promise.all(httpClients.map((client) => client.close()));
      await direct.close();
      await stdio.close();
      await httpServer.stop();
    }
  }

  // --- upload --------------------------------------------------------------------------------------------
  log(`upload: ${N.uploadRounds} uploads of a PNG just under 10 MiB`);
  {
    const file = path.join(dirs.uploads, "bench-10mib.png");
    const size = writePngUnder(file, UPLOAD_LIMIT);
    const session = await connectServer(serverEnv);
    try {
      await call(session.client, "upload_image", { path: file }); // warm-up: loads the upload code path
      const rounds = [];
      for (let r = 0; r < N.uploadRounds; r++) rounds.push(await uploadRound(session, file, size));
      results.upload = {
        fileBytes: size,
        mibPerS: summary(rounds.map((x) => x.mibPerS)),
        ms: summary(rounds.map((x) => x.ms)),
        peakRssGrowthBytes: summary(rounds.map((x) => x.peakGrowth)),
        peakRssGrowthShareOfFile: summary(rounds.map((x) => x.shareOfFile)),
        peakMethod: rounds[0].peakMethod,
      };
    } finally {
      await session.close();
    }
  }

  // --- memory --------------------------------------------------------------------------------------------
  // Default flags (RSS), then the same under --inspect, where a full GC is forced at every sample and the
  // JS heap in use read: RSS growth that the heap does not show is V8 sizing its heap, not retention.
  const MEMORY = { calls: 3000, block: 250, trendFrom: 1000 };
  log(
    `memory: ${N.memoryRounds} servers x ${MEMORY.calls} mixed tool calls, plain and with heap-after-GC sampling`,
  );
  results.memory = {
    mix: "get_credits, list_videos, get_status, generate_video dry_run, generate_image dry_run, upload_image (16x16 PNG, base64), in turn",
    ...MEMORY,
  };
  for (const variant of ["default", "inspected"]) {
    const rounds = [];
    for (let r = 0; r < N.memoryRounds; r++) {
      const env =
        variant === "inspected" ? { ...serverEnv, NODE_OPTIONS: "--inspect=127.0.0.1:0" } : serverEnv;
      const session = await connectServer(env);
      let inspector;
      try {
        if (variant === "inspected") inspector = await connectInspector(await inspectorUrl(session.stderr));
        rounds.push(await memoryRound(session, { ...MEMORY, inspector }));
      } finally {
        inspector?.close();
        await session.close();
      }
    }
    const v = {
      idleRssBytes: summary(rounds.map((x) => x.idle)),
      after1000RssBytes: summary(rounds.map((x) => x.after1000)),
      afterAllRssBytes: summary(rounds.map((x) => x.after)),
      trendMiBPer1000Calls: summary(rounds.map((x) => x.trendMiBPer1000)),
      samples: rounds.map((x) =>
        x.points.map(([calls, rss]) => ({ calls, rssMiB: +(rss / 2 ** 20).toFixed(1) })),
      ),
    };
    if (variant === "inspected") {
      Object.assign(v, {
        heapIdleBytes: summary(rounds.map((x) => x.heapIdle)),
        heapAfter1000Bytes: summary(rounds.map((x) => x.heapAfter1000)),
        heapAfterAllBytes: summary(rounds.map((x) => x.heapAfter)),
        heapTrendMiBPer1000Calls: summary(rounds.map((x) => x.heapTrendMiBPer1000)),
        heapSamples: rounds.map((x) =>
          x.heapPoints.map(([calls, b]) => ({ calls, heapMiB: +(b / 2 ** 20).toFixed(2) })),
        ),
      });
    }
    results.memory[variant] = v;
  }

  // --- image previews --------------------------------------------------------------------------------------
  log(`previews: generate_image on vs off at 1k/2k/4k, ${N.previewRounds} rounds x ${N.previewCalls} pairs`);
  results.previews = await previewsBench(serverEnv, {
    rounds: N.previewRounds,
    calls: N.previewCalls,
    log,
  });
} finally {
  await sandbox?.close();
}

// --- waiting ---------------------------------------------------------------------------------------------
log(
  `waiting: K = ${WAIT.ks.join(", ")} x ${N.waitRounds} rounds, 60 requests per ${WAIT.windowMs} ms, poll every ${WAIT.intervalMs} ms`,
);
{
  const byK = {};
  for (let r = 0; r < N.waitRounds; r++) {
    for (const k of WAIT.ks) {
      const res = await waitingScenario({ k, ...WAIT });
      (byK[k] ??= []).push(res);
    }
    log(`  round ${r + 1}/${N.waitRounds}`);
  }
  results.waiting = {
    setup: `sandbox rate limit 60 requests per ${WAIT.windowMs} ms window (fixed window per key), poll interval ${WAIT.intervalMs} ms: the spec's 60 per 60,000 ms at 5,000 ms scaled ${60_000 / WAIT.windowMs}x, same 5 requests per interval; tasks finish ${WAIT.intervalMs * 3} ms after the waits start`,
    ours: "PollEngine + TokenBucketBudget + GenerationClient from dist/ (as src/runtime.ts wires them)",
    naive: "each waiter: fetch GET /videos/:id, sleep one interval, repeat (429 = lost poll)",
    byK: Object.fromEntries(
      Object.entries(byK).map(([k, runs]) => [
        k,
        Object.fromEntries(
          ["ours", "naive"].map((side) => [
            side,
            {
              completed: summary(runs.map((x) => x[side].completed)),
              requestsPerTask: summary(runs.map((x) => x[side].requestsPerTask)),
              http429: summary(runs.map((x) => x[side].http429)),
              delayP50Ms: summary(runs.map((x) => x[side].delayP50)),
              delayP95Ms: summary(runs.map((x) => x[side].delayP95)),
            },
          ]),
        ),
      ]),
    ),
  };
}

// --- replicas sharing state on Redis -----------------------------------------------------------------------
log(`replicas: K = ${REPLICAS.ks.join(", ")} over ${REPLICAS.replicaCounts.join(", ")} replicas, one Redis`);
results.replicas = await replicasBench({
  ...REPLICAS,
  windowMs: WAIT.windowMs,
  intervalMs: WAIT.intervalMs,
  log,
});

rmSync(tmp, { recursive: true, force: true });

// --- report ----------------------------------------------------------------------------------------------
const r = results;
const m = (s, f = (v) => fmtNum(v)) => `${f(s.median)}`;
const mm = (s, f = (v) => fmtNum(v)) => `${f(s.min)} – ${f(s.max)}`;
const ms1 = (v) => fmtNum(v, 1);
const ms2 = (v) => fmtNum(v, 2);
const x2 = (v) => `${fmtNum(v, 2)}x`;
const mib = (v) => fmtMB(v);
const rows = [];
const row = (section, metric, s, f, goal = "", met = "") =>
  rows.push([section, metric, m(s, f), mm(s, f), goal, met]);

const cs = r.coldStart;
const peerNames = Object.keys(cs.targets).filter((n) => cs.targets[n].peer);
const bareRatio = cs.ratios["generation-mcp / bare node"];
for (const [name, t] of Object.entries(cs.targets)) row("cold start (ms)", name, t.ms, ms1);
row(
  "cold start ratio",
  "generation-mcp / bare node",
  bareRatio,
  x2,
  "<= 2x",
  bareRatio.median <= 2 ? "yes" : "NO",
);
row("cold start ratio", "minimal SDK server / bare node", cs.ratios["minimal SDK server / bare node"], x2);
row(
  "cold start ratio",
  "generation-mcp / minimal SDK server",
  cs.ratios["generation-mcp / minimal SDK server"],
  x2,
);
row(
  "cold start ratio",
  "generation-mcp unbundled / bare node",
  cs.ratios["generation-mcp unbundled / bare node"],
  x2,
);
for (const n of peerNames) {
  const ratio = cs.ratios[`generation-mcp / ${n}`];
  row("cold start ratio", `generation-mcp / ${n}`, ratio, x2, "< 1x", ratio.median < 1 ? "yes" : "NO");
}

const co = r.callOverhead;
row(
  "get_credits",
  "added latency p50 (MCP - direct HTTP), ms",
  co.addedP50Ms,
  ms2,
  "< 1 ms",
  co.addedP50Ms.median < 1 ? "yes" : "NO",
);
row("get_credits", "added latency p99, ms", co.addedP99Ms, ms2);
row("get_credits", "MCP call p50 / p99, ms", co.mcpP50Ms, ms2);
row("get_credits", "  (p99)", co.mcpP99Ms, ms2);
row("get_credits", "direct HTTP GET p50 / p99, ms", co.httpP50Ms, ms2);
row("get_credits", "  (p99)", co.httpP99Ms, ms2);
row("get_credits", "MCP calls/s, concurrency 1", co.mcpCallsPerS1, (v) => fmtNum(v, 0));
row("get_credits", "MCP calls/s, concurrency 16", co.mcpCallsPerS16, (v) => fmtNum(v, 0));
row("get_credits", "direct HTTP calls/s, concurrency 1", co.httpCallsPerS1, (v) => fmtNum(v, 0));
row("get_credits", "direct HTTP calls/s, concurrency 16", co.httpCallsPerS16, (v) => fmtNum(v, 0));
row("get_credits", "MCP / direct calls/s, concurrency 1", co.mcpOverHttpRps1, x2);
row("get_credits", "MCP / direct calls/s, concurrency 16", co.mcpOverHttpRps16, x2);

const ho = r.httpOverhead;
const rps = (v) => fmtNum(v, 0);
const count = (v) => fmtNum(v, 0);
row(
  "get_credits HTTP",
  "HTTP added latency p50 (HTTP MCP - direct), ms",
  ho.httpAddedP50Ms,
  ms2,
  "< 2 ms",
  ho.httpAddedP50Ms.median < 2 ? "yes" : "NO",
);
row("get_credits HTTP", "HTTP added latency p99, ms", ho.httpAddedP99Ms, ms2);
row("get_credits HTTP", "stdio added latency p50 (stdio MCP - direct), ms", ho.stdioAddedP50Ms, ms2);
row("get_credits HTTP", "stdio added latency p99, ms", ho.stdioAddedP99Ms, ms2);
row("get_credits HTTP", "HTTP MCP - stdio MCP p50, ms", ho.httpOverStdioP50Ms, ms2);
for (const [name, label] of [
  ["http", "HTTP MCP"],
  ["stdio", "stdio MCP"],
  ["direct", "direct GET"],
]) {
  const s = ho[name];
  row("get_credits HTTP", `${label} p50, ms`, s.p50Ms, ms2);
  row("get_credits HTTP", `${label} p99, ms`, s.p99Ms, ms2);
  row("get_credits HTTP", `${label} calls/s, 1 client`, s.callsPerS1, rps);
  row("get_credits HTTP", `${label} calls/s, ${HTTP_CLIENTS} clients`, s[`callsPerS${HTTP_CLIENTS}`], rps);
}
for (const [name, label] of [
  ["http", "HTTP MCP"],
  ["stdio", "stdio MCP"],
  ["direct", "direct GET"],
]) {
  const at1 = ho[name].errorsAt1;
  const atN = ho[name][`errorsAt${HTTP_CLIENTS}`];
  row("get_credits HTTP", `${label} errors per round, 1 client`, at1, count);
  row(
    "get_credits HTTP",
    `${label} errors per round, ${HTTP_CLIENTS} clients`,
    atN,
    count,
    name === "http" ? "0" : "",
    name === "http" ? (atN.max === 0 ? "yes" : "NO") : "",
  );
}

for (const [k, sides] of Object.entries(r.waiting.byK)) {
  for (const side of ["ours", "naive"]) {
    const s = sides[side];
    const sec = `waiting K=${k} ${side}`;
    const isOurs = side === "ours";
    row(sec, "tasks completed", s.completed, (v) => fmtNum(v, 0));
    row(sec, "upstream requests per completed task", s.requestsPerTask, ms2);
    row(
      sec,
      "429s seen",
      s.http429,
      (v) => fmtNum(v, 0),
      isOurs ? "0" : "",
      isOurs ? (s.http429.max === 0 ? "yes" : "NO") : "",
    );
    row(
      sec,
      `detection delay median, ms (interval ${WAIT.intervalMs})`,
      s.delayP50Ms,
      (v) => fmtNum(v, 0),
      isOurs ? `<= ${WAIT.intervalMs}` : "",
      isOurs ? (s.delayP50Ms.median <= WAIT.intervalMs ? "yes" : "NO") : "",
    );
    row(sec, "detection delay p95, ms", s.delayP95Ms, (v) => fmtNum(v, 0));
  }
}

const up = r.upload;
row("upload_image 10 MiB", `throughput, MiB/s (file ${up.fileBytes} bytes)`, up.mibPerS, (v) => fmtNum(v, 1));
row("upload_image 10 MiB", "call time, ms", up.ms, (v) => fmtNum(v, 0));
row("upload_image 10 MiB", "peak RSS growth", up.peakRssGrowthBytes, mib);
row(
  "upload_image 10 MiB",
  "peak RSS growth / file size",
  up.peakRssGrowthShareOfFile,
  x2,
  "far below 1x",
  up.peakRssGrowthShareOfFile.median < 0.5 ? "yes" : "NO",
);
const me = r.memory;
{
  const v = me.default;
  row("memory", "RSS idle after start", v.idleRssBytes, mib);
  row("memory", "RSS after 1,000 mixed calls", v.after1000RssBytes, mib);
  row("memory", `RSS after ${me.calls.toLocaleString("en")} mixed calls`, v.afterAllRssBytes, mib);
  row(
    "memory",
    `RSS trend, calls ${me.trendFrom}-${me.calls} (MiB per 1,000 calls)`,
    v.trendMiBPer1000Calls,
    ms2,
  );
  const h = me.inspected;
  row("memory (full GC forced)", "JS heap in use idle", h.heapIdleBytes, mib);
  row("memory (full GC forced)", "JS heap in use after 1,000 calls", h.heapAfter1000Bytes, mib);
  row(
    "memory (full GC forced)",
    `JS heap in use after ${me.calls.toLocaleString("en")} calls`,
    h.heapAfterAllBytes,
    mib,
  );
  row(
    "memory (full GC forced)",
    `JS heap trend, calls ${me.trendFrom}-${me.calls} (MiB per 1,000 calls)`,
    h.heapTrendMiBPer1000Calls,
    ms2,
    "~0",
    Math.abs(h.heapTrendMiBPer1000Calls.median) < 0.5 ? "yes" : "NO",
  );
  row(
    "memory (full GC forced)",
    `RSS trend, calls ${me.trendFrom}-${me.calls} (MiB per 1,000 calls)`,
    h.trendMiBPer1000Calls,
    ms2,
  );
}
const elapsedS = (Date.now() - started) / 1000;
const output = {
  command: "npm run bench",
  quick: QUICK,
  machine,
  repetitions: N,
  waitingScale: WAIT,
  elapsedSeconds: Math.round(elapsedS),
  results,
  table: rows.map(([section, metric, median, range, goal, met]) => ({
    section,
    metric,
    median,
    range,
    goal,
    met,
  })),
};
const outDir = path.join(ROOT, "bench", "results");
mkdirSync(outDir, { recursive: true });
process.stdout.write(`\n${benchReport(output)}\n`);
const written = `${JSON.stringify(output, null, 2)}\n`;
writeFileSync(path.join(outDir, "latest.json"), written);
log(`wrote bench/results/latest.json`);
// The headline chart and README section, drawn from the file just written as `node bench/chart.mjs` would.
for (const file of writeChart(JSON.parse(written), outDir)) log(`wrote ${path.relative(ROOT, file)}`);
