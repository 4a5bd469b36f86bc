/**
 * Per-call overhead of MCP Streamable HTTP (`--http`, passthrough auth: every request carries the caller's
 * service key) against the same `get_credits` through a minimal MCP SDK v2 server that proxies the same
 * GET (bench/min-sdk-server.mjs), the same call over stdio, and a direct GET of the sandbox, all in one round
 * so they see the same machine load: latency interleaved call by call at concurrency 1, then calls/s at
 * concurrency 1 and 32.
 *
 * Over HTTP, each against both servers:
 * - 2025-11-25 with the SDK v1 `Client` + `StreamableHTTPClientTransport`, what most clients send today
 *   (initialize once, then one POST per call). 32 clients are 32 separate Client + transport instances,
 *   one call in flight each (what 32 remote clients do). The figure includes the client's own cost.
 * - 2025-11-25 and 2026-07-28 with raw clients (undici, one keep-alive pool, 32 requests in flight), sending
 *   what the revision says (2025: initialize once, then MCP-Protocol-Version and Mcp-Session-Id on every
 *   call; 2026: the `_meta` envelope and the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers on every
 *   POST). No SDK client in the loop, so the figure is the servers' own cost.
 * - the floor: a bare node:http JSON-RPC proxy with no MCP SDK, the least any HTTP proxy of this GET costs.
 *
 * Over stdio, one client with 32 calls in flight, since a stdio server has one client by construction;
 * direct, 32 requests in flight on one keep-alive pool.
 */
import { spawn } from "node:child_process";
import { setMaxListeners } from "node:events";
import { clearTimeout, setTimeout } from "node:timers";
import { URL } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Agent, request } from "undici";
import { now, quantile } from "./lib.mjs";
import { BIN } from "./mcp.mjs";

const START_LIMIT_MS = 15_000;
const STOP_LIMIT_MS = 10_000;

/**
 * Spawns the bin with `--http --port 0` and waits for its "serving MCP at <url>" line. env: the server's
 * variables (PATH added); it must not hold GENERATION_API_KEY, which passthrough mode refuses. `nodeArgs`:
 * flags for node itself (e.g. --cpu-prof to see where the time goes); `bin`: another build's cli.js.
 */
export function startHttpServer(env, { nodeArgs = [], bin = BIN } = {}) {
  return spawnServer(
    [...nodeArgs, bin, "--http", "--port", "0"],
    env,
    /serving MCP at (http:\/\/\S+\/mcp)/,
    "--http",
  );
}

/**
 * Spawns the minimal MCP SDK v2 HTTP proxy (bench/min-sdk-server.mjs) in front of `upstream` (the service's
 * base URL) and waits for its "listening at <url>" line.
 */
export function startMinimalHttpProxy(entry, upstream, { nodeArgs = [] } = {}) {
  return spawnServer(
    [...nodeArgs, entry],
    { UPSTREAM: upstream, PORT: "0" },
    /listening at (http:\/\/\S+\/mcp)/,
    "minimal SDK proxy",
  );
}

async function spawnServer(args, env, ready, name) {
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal)));
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${name}: no "${ready.source}" line:\n${stderr}`)),
      START_LIMIT_MS,
    );
    child.stderr.setEncoding("utf8").on("data", (chunk) => {
      // Kept short: only read when the server fails to start.
      stderr = (stderr + chunk).slice(-10_000);
      const found = ready.exec(stderr)?.[1];
      if (found !== undefined) {
        clearTimeout(timer);
        resolve(found);
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${name} server exited (${code}) before serving:\n${stderr}`));
    });
  });
  return {
    url,
    pid: child.pid,
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

export const MODERN_REVISION = "2026-07-28";
export const LEGACY_REVISION = "2025-11-25";

/**
 * A raw 2026-07-28 client of `url`: `get_credits` as one POST with the revision's envelope and headers, on a
 * keep-alive pool of up to `connections`. call() is true when answered 200 with a result that is not an
 * error (JSON, or SSE when the server streams).
 */
export function modernCaller(url, key, connections) {
  const meta = {
    "io.modelcontextprotocol/protocolVersion": MODERN_REVISION,
    "io.modelcontextprotocol/clientInfo": { name: "generation-mcp-bench-2026", version: "1.0.0" },
    "io.modelcontextprotocol/clientCapabilities": {},
  };
  return rawCaller(url, connections, {
    headers: {
      authorization: `Bearer ${key}`,
      "mcp-protocol-version": MODERN_REVISION,
      "mcp-method": "tools/call",
      "mcp-name": "get_credits",
    },
    params: { name: "get_credits", arguments: {}, _meta: meta },
  });
}

/**
 * A raw 2025-11-25 client of `url`, sending what the SDK's client sends, without its own cost: `initialize`
 * and `notifications/initialized` once (open()), then `get_credits` as one POST per call with the
 * MCP-Protocol-Version header and the Mcp-Session-Id the server gave, if any.
 */
export async function legacyCaller(url, key, connections) {
  const headers = { authorization: `Bearer ${key}` };
  const caller = rawCaller(url, connections, {
    headers,
    params: { name: "get_credits", arguments: {} },
  });
  const opened = await caller.post("initialize", {
    protocolVersion: LEGACY_REVISION,
    capabilities: {},
    clientInfo: { name: "generation-mcp-bench-2025", version: "1.0.0" },
  });
  if (opened.statusCode !== 200) throw new Error(`initialize: HTTP ${opened.statusCode}`);
  headers["mcp-protocol-version"] = LEGACY_REVISION;
  const session = opened.headers["mcp-session-id"];
  if (typeof session === "string") headers["mcp-session-id"] = session;
  await caller.post("notifications/initialized");
  return caller;
}

function rawCaller(url, connections, { headers, params }) {
  const agent = new Agent({ keepAliveTimeout: 10_000, connections });
  const all = () => ({
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    ...headers,
  });
  let nextId = 0;
  return {
    /** One JSON-RPC message (a request unless `notification`); resolves with the status, headers and body. */
    async post(method, messageParams, notification = method.startsWith("notifications/")) {
      const id = notification ? undefined : ++nextId;
      const body = JSON.stringify({
        jsonrpc: "2.0",
        ...(id !== undefined && { id }),
        method,
        params: messageParams,
      });
      const res = await request(url, { method: "POST", dispatcher: agent, headers: all(), body });
      return { statusCode: res.statusCode, headers: res.headers, id, text: await res.body.text() };
    },
    async call() {
      const id = ++nextId;
      const body = JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params });
      try {
        const res = await request(url, { method: "POST", dispatcher: agent, headers: all(), body });
        const text = await res.body.text();
        if (res.statusCode !== 200) return false;
        const answer = responseOf(text, id);
        return answer?.result !== undefined && answer.result.isError !== true;
      } catch {
        return false;
      }
    },
    close: () => agent.close(),
  };
}

