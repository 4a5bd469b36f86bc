/**
 * What the red-team tests (test/e2e/tenancy/*.test.ts) need beyond an MCP client: raw JSON-RPC posts
 * with any bearer, raw connections, a process's resident memory, everything a Redis holds, and every file
 * under a folder.
 */
import { appendFileSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { connect as connectSocket, type Socket } from "node:net";
import path from "node:path";
import { Redis } from "ioredis";
import type { SandboxAccount, SandboxHandle, SandboxRoute } from "../../src/sandbox/types.js";

export interface RawAnswer {
  status: number;
  headers: Headers;
  text: string;
  /** The JSON-RPC message(s) of the answer, from JSON or from SSE `data:` lines. */
  messages: Array<Record<string, unknown>>;
}

let nextId = 1;

/** One JSON-RPC request (or a raw body) POSTed to `/mcp` with `bearer`, as a client that wrote it by hand. */
export async function rpc(
  url: string,
  bearer: string | undefined,
  method: string,
  params: Record<string, unknown> = {},
  options: { headers?: Record<string, string>; signal?: AbortSignal; body?: string } = {},
): Promise<RawAnswer> {
  const body = options.body ?? JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params });
  const response = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
      ...(bearer !== undefined && { authorization: `Bearer ${bearer}` }),
      ...options.headers,
    },
    body,
    ...(options.signal && { signal: options.signal }),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, messages: parseMessages(text) };
}

function parseMessages(text: string): Array<Record<string, unknown>> {
  const trimmed = text.trim();
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
    try {
      const parsed = JSON.parse(trimmed) as unknown;
      return (Array.isArray(parsed) ? parsed : [parsed]) as Array<Record<string, unknown>>;
    } catch {
      return [];
    }
  }
  return trimmed
    .split("\n")
    .filter((line) => line.startsWith("data:"))
    .map((line) => JSON.parse(line.slice(5)) as Record<string, unknown>);
}

/** The result of the answer's JSON-RPC response (the last message with an id). */
export function resultOf(answer: RawAnswer): Record<string, unknown> | undefined {
  const response = answer.messages.filter((message) => "result" in message || "error" in message).at(-1);
  return response?.["result"] as Record<string, unknown> | undefined;
}

export function errorOf(answer: RawAnswer): { code: number; message: string } | undefined {
  const response = answer.messages.filter((message) => "error" in message).at(-1);
  return response?.["error"] as { code: number; message: string } | undefined;
}

/** Resident memory of a process in MiB, from /proc (Linux). */
export async function rssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1] ?? "NaN");
  return kb / 1024;
}

/**
 * The live JavaScript heap of a process started with `heapSnapshotEnv(dir)`, in MiB: it writes a heap
 * snapshot (after a full garbage collection) on SIGUSR2, and the size of every object still alive is summed.
 * Unlike RSS, this does not depend on when the collector last ran.
 */
export async function liveHeapMiB(pid: number, dir: string): Promise<number> {
  const before = new Set(await readdir(dir).catch(() => [] as string[]));
  process.kill(pid, "SIGUSR2");
  let file: string | undefined;
  let snapshot: { snapshot: { meta: { node_fields: string[] } }; nodes: number[] } | undefined;
  // Written while we look: a file that does not parse yet is still being written (a loaded machine may
  // pause the writer longer than any fixed wait), so it is read again until it parses.
  for (let waited = 0; snapshot === undefined && waited < 60_000; waited += 200) {
    await sleep(200);
    file ??= (await readdir(dir)).find((name) => name.endsWith(".heapsnapshot") && !before.has(name));
    if (file === undefined) continue;
    try {
      snapshot = JSON.parse(await readFile(path.join(dir, file), "utf8")) as typeof snapshot;
    } catch (error) {
      if (!(error instanceof SyntaxError)) throw error;
    }
  }
  if (snapshot === undefined) throw new Error(`no whole heap snapshot was written (${file ?? "none"})`);
  const fields = snapshot.snapshot.meta.node_fields;
  const selfSize = fields.indexOf("self_size");
  let total = 0;
  for (let at = selfSize; at < snapshot.nodes.length; at += fields.length) total += snapshot.nodes[at] ?? 0;
  return total / 1024 / 1024;
}

