/**
 * The built bin spawned with raw pipes: the test writes JSON-RPC lines itself (any size, any order) and
 * sees stdout byte for byte, so it can check what the server writes first and that every line is JSON.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { CLI } from "../helpers/stdio.js";

export type Message = Record<string, unknown> & { id?: unknown; method?: string };

export interface RawSession {
  child: ChildProcessWithoutNullStreams;
  /** Every complete line written on stdout, parsed; lines that are not JSON are in `badLines`. */
  messages: Message[];
  badLines: string[];
  /** Everything written on stdout so far, exactly. */
  stdout(): string;
  stderr(): string;
  /** Writes one line (an object is serialized; a string or Buffer is written as is, plus "\n"). */
  write(line: Message | string | Buffer): Promise<void>;
  /** Sends a request and resolves with the response for its id. */
  request(method: string, params?: Record<string, unknown>, timeoutMs?: number): Promise<Message>;
  /** initialize, then notifications/initialized. */
  initialize(): Promise<Message>;
  waitFor(check: () => boolean, what: string, timeoutMs?: number): Promise<void>;
  /** Ends stdin and resolves with the exit code. */
  close(): Promise<number | null>;
}

/** `nodeArgs`: Node's own options, before the bin (e.g. `--import` of a preload). */
export function spawnRaw(args: string[], env: Record<string, string>, nodeArgs: string[] = []): RawSession {
  const child = spawn(process.execPath, [...nodeArgs, CLI, ...args], {
    env: { PATH: process.env["PATH"] ?? "", HOME: env["HOME"] ?? process.env["HOME"] ?? "/tmp", ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  let pending = "";
  const messages: Message[] = [];
  const badLines: string[] = [];
  child.stdout.setEncoding("utf8");
  child.stderr.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    out += chunk;
    pending += chunk;
    let newline = pending.indexOf("\n");
    while (newline !== -1) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      try {
        const parsed = JSON.parse(line) as unknown;
        if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) {
          messages.push(parsed as Message);
        } else badLines.push(line);
      } catch {
        badLines.push(line);
      }
      newline = pending.indexOf("\n");
    }
  });
  child.stderr.on("data", (chunk: string) => {
    err += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  let nextId = 1;

  const waitFor = async (check: () => boolean, what: string, timeoutMs = 15_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; stderr:\n${err}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  const write = (line: Message | string | Buffer) =>
    new Promise<void>((resolve, reject) => {
      const text = typeof line === "string" || Buffer.isBuffer(line) ? line : JSON.stringify(line);
      child.stdin.write(text);
      child.stdin.write("\n", (error) => (error ? reject(error) : resolve()));
    });
  const request = async (method: string, params: Record<string, unknown> = {}, timeoutMs = 30_000) => {
    const id = nextId++;
    await write({ jsonrpc: "2.0", id, method, params });
    let answer: Message | undefined;
    await waitFor(
      () => (answer = messages.find((message) => message.id === id && !("method" in message))) !== undefined,
      `the answer to ${method} (id ${id})`,
      timeoutMs,
    );
    return answer as Message;
  };

  return {
    child,
    messages,
    badLines,
    stdout: () => out,
    stderr: () => err,
    write,
    request,
    async initialize() {
      const result = await request("initialize", {
        protocolVersion: LATEST_PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: { name: "raw-e2e", version: "1.0.0" },
      });
      await write({ jsonrpc: "2.0", method: "notifications/initialized" });
      return result;
    },
    waitFor,
    async close() {
      child.stdin.end();
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}
