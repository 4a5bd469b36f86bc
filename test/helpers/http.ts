/**
 * Starts the built bin in `--http` mode as a real child process (on a free loopback port) and connects the
 * SDK's own Streamable HTTP client to it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import path from "node:path";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { CLI } from "./stdio.js";

export interface HttpServerProcess {
  /** `http://127.0.0.1:<port>/mcp` */
  url: string;
  port: number;
  child: ChildProcess;
  stderr: () => string;
  /** Resolves with the exit code (or signal name) once the process has ended. */
  exited: Promise<number | string | null>;
  /** SIGTERM, then SIGKILL after `limitMs`; resolves when the process is gone. */
  stop(limitMs?: number): Promise<number | string | null>;
}

const START_LIMIT_MS = 15_000;

/** Spawns `generation-mcp --http --port 0 ...args` and waits for its "serving MCP at" line. */
export async function startHttpBin(args: string[], env: Record<string, string>): Promise<HttpServerProcess> {
  const child = spawn(process.execPath, [CLI, "--http", "--port", "0", ...args], {
    env: { PATH: process.env["PATH"] ?? "", HOME: env["HOME"] ?? process.env["HOME"] ?? "/tmp", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  let stdout = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  const exited = new Promise<number | string | null>((resolve) =>
    child.once("exit", (code, signal) => resolve(code ?? signal)),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      // A server that never came up must not outlive the test that started it.
      child.kill("SIGKILL");
      reject(new Error(`no "serving MCP at" line in time:\n${stderr}`));
    }, START_LIMIT_MS);
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
      const found = /serving MCP at (http:\/\/\S+\/mcp)/.exec(stderr)?.[1];
      if (found !== undefined) {
        clearTimeout(timer);
        resolve(found);
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited (${String(code)}) before serving:\n${stderr}`));
    });
  });
  const port = Number(new URL(url).port);
  return {
    url,
    port,
    child,
    stderr: () => (stdout === "" ? stderr : `${stderr}\n[stdout] ${stdout}`),
    exited,
    async stop(limitMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return exited;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), limitMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/**
 * `--http` pointed at a separately started sandbox: HOME and the state folder in `dir`, status polls every
 * `pollMs`; each caller brings its own key.
 */
export function startHttpAgainst(
  sandbox: SandboxHandle,
  dir: string,
  pollMs: number,
  env: Record<string, string> = {},
): Promise<HttpServerProcess> {
  return startHttpBin([], {
    HOME: dir,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_STATE_DIR: path.join(dir, "state"),
    GENERATION_POLL_INTERVAL_MS: String(pollMs),
    ...env,
  });
}

/** An MCP client over Streamable HTTP that sends `Authorization: Bearer <token>` (when given). */
export async function connectHttp(
  url: string,
  token: string | undefined,
  headers: Record<string, string> = {},
): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: {
      headers: token === undefined ? headers : { ...headers, authorization: `Bearer ${token}` },
    },
  });
  const client = new Client({ name: "http-e2e", version: "1.0.0" }, { capabilities: {} });
  await client.connect(transport);
  return client;
}

/** A raw POST to the server, for what an MCP client would never send. */
export async function post(
  url: string,
  body: string | Uint8Array,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; text: string }> {
  const response = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...headers,
    },
    body,
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

export const INITIALIZE = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
});