/** The environment that lets `liveHeapMiB` ask a process for heap snapshots, written into `dir`. */
export function heapSnapshotEnv(dir: string): Record<string, string> {
  return { NODE_OPTIONS: `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${dir}` };
}

/** Every key a Redis holds, with its value as text (strings, hashes, sorted sets, sets, lists). */
export async function redisDump(url: string): Promise<Map<string, string>> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  try {
    const dump = new Map<string, string>();
    for (const key of await redis.keys("*")) {
      const type = await redis.type(key);
      const value =
        type === "string"
          ? await redis.get(key)
          : type === "hash"
            ? JSON.stringify(await redis.hgetall(key))
            : type === "zset"
              ? JSON.stringify(await redis.zrange(key, "0", "-1", "WITHSCORES"))
              : type === "set"
                ? JSON.stringify(await redis.smembers(key))
                : type === "list"
                  ? JSON.stringify(await redis.lrange(key, 0, -1))
                  : `(${type})`;
      dump.set(key, value ?? "");
    }
    return dump;
  } finally {
    redis.disconnect();
  }
}

/** Every file under `dir` (relative paths) with its content; empty when the folder does not exist. */
export async function filesUnder(dir: string): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  const walk = async (at: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(at, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const full = path.join(at, entry.name);
      if (entry.isDirectory()) await walk(full);
      else found.set(path.relative(dir, full), await readFile(full, "utf8").catch(() => ""));
    }
  };
  await walk(dir);
  return found;
}

/**
 * Requests the sandbox received on `route` (its request log), valid key or not. For "generate", these are the
 * starts sent: what a caller would be charged for.
 */
export function serviceRequests(sandbox: SandboxHandle, route: SandboxRoute): number {
  return sandbox.requests.filter((request) => request.route === route).length;
}

/** Starts sent to the sandbox (video generations), each a charge. */
export const startsSent = (sandbox: SandboxHandle): number => serviceRequests(sandbox, "generate");

/** An account with plenty of credits and paid access, under a key of its own. */
export function tenant(name: string, key: string): SandboxAccount {
  return { key, name, credits: 100_000, paidAccess: true, subscription: "pro" };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once `condition` holds, polling; rejects with `what` after `limitMs`. */
export async function until(condition: () => boolean | Promise<boolean>, what: string, limitMs = 20_000) {
  const deadline = Date.now() + limitMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/**
 * How many times the CI counts an attack runs (RED_TEAM_SCALE, default 1): README's Security section gives
 * the figures of a CI run and of a run by hand at a larger scale.
 */
export const SCALE = Math.max(1, Number(process.env["RED_TEAM_SCALE"] ?? "1") || 1);

/** Records an attack's figures: a line on stderr, and one in RED_TEAM_REPORT's file when it is set. */
export function report(attack: string, figures: Record<string, number | string>): void {
  const rounded = Object.fromEntries(
    Object.entries(figures).map(([key, value]) => [
      key,
      typeof value === "number" ? Math.round(value * 10) / 10 : value,
    ]),
  );
  const line = JSON.stringify({ attack, scale: SCALE, ...rounded });
  process.stderr.write(`[red-team] ${line}\n`);
  const file = process.env["RED_TEAM_REPORT"];
  if (file !== undefined && file !== "") appendFileSync(file, `${line}\n`);
}

/** A raw TCP connection to 127.0.0.1:`port`, for writing HTTP by hand; `closed` resolves with its close time. */
export function rawConnection(
  port: number,
): Promise<{ socket: Socket; closed: Promise<number>; data: () => string }> {
  return new Promise((resolve, reject) => {
    const socket = connectSocket(port, "127.0.0.1");
    let data = "";
    socket.setEncoding("utf8").on("data", (chunk: string) => (data += chunk));
    socket.on("error", () => undefined);
    const closed = new Promise<number>((done) => socket.once("close", () => done(Date.now())));
    socket.once("connect", () => resolve({ socket, closed, data: () => data }));
    socket.once("error", reject);
  });
}
