#!/usr/bin/env node
/**
 * The benchmark suite: `npm run bench` (builds first). Prints one table and writes its results, with the
 * headline chart and README section drawn from them (bench/chart.mjs: latest.svg, headline.md), to
 * bench/results/local/ (git-ignored). Every figure is the median of repeated runs with min and max beside
 * it; every comparison is a ratio measured in the same run (interleaved or simultaneous), because the
 * machine may be shared and noisy.
 *
 * Options:
 * - --record (`npm run bench:record`): a full run that replaces the committed results in bench/results/ and
 *   README's Performance block (bench/save.mjs). Refused with --quick or BENCH_ONLY.
 * - --quick (`npm run bench:quick`): the QUICK_SECTIONS at reduced repetitions, about a minute.
 * - BENCH_QUICK=1 runs fewer repetitions (a smoke test, not for publishing).
 * - BENCH_ONLY=cold,http (any of cold, call, http, upload, memory, previews, frames, waiting, replicas, oauth) runs only
 *   those sections, prints their table and writes bench/results/local/partial.json.
 * - BENCH_CPU_PROF=DIR: the HTTP section's servers (ours and the minimal SDK proxy) run under
 *   `node --cpu-prof`, their profiles written to DIR when they stop (where the time goes).
 * - BENCH_BIN=FILE: measure another build of ours (e.g. `node scripts/bundle.mjs --readable DIR`, whose
 *   profiles name functions).
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { startSandbox } from "../dist/sandbox/index.js";
import { BARE_NODE_SCRIPT, measureColdStarts, pairedRatio } from "./cold-start.mjs";
import { fmtMB, fmtNum, machineInfo, summary } from "./lib.mjs";
import { BIN, ROOT, TSC_ENTRY, connectServer, call } from "./mcp.mjs";
import { connectInspector, inspectorUrl } from "./inspector.mjs";
import { memoryRound } from "./memory.mjs";
import { directGetter, overheadRound } from "./overhead.mjs";
import {
  LEGACY_REVISION,
  MODERN_REVISION,
  connectHttpClients,
  httpOverheadRound,
  legacyCaller,
  modernCaller,
  paths,
  startHttpServer,
  startMinimalHttpProxy,
  warmUp,
} from "./http.mjs";
import { ensurePeers } from "./peers.mjs";
import { REFERENCES, buildMinimalSdkServers } from "./min-sdk-server.mjs";
import { writePngUnder } from "./png.mjs";
import { framesBench } from "./frames.mjs";
import { previewsBench } from "./previews.mjs";
import { uploadRound } from "./upload.mjs";
import { waitingScenario } from "./waiting.mjs";
import { replicasBench } from "./replicas.mjs";
import { oauthBench } from "./oauth.mjs";
import { benchReport, benchTable } from "./report.mjs";
import { saveResults } from "./save.mjs";

const { values: flags } = parseArgs({ options: { record: { type: "boolean" }, quick: { type: "boolean" } } });
const QUICK = flags.quick === true || process.env.BENCH_QUICK === "1";
const SECTIONS = [
  "cold",
  "call",
  "http",
  "upload",
  "memory",
  "previews",
  "frames",
  "waiting",
  "replicas",
  "oauth",
];
/** --quick: the sections behind the headline goals (cold start, added latency, HTTP calls/s, OAuth). */
const QUICK_SECTIONS = ["cold", "call", "http", "oauth"];
const ONLY =
  process.env.BENCH_ONLY?.split(",").map((name) => name.trim()) ?? (flags.quick ? QUICK_SECTIONS : undefined);
