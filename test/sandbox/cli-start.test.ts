import { spawn } from "node:child_process";
import { existsSync, realpathSync } from "node:fs";
import type { Server } from "node:net";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  SandboxStartError,
  describeListenError,
  runSandboxCommand,
  shellQuote,
} from "../../src/sandbox/cli.js";
import { busyPort, capture, outputOf } from "../helpers/processes.js";

const BUILT_CLI = path.resolve(import.meta.dirname, "../../dist/bundle/cli.js");
const IN_USE = (port: number): string =>
  `port ${port} on 127.0.0.1 is already in use (another sandbox?); choose another with --port N, or --port 0 for any free port`;

const busy: Server[] = [];
afterEach(async () => {
  await Promise.all(busy.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

async function runUntilBanner(
  args: string[],
  entryScript?: string,
): Promise<{ text: string; stop: () => Promise<void> }> {
  const io = capture();
  let stop!: () => void;
  const stopSignal = new Promise<void>((resolve) => (stop = resolve));
  const running = runSandboxCommand(args, {
    stderr: io.stderr,
    stopSignal,
    ...(entryScript === undefined ? {} : { entryScript }),
  });
  for (let i = 0; i < 200 && !io.text().includes("Ctrl+C"); i++) await new Promise((r) => setTimeout(r, 10));
  return {
    text: io.text(),
    stop: async () => {
      stop();
      await running;
    },
  };
}

describe("a sandbox that cannot listen", () => {
  it("rejects with SandboxStartError in one line when the port is in use, and prints nothing", async () => {
    const port = await busyPort(busy);
    const io = capture();
    const error = await runSandboxCommand(["--port", String(port)], { stderr: io.stderr }).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(SandboxStartError);
    const startError = error as SandboxStartError;
    expect(startError.name).toBe("SandboxStartError");
    expect(startError.message).toBe(IN_USE(port));
    // Whatever prints it, message or stack, prints the one line.
    expect(startError.stack).toBe(startError.message);
    expect((startError.cause as NodeJS.ErrnoException).code).toBe("EADDRINUSE");
    expect(io.text()).toBe("");
  });

  it("names a host that is not an address of this machine", async () => {
    // 192.0.2.1 is reserved for documentation (RFC 5737): never a local address, and binding sends nothing.
    const error = await runSandboxCommand(["--host", "192.0.2.1"], { stderr: capture().stderr }).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(SandboxStartError);
    expect((error as Error).message).toBe(
      "host 192.0.2.1 is not an address of this machine, so the sandbox cannot listen on it; use --host 127.0.0.1 (this machine only) or --host 0.0.0.0 (every interface)",
    );
  });

  it("describes each listen failure in one actionable line", () => {
    const failure = (code: string): Error => Object.assign(new Error(`listen ${code}: detail`), { code });
    expect(describeListenError(failure("EACCES"), "127.0.0.1", 80)).toBe(
      "port 80 on 127.0.0.1 is not permitted for this user (ports below 1024 usually need privileges); choose another with --port N, or --port 0 for any free port",
    );
    expect(describeListenError(failure("ENOTFOUND"), "no-such-host", 0)).toBe(
      'host "no-such-host" is not a known host name or address; use --host 127.0.0.1 (this machine only) or --host 0.0.0.0 (every interface)',
    );
    expect(describeListenError(failure("EINVAL"), "::1", 8787)).toBe(
      "could not listen on ::1 port 8787 (listen EINVAL: detail)",
    );
    for (const code of ["EADDRINUSE", "EACCES", "EADDRNOTAVAIL", "ENOTFOUND", "EOTHER"]) {
      expect(describeListenError(failure(code), "h", 1)).not.toMatch(/\n/);
    }
  });
});

describe("the banner", () => {
  it("shows a node command with the entry script, and --sandbox as the no-key way", async () => {
    const { text, stop } = await runUntilBanner([], "/opt/generation-mcp/dist/bundle/cli.js");
    await stop();
    const baseUrl = /Base URL: (\S+)/.exec(text)?.[1];
    expect(baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1$/);
    const lines = text.split("\n");
    const use = lines.findIndex((line) => line.includes("Use it from the MCP server"));
    expect(lines[use + 1]).toBe(
      `    GENERATION_BASE_URL=${baseUrl} GENERATION_API_KEY=sk-sandbox-paid node /opt/generation-mcp/dist/bundle/cli.js`,
    );
    expect(lines[use + 2]).toContain("node /opt/generation-mcp/dist/bundle/cli.js --sandbox");
    expect(text).not.toMatch(/ generation-mcp\n/);
  });

  it("quotes a path with spaces or shell characters", async () => {
    const { text, stop } = await runUntilBanner([], "/home/Ann Lee/it's/cli.js");
    await stop();
    expect(text).toContain(`sk-sandbox-paid node '/home/Ann Lee/it'\\''s/cli.js'\n`);
    expect(shellQuote("/plain/path-1.2/cli.js")).toBe("/plain/path-1.2/cli.js");
    expect(shellQuote("/a/$HOME/`x`")).toBe("'/a/$HOME/`x`'");
  });

  it("defaults to the running script's real absolute path", async () => {
    const script = process.argv[1] ?? "";
    const { text, stop } = await runUntilBanner([]);
    await stop();
    expect(text).toContain(`sk-sandbox-paid node ${shellQuote(realpathSync(path.resolve(script)))}\n`);
  });
});

describe("the built bin", () => {
  it.runIf(existsSync(BUILT_CLI))(
    "exits non-zero on a busy port with one line and no stack trace (needs npm run build)",
    async () => {
      const port = await busyPort(busy);
      const child = spawn(process.execPath, [BUILT_CLI, "sandbox", "--port", String(port)], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      const { code, stdout, stderr } = await outputOf(child);
      expect(code).not.toBe(0);
      expect(code).not.toBeNull();
      // One clear line, nothing else (no stack, no usage hint: it is not a usage mistake).
      expect(stderr).toBe(`generation-mcp sandbox: ${IN_USE(port)}\n`);
      expect(stdout).toBe("");
    },
  );
});
