/**
 * A newcomer's first mistakes, against the built bin: each gets one line at start that names what is wrong
 * and what to do, never a stack trace or the message of another mistake. Needs `npm run build`.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import type { Server } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { busyPort, outputOf } from "../helpers/processes.js";
import { CLI } from "../helpers/stdio.js";

let root: string;
const busy: Server[] = [];

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "generation-mcp-first-"));
});
afterAll(async () => {
  await Promise.all(busy.map((server) => new Promise((resolve) => server.close(resolve))));
  await rm(root, { recursive: true, force: true });
});

/** Runs the bin with stdin closed at once: a stdio server then stops, after what it prints at start. */
function run(args: string[], env: Record<string, string>) {
  return spawnSync(process.execPath, [CLI, ...args], {
    env: {
      PATH: process.env["PATH"] ?? "",
      HOME: root,
      GENERATION_STATE_DIR: path.join(root, "state"),
      ...env,
    },
    encoding: "utf8",
    timeout: 20_000,
    input: "",
  });
}

describe("--http on a port that is taken", () => {
  it("says so in one line, with how to pick another, and exits non-zero without a stack", async () => {
    const port = await busyPort(busy);
    const child = spawn(process.execPath, [CLI, "--http", "--port", String(port)], {
      env: {
        PATH: process.env["PATH"] ?? "",
        HOME: root,
        GENERATION_STATE_DIR: path.join(root, "http-state"),
        GENERATION_BASE_URL: "http://127.0.0.1:9/api/v1",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const { code, stdout, stderr } = await outputOf(child);
    expect(code).toBe(1);
    expect(stderr).toBe(
      `generation-mcp: port ${port} on 127.0.0.1 is already in use (another MCP server?); choose another with --port N, or --port 0 for any free port\n`,
    );
    expect(stdout).toBe("");
  });
});

describe("upload folders that do not exist", () => {
  it("are named in one warning line at start, from the variable and from --allowed-dirs", async () => {
    const pictures = path.join(root, "Pictures");
    await mkdir(pictures, { recursive: true });
    const typo = path.join(root, "Picturse");
    const gone = path.join(root, "gone");
    const fromEnv = run(["--sandbox"], {
      GENERATION_ALLOWED_DIRS: [pictures, typo, gone].join(path.delimiter),
    });
    const fromFlag = run(["--sandbox", "--allowed-dirs", [typo, pictures].join(path.delimiter)], {});
    for (const [result, missing] of [
      [fromEnv, [typo, gone]],
      [fromFlag, [typo]],
    ] as const) {
      expect(result.status).toBe(0);
      const warnings = result.stderr.split("\n").filter((line) => line.includes("do not exist"));
      expect(warnings).toEqual([
        `[generation-mcp] warning: upload folders that do not exist (--allowed-dirs / GENERATION_ALLOWED_DIRS): ${missing.map((dir) => JSON.stringify(dir)).join(", ")}; nothing can be uploaded from them until they are created (check the spelling).`,
      ]);
    }
    expect(run(["--sandbox"], { GENERATION_ALLOWED_DIRS: pictures }).stderr).not.toContain("do not exist");
  });
});

describe("half of the service settings", () => {
  const KEY = "sk-first-mistake-0123456789";
  const BASE_URL = "http://127.0.0.1:9/api/v1";

  it("names the one that is missing, not both", () => {
    const keyOnly = run([], { GENERATION_API_KEY: KEY });
    expect(keyOnly.status).not.toBe(0);
    expect(keyOnly.stderr).toMatch(
      /^generation-mcp: GENERATION_API_KEY is set but GENERATION_BASE_URL is not/,
    );
    expect(keyOnly.stderr).toContain("--sandbox");
    expect(keyOnly.stderr).not.toContain(KEY);

    const urlOnly = run([], { GENERATION_BASE_URL: BASE_URL });
    expect(urlOnly.status).not.toBe(0);
    expect(urlOnly.stderr).toMatch(
      /^generation-mcp: GENERATION_BASE_URL is set but GENERATION_API_KEY is not/,
    );
    expect(urlOnly.stderr).toContain("--sandbox");
  });

  it("with neither set, still names both and --sandbox", () => {
    const neither = run([], {});
    expect(neither.status).not.toBe(0);
    expect(neither.stderr).toMatch(
      /^generation-mcp: set GENERATION_API_KEY and GENERATION_BASE_URL .*--sandbox/,
    );
  });
});