for (const name of ONLY ?? []) {
  if (!SECTIONS.includes(name)) throw new Error(`BENCH_ONLY: no section "${name}" (${SECTIONS.join(", ")})`);
}
if (flags.record && (QUICK || ONLY !== undefined)) {
  process.stderr.write(
    "bench: --record keeps only a full run at full repetitions: drop --quick, BENCH_QUICK and BENCH_ONLY.\n",
  );
  process.exit(2);
}
/** Whether a section runs in this invocation (all of them unless BENCH_ONLY names some). */
const want = (name) => ONLY === undefined || ONLY.includes(name);
const CPU_PROF = process.env.BENCH_CPU_PROF;
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
  framesRounds: QUICK ? 1 : 3,
  framesCalls: QUICK ? 5 : 15,
  oauthRounds: QUICK ? 2 : 5,
  oauthIterations: QUICK ? 5_000 : 20_000,
};
/** Time scaling of the waiting benchmark: 60 requests per WINDOW_MS, polls every INTERVAL_MS (spec 60 s / 5 s). */
const WAIT = { windowMs: 3000, intervalMs: 250, ks: [1, 10, 50] };
/** Replicas sharing state on Redis, at the same time scale: K waits over each replica count. */
const REPLICAS = { ks: [10, 50, 100], replicaCounts: [1, 2, 4] };
const UPLOAD_LIMIT = 10 * 1024 * 1024;
/** Concurrent clients of the HTTP comparison (the server's per-key cap is raised above it for the bench). */
const HTTP_CLIENTS = 32;
/** The goals (the issue's): cold start against the minimal v2 SDK server and the fastest peer; HTTP. */
const GOALS = {
  coldVsMinimal: 1.1,
  coldVsFastestPeer: 0.6,
  addedP50Ms: 1,
  httpVsMinimalAt32: 0.9,
  oauthAddedP50Ms: 0.2,
};

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
  // --- the references: minimal SDK servers built alike, and the published peers --------------------------
  const refs =
    want("cold") || want("http")
      ? await buildMinimalSdkServers(ROOT, path.join(ROOT, "bench", ".peers", "minimal"))
      : {};
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

  // --- cold start ---------------------------------------------------------------------------------------
  if (want("cold")) {
    const peers = ensurePeers(path.join(ROOT, "bench", ".peers"), log);
    const minimal = {
      v2: `${REFERENCES.v2Stdio.name} (reference)`,
      v2Serve: REFERENCES.v2ServeStdio.name,
      v1: REFERENCES.v1Stdio.name,
    };
    const targets = [
      {
        name: "bare node -e (floor)",
        command: process.execPath,
        args: ["-e", BARE_NODE_SCRIPT],
        env: plainEnv,
      },
      { name: minimal.v2, command: process.execPath, args: [refs.v2Stdio], env: plainEnv, reference: true },
      { name: minimal.v2Serve, command: process.execPath, args: [refs.v2ServeStdio], env: plainEnv },
      { name: minimal.v1, command: process.execPath, args: [refs.v1Stdio], env: plainEnv },
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
    const ours = "generation-mcp";
    const bare = "bare node -e (floor)";
    const peerNames = targets.filter((t) => t.peer).map((t) => t.name);
    // The goal is against the fastest peer (lowest median), the strictest of them.
    const fastestPeer = [...peerNames].sort((a, b) => cold[a].total.median - cold[b].total.median)[0];
    results.coldStart = {
      measured: "spawn -> initialize answered -> tools/list answered (raw JSON-RPC over stdio), ms",
      floor:
        "bare `node -e` process speaking the same exchange at its floor: reads the JSON-RPC lines, answers initialize and tools/list (one tool)",
      reference: minimal.v2,
      references: `bench/min-sdk-server.mjs, each bundled with our bin's esbuild settings: ${minimal.v2}: the smallest server of our SDK line (@modelcontextprotocol/server v2), the low-level Server with one tool on StdioServerTransport, the goal's reference; ${minimal.v2Serve}: the same server on serveStdio (both eras, as our bin serves); ${minimal.v1}: the same on the previous line (@modelcontextprotocol/sdk v1)`,
      fastestPeer,
      targets: Object.fromEntries(
        targets.map((t) => [
          t.name,
          {
            ms: cold[t.name].total,
            initializeMs: cold[t.name].init,
            tools: cold[t.name].tools,
            peer: !!t.peer,
            ...(t.reference && { reference: true }),
          },
        ]),
      ),
      ratios: {
        [`${ours} / minimal SDK server`]: pairedRatio(cold[ours].raw, cold[minimal.v2].raw),
        [`${ours} / minimal SDK v2 server on serveStdio`]: pairedRatio(
          cold[ours].raw,
          cold[minimal.v2Serve].raw,
        ),
        [`${ours} / minimal SDK v1 server`]: pairedRatio(cold[ours].raw, cold[minimal.v1].raw),
        [`${ours} / bare node`]: pairedRatio(cold[ours].raw, cold[bare].raw),
        [`minimal SDK server / bare node`]: pairedRatio(cold[minimal.v2].raw, cold[bare].raw),
        [`${ours} unbundled / bare node`]: pairedRatio(
          cold["generation-mcp, unbundled tsc output"].raw,
          cold[bare].raw,
        ),
        ...Object.fromEntries(
          peerNames.map((name) => [`${ours} / ${name}`, pairedRatio(cold[ours].raw, cold[name].raw)]),
        ),
      },
    };
  }

  // --- per-call overhead --------------------------------------------------------------------------------
  if (want("call")) {
    log(`per-call overhead: ${N.overheadRounds} rounds of ${N.overheadCalls} interleaved get_credits pairs`);
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

  // --- per-call overhead: Streamable HTTP, ours against the minimal SDK proxy, the floor, stdio and direct ---
  if (want("http")) {
    log(
      `HTTP overhead: ${N.httpRounds} rounds of ${N.httpCalls} interleaved get_credits calls per path, calls/s at 1 and ${HTTP_CLIENTS}`,
    );
    const nodeArgs = CPU_PROF === undefined ? [] : ["--cpu-prof", "--cpu-prof-dir", path.resolve(CPU_PROF)];
    const key = sandbox.keys.paid;
    const httpServer = await startHttpServer(
      {
        HOME: dirs.home,
        GENERATION_BASE_URL: sandbox.baseUrl,
        GENERATION_STATE_DIR: dirs.httpState,
        GENERATION_HTTP_MAX_CONCURRENT: String(HTTP_CLIENTS * 2),
      },
      { nodeArgs },
    );
    const refServer = await startMinimalHttpProxy(refs.v2HttpProxy, sandbox.baseUrl, { nodeArgs });
    const floorServer = await startMinimalHttpProxy(refs.httpFloor, sandbox.baseUrl);
    const stdio = await connectServer(serverEnv);
    const direct = directGetter(sandbox.baseUrl, key);
    const raw = {};
    let httpClients = [];
    let refClients = [];
    try {
      raw.http2025 = await legacyCaller(httpServer.url, key, HTTP_CLIENTS);
      raw.ref2025 = await legacyCaller(refServer.url, key, HTTP_CLIENTS);
      raw.http2026 = modernCaller(httpServer.url, key, HTTP_CLIENTS);
      raw.ref2026 = modernCaller(refServer.url, key, HTTP_CLIENTS);
      raw.floor = modernCaller(floorServer.url, key, HTTP_CLIENTS);
      httpClients = await connectHttpClients(httpServer.url, key, HTTP_CLIENTS);
      refClients = await connectHttpClients(refServer.url, key, HTTP_CLIENTS);
      const byPath = paths({ httpClients, refClients, raw, stdioClient: stdio.client, direct });
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
        log(`  round ${r + 1}/${N.httpRounds}`);
      }
      const pick = (get) => summary(rounds.map(get));
      const side = (name) => ({
        p50Ms: pick((x) => x[name].p50),
        p99Ms: pick((x) => x[name].p99),
        addedP50Ms: pick((x) => x.added[name]?.p50),
        addedP99Ms: pick((x) => x.added[name]?.p99),
        callsPerS1: pick((x) => x[name].callsPerS1),
        [`callsPerS${HTTP_CLIENTS}`]: pick((x) => x[name].callsPerSN),
        errorsAt1: pick((x) => x[name].errors1),
        [`errorsAt${HTTP_CLIENTS}`]: pick((x) => x[name].errorsN),
      });
      // Same-round ratios of calls/s at HTTP_CLIENTS.
      const rateRatio = (a, b) => pick((x) => x[a].callsPerSN / x[b].callsPerSN);
      results.httpOverhead = {
        measured: `get_credits through MCP Streamable HTTP (--http, passthrough key: client -> server -> sandbox) vs the same through a minimal MCP SDK v2 server proxying the same GET, vs a bare node:http proxy of it (floor), vs the same over stdio, vs a direct undici GET /credits of the same sandbox; interleaved call by call at concurrency 1, then calls/s at 1 and ${HTTP_CLIENTS} concurrent clients`,
        reference: `${REFERENCES.v2HttpProxy.name}: bench/min-sdk-server.mjs, @modelcontextprotocol/server createMcpHandler (its stateless fallback for 2025 requests) + @modelcontextprotocol/node toNodeHandler on node:http, one McpServer tool get_credits that fetches GET /credits with the caller's bearer (401 without one)`,
        floorServer: `${REFERENCES.httpFloor.name}: bench/min-sdk-server.mjs, reads the JSON-RPC request, GETs /credits with the caller's Authorization on an undici keep-alive pool, answers JSON`,
        clients: `SDK client: ${HTTP_CLIENTS} separate SDK v1 Client + StreamableHTTPClientTransport instances per server (2025-11-25; initialize once, then one POST per call), one call in flight each; raw ${LEGACY_REVISION} and raw ${MODERN_REVISION}: undici, ${HTTP_CLIENTS} requests in flight on one keep-alive pool, sending what the revision says (2025: initialize once, then MCP-Protocol-Version and Mcp-Session-Id on each call; 2026: the _meta envelope and the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers on each POST); stdio: one SDK client with ${HTTP_CLIENTS} calls in flight (a stdio server has one client); direct: ${HTTP_CLIENTS} requests in flight on one undici keep-alive Agent`,
        errors:
          "per round: rejected calls, isError results and non-200 answers; calls/s counts calls answered without error",
        maxConcurrentPerKey: HTTP_CLIENTS * 2,
        // The SDK-client figures keep their earlier names (bench/chart.mjs reads these).
        httpAddedP50Ms: pick((x) => x.added.http.p50),
        httpAddedP99Ms: pick((x) => x.added.http.p99),
        stdioAddedP50Ms: pick((x) => x.added.stdio.p50),
        stdioAddedP99Ms: pick((x) => x.added.stdio.p99),
        httpOverStdioP50Ms: pick((x) => x.httpOverStdioP50),
        http: side("http"),
        ref: side("ref"),
        http2025: side("http2025"),
        ref2025: side("ref2025"),
        http2026: side("http2026"),
        ref2026: side("ref2026"),
        floor: side("floor"),
        stdio: side("stdio"),
        direct: side("direct"),
        ratios: {
          [`ours / minimal SDK, SDK client ${LEGACY_REVISION}, calls/s at ${HTTP_CLIENTS}`]: rateRatio(
            "http",
            "ref",
          ),
          [`ours / minimal SDK, raw ${LEGACY_REVISION}, calls/s at ${HTTP_CLIENTS}`]: rateRatio(
            "http2025",
            "ref2025",
          ),
          [`ours / minimal SDK, raw ${MODERN_REVISION}, calls/s at ${HTTP_CLIENTS}`]: rateRatio(
            "http2026",
            "ref2026",
          ),
          [`ours / direct GET, SDK client ${LEGACY_REVISION}, calls/s at ${HTTP_CLIENTS}`]: rateRatio(
            "http",
            "direct",
          ),
          [`ours / direct GET, raw ${LEGACY_REVISION}, calls/s at ${HTTP_CLIENTS}`]: rateRatio(
            "http2025",
            "direct",
          ),
          [`ours / direct GET, raw ${MODERN_REVISION}, calls/s at ${HTTP_CLIENTS}`]: rateRatio(
            "http2026",
            "direct",
          ),
          [`floor / direct GET, calls/s at ${HTTP_CLIENTS}`]: rateRatio("floor", "direct"),
        },
      };
    } finally {
      await Promise.all([...httpClients, ...refClients].map((client) => client.close()));
      await Promise.all([direct.close(), ...Object.values(raw).map((caller) => caller.close())]);
      await stdio.close();
      await Promise.all([httpServer.stop(), refServer.stop(), floorServer.stop()]);
    }
  }

  // --- upload --------------------------------------------------------------------------------------------
  if (want("upload")) {
    log(`upload: ${N.uploadRounds} uploads of a PNG just under 10 MiB`);
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
  if (want("memory")) {
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
  }

  // --- image previews --------------------------------------------------------------------------------------
  if (want("previews")) {
    log(
      `previews: generate_image on vs off at 1k/2k/4k, ${N.previewRounds} rounds x ${N.previewCalls} pairs`,
    );
    results.previews = await previewsBench(serverEnv, {
      rounds: N.previewRounds,
      calls: N.previewCalls,
      log,
    });
  }

  // --- frame sheets of finished videos -------------------------------------------------------------------
  if (want("frames")) {
    log(
      `frames: get_status of a fresh video, sheet on vs off, ${N.framesRounds} rounds x ${N.framesCalls} pairs`,
    );
    results.frames = await framesBench(serverEnv, { rounds: N.framesRounds, calls: N.framesCalls, tmp, log });
  }
} finally {
  await sandbox?.close();
}

// --- waiting ---------------------------------------------------------------------------------------------
if (want("waiting")) {
  log(
    `waiting: K = ${WAIT.ks.join(", ")} x ${N.waitRounds} rounds, 60 requests per ${WAIT.windowMs} ms, poll every ${WAIT.intervalMs} ms`,
  );
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
if (want("replicas")) {
  log(
    `replicas: K = ${REPLICAS.ks.join(", ")} over ${REPLICAS.replicaCounts.join(", ")} replicas, one Redis`,
  );
  results.replicas = await replicasBench({
    ...REPLICAS,
    windowMs: WAIT.windowMs,
    intervalMs: WAIT.intervalMs,
    log,
  });
}

// --- OAuth token validation, in process --------------------------------------------------------------------
if (want("oauth")) {
  log(`oauth: ${N.oauthRounds} rounds x ${N.oauthIterations} token checks, keys cached`);
  results.oauth = await oauthBench({ rounds: N.oauthRounds, iterations: N.oauthIterations, log });
}

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
const yes = (ok) => (ok ? "yes" : "NO");

const cs = r.coldStart;
if (cs !== undefined) {
  const peerNames = Object.keys(cs.targets).filter((n) => cs.targets[n].peer);
  for (const [name, t] of Object.entries(cs.targets)) row("cold start (ms)", name, t.ms, ms1);
  const vsMinimal = cs.ratios["generation-mcp / minimal SDK server"];
  row(
    "cold start ratio",
    "generation-mcp / minimal SDK v2 server (Server + StdioServerTransport)",
    vsMinimal,
    x2,
    `<= ${GOALS.coldVsMinimal}x`,
    yes(vsMinimal.median <= GOALS.coldVsMinimal),
  );
  row(
    "cold start ratio",
    "generation-mcp / minimal SDK v2 server on serveStdio",
    cs.ratios["generation-mcp / minimal SDK v2 server on serveStdio"],
    x2,
  );
  row(
    "cold start ratio",
    "generation-mcp / minimal SDK v1 server",
    cs.ratios["generation-mcp / minimal SDK v1 server"],
    x2,
  );
  for (const n of peerNames) {
    const ratio = cs.ratios[`generation-mcp / ${n}`];
    const fastest = n === cs.fastestPeer;
    row(
      "cold start ratio",
      `generation-mcp / ${n}${fastest ? " (fastest peer)" : ""}`,
      ratio,
      x2,
      fastest ? `<= ${GOALS.coldVsFastestPeer}x` : "",
      fastest ? yes(ratio.median <= GOALS.coldVsFastestPeer) : "",
    );
  }
  row("cold start ratio", "generation-mcp / bare node", cs.ratios["generation-mcp / bare node"], x2);
  row(
    "cold start ratio",
    "minimal SDK v2 server / bare node",
    cs.ratios["minimal SDK server / bare node"],
    x2,
  );
  row(
    "cold start ratio",
    "generation-mcp unbundled / bare node",
    cs.ratios["generation-mcp unbundled / bare node"],
    x2,
  );
}

const co = r.callOverhead;
if (co !== undefined) {
  row(
    "get_credits",
    "added latency p50 (MCP - direct HTTP), ms",
    co.addedP50Ms,
    ms2,
    `< ${GOALS.addedP50Ms} ms`,
    yes(co.addedP50Ms.median < GOALS.addedP50Ms),
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
}

const ho = r.httpOverhead;
if (ho !== undefined) {
  const sec = "get_credits HTTP";
  const rps = (v) => fmtNum(v, 0);
  const count = (v) => fmtNum(v, 0);
  const addedGoal = `< ${GOALS.addedP50Ms} ms`;
  const labels = [
    ["http2025", `ours, raw ${LEGACY_REVISION} client`],
    ["http2026", `ours, raw ${MODERN_REVISION} client`],
    ["http", `ours, SDK v1 client (${LEGACY_REVISION})`],
    ["ref2025", `minimal SDK v2 proxy, raw ${LEGACY_REVISION} client`],
    ["ref2026", `minimal SDK v2 proxy, raw ${MODERN_REVISION} client`],
    ["ref", `minimal SDK v2 proxy, SDK v1 client (${LEGACY_REVISION})`],
    ["floor", "bare node:http proxy (floor), raw client"],
    ["stdio", "stdio MCP, SDK v1 client"],
    ["direct", "direct GET"],
  ];
  // The server's own added latency (raw clients) has the goal; the SDK client's figure adds its own cost.
  for (const [name, label] of labels.filter(([name]) => name !== "direct")) {
    const goal = name === "http2025" || name === "http2026";
    row(
      sec,
      `HTTP added latency p50 (MCP - direct GET), ${label}, ms`,
      ho[name].addedP50Ms,
      ms2,
      goal ? addedGoal : "",
      goal ? yes(ho[name].addedP50Ms.median < GOALS.addedP50Ms) : "",
    );
  }
  for (const [name, label] of labels.filter(([name]) => name !== "direct")) {
    row(sec, `added latency p99, ${label}, ms`, ho[name].addedP99Ms, ms2);
  }
  row(sec, "HTTP MCP (SDK client) - stdio MCP p50, ms", ho.httpOverStdioP50Ms, ms2);
  const ratioGoal = `>= ${GOALS.httpVsMinimalAt32}x`;
  const clientLabel = (client) =>
    client.startsWith("raw") ? `${client} client` : `SDK v1 client (${LEGACY_REVISION})`;
  for (const client of [
    `raw ${LEGACY_REVISION}`,
    `raw ${MODERN_REVISION}`,
    `SDK client ${LEGACY_REVISION}`,
  ]) {
    const ratio = ho.ratios[`ours / minimal SDK, ${client}, calls/s at ${HTTP_CLIENTS}`];
    row(
      sec,
      `calls/s at ${HTTP_CLIENTS} clients, ours / minimal SDK v2 proxy, ${clientLabel(client)}`,
      ratio,
      x2,
      ratioGoal,
      yes(ratio.median >= GOALS.httpVsMinimalAt32),
    );
  }
  for (const client of [
    `raw ${LEGACY_REVISION}`,
    `raw ${MODERN_REVISION}`,
    `SDK client ${LEGACY_REVISION}`,
  ]) {
    row(
      sec,
      `calls/s at ${HTTP_CLIENTS} clients, ours / direct GET, ${clientLabel(client)}`,
      ho.ratios[`ours / direct GET, ${client}, calls/s at ${HTTP_CLIENTS}`],
      x2,
    );
  }
  row(
    sec,
    `calls/s at ${HTTP_CLIENTS} clients, floor / direct GET`,
    ho.ratios[`floor / direct GET, calls/s at ${HTTP_CLIENTS}`],
    x2,
  );
  for (const [name, label] of labels) {
    const s = ho[name];
    row(sec, `${label}: p50, ms`, s.p50Ms, ms2);
    row(sec, `${label}: p99, ms`, s.p99Ms, ms2);
    row(sec, `${label}: calls/s, 1 client`, s.callsPerS1, rps);
    row(sec, `${label}: calls/s, ${HTTP_CLIENTS} clients`, s[`callsPerS${HTTP_CLIENTS}`], rps);
  }
  for (const [name, label] of labels) {
    const ours = name.startsWith("http");
    const atN = ho[name][`errorsAt${HTTP_CLIENTS}`];
    row(sec, `${label}: errors per round, 1 client`, ho[name].errorsAt1, count);
    row(
      sec,
      `${label}: errors per round, ${HTTP_CLIENTS} clients`,
      atN,
      count,
      ours ? "0" : "",
      ours ? yes(atN.max === 0) : "",
    );
  }
}

for (const [k, sides] of Object.entries(r.waiting?.byK ?? {})) {
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
      isOurs ? yes(s.http429.max === 0) : "",
    );
    row(
      sec,
      `detection delay median, ms (interval ${WAIT.intervalMs})`,
      s.delayP50Ms,
      (v) => fmtNum(v, 0),
      isOurs ? `<= ${WAIT.intervalMs}` : "",
      isOurs ? yes(s.delayP50Ms.median <= WAIT.intervalMs) : "",
    );
    row(sec, "detection delay p95, ms", s.delayP95Ms, (v) => fmtNum(v, 0));
  }
}

const up = r.upload;
if (up !== undefined) {
  row("upload_image 10 MiB", `throughput, MiB/s (file ${up.fileBytes} bytes)`, up.mibPerS, (v) =>
    fmtNum(v, 1),
  );
  row("upload_image 10 MiB", "call time, ms", up.ms, (v) => fmtNum(v, 0));
  row("upload_image 10 MiB", "peak RSS growth", up.peakRssGrowthBytes, mib);
  row(
    "upload_image 10 MiB",
    "peak RSS growth / file size",
    up.peakRssGrowthShareOfFile,
    x2,
    "far below 1x",
    yes(up.peakRssGrowthShareOfFile.median < 0.5),
  );
}
const me = r.memory;
if (me !== undefined) {
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
    yes(Math.abs(h.heapTrendMiBPer1000Calls.median) < 0.5),
  );
  row(
    "memory (full GC forced)",
    `RSS trend, calls ${me.trendFrom}-${me.calls} (MiB per 1,000 calls)`,
    h.trendMiBPer1000Calls,
    ms2,
  );
}
const oa = r.oauth;
if (oa !== undefined) {
  const ms4 = (v) => fmtNum(v, 4);
  row(
    "OAuth token check",
    "added latency p50 (authenticate - empty async), keys cached, ms",
    oa.addedP50Ms,
    ms4,
    `< ${GOALS.oauthAddedP50Ms} ms`,
    yes(oa.addedP50Ms.median < GOALS.oauthAddedP50Ms),
  );
  row("OAuth token check", "authenticate p95, ms", oa.oauthP95Ms, ms4);
  row("OAuth token check", "gateway token check p50 (gatewayAuth), ms", oa.gatewayP50Ms, ms4);
}
const elapsedS = (Date.now() - started) / 1000;
const output = {
  command:
    process.env.BENCH_ONLY !== undefined
      ? `BENCH_ONLY=${ONLY.join(",")} node bench/run.mjs`
      : flags.quick
        ? "npm run bench:quick"
        : "npm run bench",
  quick: QUICK,
  ...(ONLY !== undefined && { only: ONLY }),
  machine,
  repetitions: N,
  waitingScale: WAIT,
  goals: {
    coldStartVsMinimalSdkV2: `<= ${GOALS.coldVsMinimal}x`,
    coldStartVsFastestPeer: `<= ${GOALS.coldVsFastestPeer}x`,
    addedLatencyP50: `< ${GOALS.addedP50Ms} ms (stdio and HTTP, over a direct GET of the same endpoint)`,
    httpCallsPerSVsMinimalSdkV2: `>= ${GOALS.httpVsMinimalAt32}x at ${HTTP_CLIENTS} clients`,
    oauthAddedP50: `< ${GOALS.oauthAddedP50Ms} ms (an access token checked, keys cached)`,
  },
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
process.stdout.write(`\n${ONLY === undefined ? benchReport(output) : benchTable(output.table)}\n`);
for (const file of saveResults(output, { root: ROOT, record: flags.record === true })) {
  log(`wrote ${path.relative(ROOT, file)}`);
}
if (!flags.record) {
  log("not recorded: the committed results and README are unchanged (to replace them: npm run bench:record)");
}
