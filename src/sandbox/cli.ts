/** `generation-mcp sandbox [--port N] [--host H]`: only the sandbox REST service; all output on stderr. */
import { realpathSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { DEMO_TIMINGS, startSandbox } from "./index.js";
import type { SandboxHandle } from "./types.js";

export const SANDBOX_USAGE = `Usage: generation-mcp sandbox [--port N] [--host H]

Runs a local copy of the generation service's REST interface until interrupted (Ctrl+C).

Options:
  --port N   port to listen on (default 0: any free port)
  --host H   address to listen on (default 127.0.0.1)
  --help     show this help
`;

export class SandboxUsageError extends Error {
  override name = "SandboxUsageError";
}

/** The sandbox could not listen where it was asked to. Its message is one line, printed as is. */
export class SandboxStartError extends Error {
  override name = "SandboxStartError";
  // The stack says nothing a user can act on; an entry point that prints `stack` prints the one line.
  override stack = this.message;
}

export function parseSandboxArgs(args: readonly string[]): { port: number; host: string; help: boolean } {
  const options = {
    port: { type: "string", default: "0" },
    host: { type: "string", default: "127.0.0.1" },
    help: { type: "boolean", short: "h", default: false },
  } as const;
  let parsed;
  try {
    parsed = parseArgs({ args: [...args], options, strict: true, allowPositionals: false });
  } catch (error) {
    // parseArgs throws only TypeErrors (code ERR_PARSE_ARGS_*).
    throw new SandboxUsageError(`${(error as TypeError).message}\n\n${SANDBOX_USAGE}`);
  }
  const { port, host, help } = parsed.values;
  if (!/^\d+$/.test(port) || Number(port) > 65535)
    throw new SandboxUsageError(`--port must be an integer from 0 to 65535 (got "${port}")`);
  if (host === "") throw new SandboxUsageError("--host needs a value");
  return { port: Number(port), host, help };
}

/** `entryScript`: the bin script; from a clone `generation-mcp` is not on PATH, so `node <script>`. */
export function describeSandbox(handle: SandboxHandle, entryScript: string): string {
  const node = `node ${shellQuote(entryScript)}`;
  return [
    "generation-mcp sandbox is running (a local imitation of the generation service; nothing leaves this machine).",
    "",
    `  Base URL: ${handle.baseUrl}`,
    "",
    "  API keys:",
    ...describeSandboxKeys(handle),
    "",
    "  Try it:",
    `    curl -H "Authorization: Bearer ${handle.keys.paid}" ${handle.baseUrl}/credits`,
    "",
    "  Use it from the MCP server:",
    `    GENERATION_BASE_URL=${handle.baseUrl} GENERATION_API_KEY=${handle.keys.paid} ${node}`,
    `    or skip this sandbox: ${node} --sandbox starts the MCP server on a built-in one (no key needed)`,
    "",
    `  Videos take about ${(DEMO_TIMINGS.queuedMs + DEMO_TIMINGS.processingMs) / 1000} s. Press Ctrl+C to stop.`,
    "",
  ].join("\n");
}

export function describeSandboxKeys(handle: Pick<SandboxHandle, "accounts">): string[] {
  return handle.accounts.map((account) => {
    const plan = account.paidAccess
      ? `paid access, plan ${account.subscription ?? "none"}`
      : "no paid access (lite video model only)";
    return `    ${account.key.padEnd(18)} ${account.name}: ${account.credits} credits, ${plan}`;
  });
}

export interface SandboxCommandIo {
  stderr: { write(text: string): unknown };
  /** Resolves when the process is asked to stop; defaults to the first SIGINT or SIGTERM. */
  stopSignal?: Promise<unknown>;
  /** The bin script shown in the banner's command; defaults to process.argv[1], resolved to a real path. */
  entryScript?: string;
}

/** Resolves once the sandbox is stopped and closed; rejects with SandboxUsageError or SandboxStartError. */
export async function runSandboxCommand(
  args: string[],
  io: SandboxCommandIo = { stderr: process.stderr },
): Promise<void> {
  const { port, host, help } = parseSandboxArgs(args);
  if (help) return void io.stderr.write(SANDBOX_USAGE);
  const handle = await startSandbox({ port, host }).catch((error: unknown) => {
    throw new SandboxStartError(describeListenError(error, host, port), { cause: error });
  });
  io.stderr.write(describeSandbox(handle, io.entryScript ?? currentEntryScript()));
  await (io.stopSignal ?? waitForStopSignal());
  io.stderr.write("Stopping the sandbox.\n");
  await handle.close();
}

function waitForStopSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals): void => {
      process.off("SIGINT", stop).off("SIGTERM", stop);
      resolve(signal);
    };
    process.on("SIGINT", stop).on("SIGTERM", stop);
  });
}

const ANY_PORT_HINT = "choose another with --port N, or --port 0 for any free port";
const HOST_HINT = "use --host 127.0.0.1 (this machine only) or --host 0.0.0.0 (every interface)";

/** One line saying what went wrong and what to type instead; `what` is the server that could not listen. */
export function describeListenError(error: unknown, host: string, port: number, what = "sandbox"): string {
  const code = typeof error === "object" && error !== null && "code" in error ? String(error.code) : "";
  if (code === "EADDRINUSE")
    return `port ${port} on ${host} is already in use (another ${what}?); ${ANY_PORT_HINT}`;
  if (code === "EACCES" || code === "EPERM")
    return `port ${port} on ${host} is not permitted for this user (ports below 1024 usually need privileges); ${ANY_PORT_HINT}`;
  if (code === "EADDRNOTAVAIL")
    return `host ${host} is not an address of this machine, so the ${what} cannot listen on it; ${HOST_HINT}`;
  if (["ENOTFOUND", "EAI_AGAIN", "EAI_NONAME", "EAI_FAIL"].includes(code))
    return `host "${host}" is not a known host name or address; ${HOST_HINT}`;
  const detail = error instanceof Error ? error.message : String(error);
  return `could not listen on ${host} port ${port} (${detail.replace(/\s+/g, " ").trim()})`;
}

function currentEntryScript(): string {
  const script = process.argv[1];
  if (!script) return "generation-mcp";
  try {
    return realpathSync(path.resolve(script));
  } catch {
    return path.resolve(script);
  }
}

/** POSIX shell quoting, only when needed, so the banner's command can be pasted as is. */
export function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
