/**
 * Per-call overhead of MCP Streamable HTTP (`--http`, passthrough auth: every request carries the caller's
 * service key) against the same `get_credits` call over stdio and against a direct GET of the sandbox, all
 * three in one round so they see the same machine load: latency interleaved call by call at concurrency 1,
 * then calls/s at concurrency 1 and 32.
 *
 * 32 concurrent clients: over HTTP, 32 separate SDK Client + transport instances, one call in flight each
 * (what 32 remote clients do); over stdio, one client with 32 calls in flight, since a stdio server has one
 * client by construction; direct, 32 requests in flight on one keep-alive pool.
 */
import { spawn } from "node:child_process";
import { setMaxListeners } from "node:events";
import { clearTimeout, setTimeout } from "node:timers";
import { URL } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { now, quantile } from "./lib.mjs";
import { BIN } from "./mcp.mjs";

const START_LIMIT_MS = 15_000;
const STOP_LIMIT_MS = 10_000;

/**
 * Spawns the bin with `--http --port 0` and waits for its "serving MCP at <url>" line. env: the server's
 * variables (PATH added); it must not hold GENERATION_API_KEY, which passthrough mode refuses.
 */
export async function startHttpServer(env) {
  const child = spawn(process.execPath, [BIN, "--http", "--port", "0"], {
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal)));
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`--http: no "serving MCP at" line:\n${stderr}`)),
      START_LIMIT_MS,
    );
    child.stderr.setEncoding("utf8").on("data", (chunk) => {
      // Kept short: only read when the server fails to start.
      stderr = (stderr + chunk).slice(-10_000);
      const found = /serving MCP at (http:\/\/\S+\/mcp)/.exec(stderr)?.[1];
      if (found !== undefined) {
        clearTimeout(timer);
        resolve(found);
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`--http server exited (${code}) before serving:\n${stderr}`));
    });
  });
  return {
    url,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), STOP_LIMIT_MS);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * fetch for the SDK's transport, which passes one long-lived AbortSignal to every request it sends: undici
 * drops each request's listener on that signal only when the request is garbage-collected, so thousands of
 * quick calls trip Node's MaxListenersExceededWarning although nothing leaks. Lifting the limit on that one
 * signal keeps the bench's stderr readable.
 */
function fetchSharingSignal(url, init) {
  if (init?.signal) setMaxListeners(0, init.signal);
  return globalThis.fetch(url, init);
}

/** `count` independent SDK clients over Streamable HTTP, each sending `Authorization: Bearer <key>`. */
export async function connectHttpClients(url, key, count) {
  const clients = [];
  for (let i = 0; i < count; i++) {
    const transport = new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
      fetch: fetchSharingSignal,
    });
    const client = new Client(
      { name: `generation-mcp-bench-http-${i}`, version: "1.0.0" },
      { capabilities: {} },
    );
    await client.connect(transport);
    clients.push(client);
  }
  return clients;
}

/** get_credits through an MCP client: true when answered without error (isError counts as an error). */
async function mcpCredits(client) {
  try {
    const result = await client.callTool({ name: "get_credits", arguments: {} });
    return result.isError !== true;
  } catch {
    return false;
  }
}

/**
 * The three paths, each a function of the caller's index: `http` uses client `i` of `httpClients`, `stdio`
 * its one client for every caller, `direct` the shared keep-alive pool (it throws on a non-200).
 */
export function paths({ httpClients, stdioClient, direct }) {
  return {
    direct: async () => {
      try {
        await direct.get();
        return true;
      } catch {
        return false;
      }
    },
    stdio: () => mcpCredits(stdioClient),
    http: (i) => mcpCredits(httpClients[i % httpClients.length]),
  };
}

/** `calls` calls issued by `concurrency` callers; calls/s counts the calls answered without error. */
async function rate(call, calls, concurrency) {
  let left = calls;
  let errors = 0;
  const started = now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, caller) => {
      while (left-- > 0) if (!(await call(caller))) errors++;
    }),
  );
  return { callsPerS: (calls - errors) / ((now() - started) / 1000), errors };
}

/** Warms every path up, at concurrency 1 and at the highest concurrency, before anything is measured. */
export async function warmUp(byPath, { calls, concurrency }) {
  for (let i = 0; i < calls; i++) for (const call of Object.values(byPath)) await call(0);
  for (const call of Object.values(byPath)) await rate(call, concurrency * 2, concurrency);
}

/**
 * One round: `calls` interleaved triples (direct, stdio, HTTP) at concurrency 1 for latency, then calls/s of
 * each path at concurrency 1 and `concurrency`. Errors are counted per path at concurrency 1 (latency and
 * throughput calls) and at `concurrency`.
 */
export async function httpOverheadRound(byPath, { calls, throughputCalls, concurrency }) {
  const names = Object.keys(byPath);
  const times = Object.fromEntries(names.map((n) => [n, []]));
  const errors1 = Object.fromEntries(names.map((n) => [n, 0]));
  for (let i = 0; i < calls; i++) {
    for (const name of names) {
      const started = now();
      const ok = await byPath[name](0);
      if (ok) times[name].push(now() - started);
      else errors1[name]++;
    }
  }
  const out = {};
  for (const name of names) {
    const one = await rate(byPath[name], throughputCalls, 1);
    out[name] = {
      p50: quantile(times[name], 0.5),
      p99: quantile(times[name], 0.99),
      callsPerS1: one.callsPerS,
      errors1: errors1[name] + one.errors,
    };
  }
  for (const name of names) {
    const many = await rate(byPath[name], throughputCalls, concurrency);
    Object.assign(out[name], { callsPerSN: many.callsPerS, errorsN: many.errors });
  }
  return {
    ...out,
    httpAddedP50: out.http.p50 - out.direct.p50,
    httpAddedP99: out.http.p99 - out.direct.p99,
    stdioAddedP50: out.stdio.p50 - out.direct.p50,
    stdioAddedP99: out.stdio.p99 - out.direct.p99,
    httpOverStdioP50: out.http.p50 - out.stdio.p50,
  };
}
