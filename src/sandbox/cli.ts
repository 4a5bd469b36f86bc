/**
 * `generation-mcp sandbox [--port N] [--host H]`: only the sandbox REST service, for trying the tools or
 * pointing another client at it. Everything goes to stderr; stdout stays free for whoever wraps us.
 */
import { realpathSync } from "node:fs";
import path from "node:path";
import { DEMO_TIMINGS, startSandbox } from "./index.js";
import type { SandboxHandle } from "./types.js";

export const SANDBOX_USAGE = `Usage: generation-mcp sandbox [--port N] [--host H]

Runs a local copy of the generation service's REST interface until interrupted (Ctrl+C).

Options:
  --port N   port to listen on (default 0: any free port)
  --host H   address to listen on (default 127.0.0.1)
  --help     show this help
`;

export interface SandboxCommandOptions {
  port: number;
  host: string;
  help: boolean;
}

export class SandboxUsageError extends Error {
  override name = "SandboxUsageError";
}

/**
 * The sandbox could not listen where it was asked to (port taken or not permitted, host not bindable).
 * Its message is one line meant to be printed as is, without a stack.
 */
export class SandboxStartError extends Error {
  override name = "SandboxStartError";

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    // The stack says nothing a user can act on; an entry point that prints `stack` prints the one line.
    this.stack = message;
  }
}

export function parseSandboxArgs(args: readonly string[]): SandboxCommandOptions {
  const options: SandboxCommandOptions = { port: 0, host: "127.0.0.1", help: false };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? "";
    const [flag, inline] =
      arg.startsWith("--") && arg.includes("=")
        ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)]
        : [arg, undefined];
    const value = (): string => {
      const next = inline ?? args[++i];
      if (next === undefined || next === "") throw new SandboxUsageError(`${flag} needs a value`);
      return next;
    };
    switch (flag) {
      case "--port": {
        const raw = value();
        const port = Number(raw);
        if (!/^\d+$/.test(raw) || port > 65535)
          throw new SandboxUsageError(`--port must be an integer from 0 to 65535 (got "${raw}")`);
        options.port = port;
        break;
      }
      case "--host":
        options.host = value();
        break;
      case "--help":
      case "-h":
        options.help = true;
        break;
      default:
        throw new SandboxUsageError(`unknown option "${arg}"\n\n${SANDBOX_USAGE}`);
    }
  }
  return options;
}

/**
 * `entryScript` is the absolute path of the running bin script: from a clone `generation-mcp` is not on
 * PATH, so the banner shows the `node <script>` command that works from anywhere.
 */
export function describeSandbox(handle: SandboxHandle, entryScript: string): string {
  const node = `node ${shellQuote(entryScript)}`;
  const lines = [
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
  ];
  return lines.join("\n");
}

/** One line per sandbox API key: the key, its account and what it may do. */
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

/**
 * Resolves once the sandbox has been stopped and closed. Usage errors reject with SandboxUsageError; a
 * port or host it cannot listen on rejects with SandboxStartError.
 */
export async function runSandboxCommand(
  args: string[],
  io: SandboxCommandIo = { stderr: process.stderr },
): Promise<void> {
  const options = parseSandboxArgs(args);
  if (options.help) {
    io.stderr.write(SANDBOX_USAGE);
    return;
  }
  let handle: SandboxHandle;
  try {
    handle = await startSandbox({ port: options.port, host: options.host, timings: { ...DEMO_TIMINGS } });
  } catch (error) {
    throw new SandboxStartError(describeListenError(error, options.host, options.port), { cause: error });
  }
  io.stderr.write(describeSandbox(handle, io.entryScript ?? currentEntryScript()));
  await (io.stopSignal ?? waitForStopSignal());
  io.stderr.write("Stopping the sandbox.\n");
  await handle.close();
}

function waitForStopSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals): void => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve(signal);
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}

const ANY_PORT_HINT = "choose another with --port N, or --port 0 for any free port";
const HOST_HINT = "use --host 127.0.0.1 (this machine only) or --host 0.0.0.0 (every interface)";

/** One line saying what went wrong and what to type instead; `what` is the server that could not listen. */
export function describeListenError(error: unknown, host: string, port: number, what = "sandbox"): string {
  const code = typeof error === "object" && error !== null && "code" in error ? String(error.code) : "";
  switch (code) {
    case "EADDRINUSE":
      return `port ${port} on ${host} is already in use (another ${what}?); ${ANY_PORT_HINT}`;
    case "EACCES":
    case "EPERM":
      return `port ${port} on ${host} is not permitted for this user (ports below 1024 usually need privileges); ${ANY_PORT_HINT}`;
    case "EADDRNOTAVAIL":
      return `host ${host} is not an address of this machine, so the ${what} cannot listen on it; ${HOST_HINT}`;
    case "ENOTFOUND":
    case "EAI_AGAIN":
    case "EAI_NONAME":
    case "EAI_FAIL":
      return `host "${host}" is not a known host name or address; ${HOST_HINT}`;
    default: {
      const detail = error instanceof Error ? error.message : String(error);
      return `could not listen on ${host} port ${port} (${detail.replace(/\s+/g, " ").trim()})`;
    }
  }
}

function currentEntryScript(): string {
  const script = process.argv[1];
  if (script === undefined || script === "") return "generation-mcp";
  const absolute = path.resolve(script);
  try {
    return realpathSync(absolute);
  } catch {
    return absolute;
  }
}

/** POSIX shell quoting, only when needed, so the banner's command can be pasted as is. */
export function shellQuote(word: string): string {
  if (/^[\w@%+=:,./-]+$/.test(word)) return word;
  return `'${word.replaceAll("'", `'\\''`)}'`;
}
