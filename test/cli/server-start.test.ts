/**
 * The first mistakes of the MCP server's own start (no subcommand), through the built bin: a mistyped flag or
 * variable is named with the one meant, and a machine with no upload folder hears so once. Needs a build.
 */
import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI } from "../helpers/stdio.js";

let root: string;
beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "generation-mcp-start-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** The server with stdin closed at once: it stops after what it prints at start. */
const start = (args: string[], env: Record<string, string> = {}, home = root) =>
  spawnSync(process.execPath, [CLI, ...args], {
    env: {
      PATH: process.env["PATH"] ?? "",
      HOME: home,
      GENERATION_STATE_DIR: path.join(root, "state"),
      ...env,
    },
    encoding: "utf8",
    timeout: 20_000,
    input: "",
  });

describe("the server's start", () => {
  it("names the flag meant for a mistyped one, instead of the parser's text", () => {
    const answer = start(["--sandbx"]);
    expect(answer.status).toBe(2);
    expect(answer.stderr).toBe(
      "generation-mcp: unknown flag --sandbx. Did you mean --sandbox?\nRun generation-mcp --help for usage.\n",
    );
    expect(start(["--poll-intervl-ms", "100"]).stderr).toContain("Did you mean --poll-interval-ms?");
    expect(start(["sandbx"]).stderr).toContain("Did you mean sandbox?");
  });

  it("names the variable meant for a mistyped GENERATION_* one, and still starts", () => {
    const answer = start(["--sandbox"], { GENERATION_POLL_INTERVL_MS: "100" });
    expect(answer.stderr).toContain(
      "generation-mcp: GENERATION_POLL_INTERVL_MS is not a setting of generation-mcp, so it is ignored. Did you mean GENERATION_POLL_INTERVAL_MS?",
    );
    expect(answer.stderr).toContain("ready on stdio");
  });

  it("says once when no upload folder exists and none is set, and how to set one", async () => {
    const bare = start(["--sandbox"]);
    expect(bare.stderr.match(/no upload folder exists/g)).toHaveLength(1);
    expect(bare.stderr).toContain("set GENERATION_ALLOWED_DIRS (or --allowed-dirs)");
    const home = path.join(root, "with-pictures");
    await mkdir(path.join(home, "Pictures"), { recursive: true });
    expect(start(["--sandbox"], {}, home).stderr).not.toContain("no upload folder");
    expect(start(["--sandbox", "--allowed-dirs", home]).stderr).not.toContain("no upload folder");
  });

  it("--help lists the commands and their flags", () => {
    const help = start(["--help"]).stdout;
    for (const command of [
      "video <prompt>",
      "image <prompt>",
      "upload <path>",
      "status <video_id>",
      "check",
    ]) {
      expect(help).toContain(`  ${command}`);
    }
    expect(help).toContain("--out PATH");
    expect(help).toMatch(/Exit codes: 0 done; 1 .*; 2 usage/);
  });
});