/** The JSON-RPC response with `id` in a JSON or SSE body. */
function responseOf(text, id) {
  const trimmed = text.trimStart();
  const messages = trimmed.startsWith("{")
    ? [JSON.parse(trimmed)]
    : trimmed
        .split("\n")
        .filter((line) => line.startsWith("data:") && line.slice(5).trim() !== "")
        .map((line) => JSON.parse(line.slice(5)));
  return messages.find((message) => message.id === id);
}

/**
 * The paths, each a function of the caller's index: `direct` the shared keep-alive pool (it throws on a
 * non-200); `stdio` its one client for every caller; over HTTP, `http` (ours) and `ref` (the minimal SDK
 * proxy) with 2025-11-25 SDK clients (client `i` of each list), and every raw caller given in `raw`
 * (name -> caller). Paths given no client are left out.
 */
export function paths({ httpClients, refClients, raw = {}, stdioClient, direct }) {
  const byPath = {
    direct: async () => {
      try {
        await direct.get();
        return true;
      } catch {
        return false;
      }
    },
  };
  if (stdioClient !== undefined) byPath.stdio = () => mcpCredits(stdioClient);
  if (httpClients?.length > 0) byPath.http = (i) => mcpCredits(httpClients[i % httpClients.length]);
  if (refClients?.length > 0) byPath.ref = (i) => mcpCredits(refClients[i % refClients.length]);
  for (const [name, caller] of Object.entries(raw)) byPath[name] = () => caller.call();
  return byPath;
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
 * The paths of tuple `i` in a shuffled order (seeded by `i`, so every run shuffles alike): a path that always
 * came right after the same one inherited its aftermath; the raw call right after an SDK client's call
 * measured about 0.2 ms slower than in any other place.
 */
function shuffled(names, i) {
  let seed = (i + 1) * 0x9e3779b1;
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const order = [...names];
  for (let k = order.length - 1; k > 0; k--) {
    const j = Math.floor(random() * (k + 1));
    [order[k], order[j]] = [order[j], order[k]];
  }
  return order;
}

/**
 * One round: `calls` interleaved tuples (one call of every path, in an order shuffled per tuple) at
 * concurrency 1 for latency, then
 * calls/s of each path at concurrency 1 and `concurrency`. Errors are counted per path at concurrency 1
 * (latency and throughput calls) and at `concurrency`. Added latencies are against the direct GET.
 */
export async function httpOverheadRound(byPath, { calls, throughputCalls, concurrency }) {
  const names = Object.keys(byPath);
  const times = Object.fromEntries(names.map((n) => [n, []]));
  const errors1 = Object.fromEntries(names.map((n) => [n, 0]));
  for (let i = 0; i < calls; i++) {
    for (const name of shuffled(names, i)) {
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
  const added = {};
  for (const name of names.filter((n) => n !== "direct")) {
    added[name] = {
      p50: out[name].p50 - out.direct.p50,
      p99: out[name].p99 - out.direct.p99,
    };
  }
  return {
    ...out,
    added,
    httpAddedP50: added.http?.p50,
    httpAddedP99: added.http?.p99,
    stdioAddedP50: added.stdio?.p50,
    stdioAddedP99: added.stdio?.p99,
    httpOverStdioP50: out.http !== undefined && out.stdio !== undefined ? out.http.p50 - out.stdio.p50 : NaN,
  };
}
