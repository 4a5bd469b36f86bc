/**
 * `generation-mcp sandbox [--port N] [--host H]`: only the sandbox REST service, for trying the tools or
 * pointing another client at it. Everything goes to stderr; stdout stays free for whoever wraps us.
 */
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

export function describeSandbox(handle: SandboxHandle): string {
  const lines = [
    "generation-mcp sandbox is running (a local imitation of the generation service; nothing leaves this machine).",
    "",
    `  Base URL: ${handle.baseUrl}`,
    "",
    "  API keys:",
    ...handle.accounts.map((account) => {
      const plan = account.paidAccess
        ? `paid access, plan ${account.subscription ?? "none"}`
        : "no paid access (lite video model only)";
      return `    ${account.key.padEnd(18)} ${account.name}: ${account.credits} credits, ${plan}`;
    }),
    "",
    "  Try it:",
    `    curl -H "Authorization: Bearer ${handle.keys.paid}" ${handle.baseUrl}/credits`,
    "",
    "  Use it from the MCP server:",
    `    GENERATION_BASE_URL=${handle.baseUrl} GENERATION_API_KEY=${handle.keys.paid} generation-mcp`,
    "",
    `  Videos take about ${(DEMO_TIMINGS.queuedMs + DEMO_TIMINGS.processingMs) / 1000} s. Press Ctrl+C to stop.`,
    "",
  ];
  return lines.join("\n");
}

export interface SandboxCommandIo {
  stderr: { write(text: string): unknown };
  /** Resolves when the process is asked to stop; defaults to the first SIGINT or SIGTERM. */
  stopSignal?: Promise<unknown>;
}

/** Resolves once the sandbox has been stopped and closed. Usage errors reject with SandboxUsageError. */
export async function runSandboxCommand(
  args: string[],
  io: SandboxCommandIo = { stderr: process.stderr },
): Promise<void> {
  const options = parseSandboxArgs(args);
  if (options.help) {
    io.stderr.write(SANDBOX_USAGE);
    return;
  }
  const handle = await startSandbox({ port: options.port, host: options.host, timings: { ...DEMO_TIMINGS } });
  io.stderr.write(describeSandbox(handle));
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
