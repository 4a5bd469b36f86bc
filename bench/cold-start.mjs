/**
 * Cold start: spawn a server process -> `initialize` answered -> `tools/list` answered, timed from the
 * spawn call to the tools/list answer. Every target gets the same raw JSON-RPC exchange over stdio (no SDK
 * client in the loop, so the client's own cost is not measured), and the runs are interleaved
 * (A, B, C, A, B, C ...) so the machine's noise spreads over all of them.
 */
import { spawn } from "node:child_process";
import { clearTimeout, setTimeout } from "node:timers";
import { now, summary } from "./lib.mjs";

/**
 * The floor: a bare `node -e` process that speaks the same exchange with the least possible code — reads
 * JSON-RPC lines, answers initialize and tools/list (one tool), nothing else.
 */
export const BARE_NODE_SCRIPT = `
let buf = "";
process.stdin.on("data", (chunk) => {
  buf += chunk;
  let i;
  while ((i = buf.indexOf("\\n")) >= 0) {
    const line = buf.slice(0, i); buf = buf.slice(i + 1);
    if (!line.trim()) continue;
    const msg = JSON.parse(line);
    if (msg.id === undefined) continue;
    const result = msg.method === "initialize"
      ? { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "bare", version: "0" } }
      : msg.method === "tools/list"
        ? { tools: [{ name: "noop", inputSchema: { type: "object" } }] }
        : {};
    process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: msg.id, result }) + "\\n");
  }
});
`;

const INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "generation-mcp-bench", version: "1.0.0" },
  },
};
const INITIALIZED = { jsonrpc: "2.0", method: "notifications/initialized" };
const LIST = { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} };

/**
 * One cold start. Resolves with { initMs, totalMs, tools } once tools/list is answered and the process has
 * exited again (so runs never overlap).
 */
export function coldStartOnce(target, timeoutMs = 20_000) {
  return new Promise((resolve, reject) => {
    const t0 = now();
    const child = spawn(target.command, target.args, {
      env: target.env,
      cwd: target.cwd,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    let initMs;
    let totalMs;
    let tools;
    let settled = false;
    const timer = setTimeout(
      () => fail(new Error(`${target.name}: no tools/list answer in ${timeoutMs} ms`)),
      timeoutMs,
    );
    const fail = (error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill("SIGKILL");
      error.message += `\n${err.slice(-2000)}`;
      reject(error);
    };
    child.on("error", fail);
    child.stderr.on("data", (chunk) => {
      err += chunk;
    });
    child.stdout.on("data", (chunk) => {
      out += chunk;
      let i;
      while ((i = out.indexOf("\n")) >= 0) {
        const line = out.slice(0, i);
        out = out.slice(i + 1);
        if (!line.trim()) continue;
        let msg;
        try {
          msg = JSON.parse(line);
        } catch {
          return fail(new Error(`${target.name}: non-JSON on stdout: ${line.slice(0, 200)}`));
        }
        if (msg.id === 1) {
          if (msg.error)
            return fail(new Error(`${target.name}: initialize failed: ${JSON.stringify(msg.error)}`));
          initMs = now() - t0;
          child.stdin.write(JSON.stringify(INITIALIZED) + "\n" + JSON.stringify(LIST) + "\n");
        } else if (msg.id === 2) {
          totalMs = now() - t0;
          tools = msg.result?.tools?.length;
          clearTimeout(timer);
          child.stdin.end();
          // Give it a moment to exit on its own (stdin closed), then make sure.
          const kill = setTimeout(() => child.kill("SIGKILL"), 2000);
          child.once("exit", () => {
            clearTimeout(kill);
            if (!settled) {
              settled = true;
              resolve({ initMs, totalMs, tools });
            }
          });
        }
      }
    });
    child.on("exit", (code, signal) => {
      if (totalMs === undefined)
        fail(new Error(`${target.name}: exited early (code ${code}, signal ${signal})`));
    });
    child.stdin.write(JSON.stringify(INIT) + "\n");
  });
}

/** Interleaved rounds over all targets; a warm-up round first (page cache), not counted. */
export async function measureColdStarts(targets, rounds, onProgress = () => {}) {
  const results = Object.fromEntries(
    targets.map((t) => [t.name, { totalMs: [], initMs: [], tools: undefined }]),
  );
  for (const target of targets) await coldStartOnce(target);
  for (let round = 0; round < rounds; round++) {
    for (const target of targets) {
      const r = await coldStartOnce(target);
      results[target.name].totalMs.push(r.totalMs);
      results[target.name].initMs.push(r.initMs);
      results[target.name].tools = r.tools;
    }
    onProgress(round + 1);
  }
  // Ratios per round (same round = closest in time), then their median.
  const out = {};
  for (const target of targets) {
    const r = results[target.name];
    out[target.name] = { total: summary(r.totalMs), init: summary(r.initMs), tools: r.tools, raw: r.totalMs };
  }
  return out;
}

/** Per-round ratios a/b: the medians of same-round ratios are robust to drifting load. */
export function pairedRatio(aRuns, bRuns) {
  const n = Math.min(aRuns.length, bRuns.length);
  const ratios = [];
  for (let i = 0; i < n; i++) ratios.push(aRuns[i] / bRuns[i]);
  return summary(ratios);
}
