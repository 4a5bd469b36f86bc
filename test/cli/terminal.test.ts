/**
 * The command line on a real terminal (a pseudo-terminal made by util-linux's `script`): the progress line on
 * stderr while waiting, NO_COLOR honoured, and the y/N question above a spend limit. Needs `npm run build`.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox, type SandboxHandle } from "../../src/sandbox/index.js";
import { outputOf } from "../helpers/processes.js";
import { CLI } from "../helpers/stdio.js";

let sandbox: SandboxHandle;
let root: string;

beforeAll(async () => {
  sandbox = await startSandbox({ timings: { queuedMs: 300, processingMs: 1800 } });
  root = await mkdtemp(path.join(tmpdir(), "generation-mcp-tty-"));
});
afterAll(async () => {
  await sandbox.close();
  await rm(root, { recursive: true, force: true });
});

/** The bin on a pseudo-terminal; `answer` is typed once the question is on the screen. */
async function onTerminal(args: string[], env: Record<string, string>, answer?: string) {
  const quoted = [process.execPath, CLI, ...args].map((word) => `'${word}'`).join(" ");
  const child = spawn("script", ["-qec", quoted, "/dev/null"], {
    cwd: root,
    env: {
      PATH: process.env["PATH"] ?? "",
      HOME: root,
      TERM: "xterm",
      GENERATION_STATE_DIR: path.join(root, "state"),
      GENERATION_BASE_URL: sandbox.baseUrl,
      GENERATION_API_KEY: sandbox.keys.paid,
      GENERATION_POLL_INTERVAL_MS: "200",
      ...env,
    },
    stdio: ["pipe", "pipe", "pipe"],
  });
  child.stdout.on("data", (chunk: Buffer) => {
    if (answer !== undefined && chunk.toString().includes("[y/N]")) child.stdin.write(`${answer}\n`);
  });
  return outputOf(child);
}

describe("on a terminal", () => {
  it("shows a progress line (elapsed, status, id) while waiting, dimmed unless NO_COLOR is set", async () => {
    const plain = await onTerminal(["video", "a boat", "--allow-duplicate"], { NO_COLOR: "1" });
    expect(plain.code, plain.stdout).toBe(0);
    // eslint-disable-next-line no-control-regex -- the terminal's own escape sequences are what is checked
    expect(plain.stdout).toMatch(/\r\u001b\[K\[\d+ s\] (queued|processing) · vid_\S+/);
    expect(plain.stdout).not.toContain("\u001b[2m");
    const dimmed = await onTerminal(["video", "a boat", "--allow-duplicate"], {});
    // eslint-disable-next-line no-control-regex -- as above
    expect(dimmed.stdout).toMatch(/\u001b\[2m\[\d+ s\] (queued|processing) · vid_\S+/);
  });

  it("asks y/N above the confirm threshold: no starts nothing (exit 4), yes starts it", async () => {
    const before = sandbox.requests.filter((request) => request.route === "generate").length;
    const args = ["video", "a costly boat", "--confirm-above-credits", "10", "--no-wait"];
    const declined = await onTerminal(args, {}, "n");
    expect(declined.code).toBe(4);
    expect(declined.stdout).toContain(
      "Start a 5 s video on vendor-video-1-5-pro for about 25 credits? [y/N]",
    );
    expect(declined.stdout).toContain("Declined by the user:");
    expect(sandbox.requests.filter((request) => request.route === "generate")).toHaveLength(before);
    const accepted = await onTerminal(args, {}, "y");
    expect(accepted.code).toBe(3);
    expect(sandbox.requests.filter((request) => request.route === "generate")).toHaveLength(before + 1);
  });
});
