import { describe, expect, it, vi } from "vitest";
import { SandboxUsageError, parseSandboxArgs, runSandboxCommand } from "../../src/sandbox/cli.js";
import { capture } from "../helpers/processes.js";

async function waitFor(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  if (!check()) throw new Error("timed out");
}

describe("parseSandboxArgs", () => {
  it("defaults to 127.0.0.1 and an ephemeral port", () => {
    expect(parseSandboxArgs([])).toEqual({ port: 0, host: "127.0.0.1", help: false });
  });

  it("reads --port and --host in both spellings", () => {
    expect(parseSandboxArgs(["--port", "8080", "--host", "0.0.0.0"])).toEqual({
      port: 8080,
      host: "0.0.0.0",
      help: false,
    });
    expect(parseSandboxArgs(["--port=65535", "--host=::1"])).toEqual({
      port: 65535,
      host: "::1",
      help: false,
    });
    expect(parseSandboxArgs(["--help"]).help).toBe(true);
  });

  it("refuses bad values and unknown options", () => {
    for (const args of [
      ["--port"],
      ["--port", "http"],
      ["--port", "65536"],
      ["--port", "-1"],
      ["--port", "8.5"],
      ["--host"],
      ["--verbose"],
      ["sandbox"],
    ]) {
      expect(() => parseSandboxArgs(args)).toThrow(SandboxUsageError);
    }
  });
});

describe("runSandboxCommand", () => {
  it("prints the base URL, the keys and an example on stderr, serves until stopped, and writes nothing to stdout", async () => {
    const stdout = vi.spyOn(process.stdout, "write");
    const io = capture();
    let stop!: () => void;
    const stopSignal = new Promise<void>((resolve) => {
      stop = resolve;
    });
    const running = runSandboxCommand([], { stderr: io.stderr, stopSignal });
    await waitFor(() => io.text().includes("Ctrl+C"));
    const text = io.text();
    const baseUrl = /Base URL: (http:\/\/127\.0\.0\.1:\d+\/api\/v1)/.exec(text)?.[1];
    expect(baseUrl).toBeDefined();
    for (const key of ["sk-sandbox-paid", "sk-sandbox-free", "sk-sandbox-poor"]) expect(text).toContain(key);
    expect(text).toContain("no paid access");
    expect(text).toContain(`curl -H "Authorization: Bearer sk-sandbox-paid" ${baseUrl}/credits`);

    const response = await fetch(`${baseUrl}/credits`, {
      headers: { Authorization: "Bearer sk-sandbox-free" },
    });
    expect(((await response.json()) as { data: { credits: number } }).data.credits).toBe(100);

    stop();
    await running;
    await expect(fetch(`${baseUrl}/credits`)).rejects.toThrow();
    expect(stdout).not.toHaveBeenCalled();
    stdout.mockRestore();
  });

  it("listens on the port it is given", async () => {
    const probe = await import("node:net").then(
      (net) =>
        new Promise<number>((resolve) => {
          const server = net.createServer().listen(0, "127.0.0.1", () => {
            const port = (server.address() as { port: number }).port;
            server.close(() => resolve(port));
          });
        }),
    );
    const io = capture();
    let stop!: () => void;
    const running = runSandboxCommand(["--port", String(probe)], {
      stderr: io.stderr,
      stopSignal: new Promise<void>((resolve) => (stop = resolve)),
    });
    await waitFor(() => io.text().includes("Ctrl+C"));
    expect(io.text()).toContain(`http://127.0.0.1:${probe}/api/v1`);
    stop();
    await running;
  });

  it("stops on SIGINT and SIGTERM", async () => {
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
      const before = process.listenerCount(signal);
      const io = capture();
      const running = runSandboxCommand([], { stderr: io.stderr });
      await waitFor(() => io.text().includes("Ctrl+C"));
      expect(process.listenerCount(signal)).toBe(before + 1);
      // Call our listener directly: emitting the signal would also reach the test runner's own handlers.
      const listener = process.listeners(signal).at(-1) as (signal: NodeJS.Signals) => void;
      listener(signal);
      await running;
      expect(io.text()).toContain("Stopping the sandbox.");
      expect(process.listenerCount(signal)).toBe(before);
    }
  });

  it("prints usage for --help without starting anything", async () => {
    const io = capture();
    await runSandboxCommand(["--help"], { stderr: io.stderr });
    expect(io.text()).toMatch(/^Usage: generation-mcp sandbox \[--port N\] \[--host H\]/);
  });

  it("rejects bad arguments with a usage error", async () => {
    await expect(runSandboxCommand(["--port", "x"])).rejects.toThrow(SandboxUsageError);
  });
});
