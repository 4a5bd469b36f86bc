/**
 * What the red-team tests (test/security/tenancy-*.test.ts) need beyond an MCP client: raw JSON-RPC posts
 * with any bearer, a process's resident memory, everything a Redis holds, and every file under a folder.
 */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { Redis } from "ioredis";
import type { SandboxAccount } from "../../src/sandbox/types.js";

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
