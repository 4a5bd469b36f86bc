/**
 * A nearly full disk under the state folder (issue 26): a real tmpfs of a few pages holds the state folder
 * (GENERATION_STATE_DIR), filled until one page is free, so spend.json truly cannot be written. The built bin
 * over stdio, against a sandbox, with GENERATION_DAILY_CREDITS=100: no start is sent that spend.json does not
 * hold (the sandbox's request log is the proof), every start once the writes fail is refused with
 * internal_error naming the folder and GENERATION_STATE_DIR, get_credits says the allowance is unknown, and
 * freeing space ends it.
 *
 * The tmpfs is mounted directly when this runs as root, else inside a user and mount namespace of the server
 * process (`unshare -rm`), filled from here through /proc/<pid>/root. Where neither is allowed, it fails.
 */
import { spawnSync } from "node:child_process";
import { closeSync, ftruncateSync, openSync, writeSync } from "node:fs";
import { mkdir, mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { CLI } from "../helpers/stdio.js";
import { startsBy, textOf } from "./spend-helpers.js";

const DAILY = 100;
const KEY = "sk-df-7f3a9c1e42";
/** Room for the journal, the ownership record and spend.json of the first start, and little more. */
const TMPFS_BYTES = 256 * 1024;
const PAGE = Number(spawnSync("getconf", ["PAGESIZE"]).stdout.toString().trim()) || 4096;

let sandbox: SandboxHandle;
let root: string;
let stateDir: string;
let mounted = false;
let client: Client | undefined;
let stderr = "";
/** The state folder as this process sees it: itself, or the server's namespace through /proc. */
let stateView = "";

function canRun(command: string, args: string[]): boolean {
  return spawnSync(command, args, { stdio: "ignore" }).status === 0;
}

beforeAll(async () => {
  sandbox = await startSandbox({
    timings: { queuedMs: 60_000, processingMs: 60_000 },
    accounts: [{ key: KEY, name: "disk full", credits: 100_000, paidAccess: true, subscription: "pro" }],
    rateLimit: { limit: 1000, windowMs: 60_000 },
  });
  root = await mkdtemp(path.join(tmpdir(), "generation-mcp-disk-full-"));
  stateDir = path.join(root, "state");
  await mkdir(stateDir);
  const size = `size=${TMPFS_BYTES},mode=0700`;
  let command = process.execPath;
  let args = [CLI];
  if (canRun("mount", ["-t", "tmpfs", "-o", size, "tmpfs", stateDir])) {
    mounted = true;
  } else if (canRun("unshare", ["-rm", "true"])) {
    command = "unshare";
    args = ["-rm", "sh", "-c", `mount -t tmpfs -o ${size} tmpfs "$0" && exec "$@"`, stateDir, ...args];
  } else {
    throw new Error(
      "This test needs a tiny tmpfs for the state folder: neither `mount -t tmpfs` (root) nor `unshare -rm` " +
        "(unprivileged user namespaces) is permitted here, so it cannot show what a full disk does.",
    );
  }
  const transport = new StdioClientTransport({
    command,
    args,
    env: {
      PATH: process.env["PATH"] ?? "",
      HOME: root,
      GENERATION_API_KEY: KEY,
      GENERATION_BASE_URL: sandbox.baseUrl,
      GENERATION_STATE_DIR: stateDir,
      GENERATION_DAILY_CREDITS: String(DAILY),
    },
    stderr: "pipe",
  });
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  client = new Client({ name: "disk-full", version: "1.0.0" });
  await client.connect(transport);
  stateView = mounted ? stateDir : `/proc/${transport.pid}/root${stateDir}`;
}, 30_000);

afterAll(async () => {
  await client?.close();
  if (mounted) spawnSync("umount", [stateDir]);
  await sandbox?.close();
  if (root !== undefined) await rm(root, { recursive: true, force: true });
});

function video(prompt: string, duration: number): Promise<CallToolResult> {
  return client!.callTool({
    name: "generate_video",
    arguments: { prompt, duration, wait: false },
  }) as Promise<CallToolResult>;
}

/** Hundredths of a credit spend.json holds for the day, over every caller. */
async function recorded(folder: string): Promise<number> {
  const record = JSON.parse(await readFile(path.join(folder, "spend.json"), "utf8")) as {
    used: Record<string, number>;
  };
  return Object.values(record.used).reduce((sum, used) => sum + used, 0);
}

/** Fills the file system with whole pages, then frees one: a second file needing a page of its own fails. */
function fillLeavingOnePage(file: string): void {
  const handle = openSync(file, "w");
  const page = Buffer.alloc(PAGE, 1);
  let size = 0;
  try {
    for (;;) {
      writeSync(handle, page);
      size += PAGE;
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
  }
  ftruncateSync(handle, size - PAGE);
  closeSync(handle);
}

let creditsText = "";

async function allowance(): Promise<Record<string, unknown>> {
  const credits = await client!.callTool({ name: "get_credits", arguments: {} });
  creditsText = textOf(credits);
  expect(credits.isError, creditsText).toBeFalsy();
  return (credits.structuredContent as { allowance: Record<string, unknown> }).allowance;
}

describe("GENERATION_DAILY_CREDITS with the state folder on a nearly full disk", () => {
  it("sends no start that spend.json does not hold, says why, and reports the allowance as unknown", async () => {
    const first = await video("before the disk fills: a kettle", 5);
    expect(first.isError, textOf(first)).toBeFalsy();
    const [folder] = (await readdir(stateView, { withFileTypes: true })).filter((entry) =>
      entry.isDirectory(),
    );
    expect(folder, "the key's folder under the state folder").toBeDefined();
    const keyView = path.join(stateView, folder!.name);
    const keyDir = path.join(stateDir, folder!.name);
    expect(await recorded(keyView)).toBe(2500);

    fillLeavingOnePage(path.join(stateView, "filler"));
    let started = 25;
    const refusals: string[] = [];
    // 25 and 50 credits, 175 in all: what an unrecorded count let through before.
    for (const [call, duration] of [5, 10, 5, 10, 5].entries()) {
      const result = await video(`on a full disk, attempt ${call}: a kettle`, duration);
      if (result.isError !== true) started += duration * 5;
      else refusals.push(textOf(result));
      // Never a start beyond what the record holds: a restart would count from it.
      expect(started * 100).toBeLessThanOrEqual(await recorded(keyView));
    }
    expect(startsBy(sandbox, KEY)).toBe(1);
    expect(refusals).toHaveLength(5);
    for (const text of refusals) {
      expect(text).toMatch(/^internal_error: /);
      expect(text).toContain(keyDir);
      expect(text).toContain("GENERATION_STATE_DIR");
      expect(text).toContain("nothing reached the service and nothing was charged");
      expect(text).not.toContain("A charge is possible");
      // stdio: the user frees space or moves the state folder in the client's configuration.
      expect(text).toMatch(/Next step: Ask the user to free space in that folder/);
    }

    const unknown = await allowance();
    expect(unknown).toMatchObject({ daily_limit: DAILY, known: false });
    expect(unknown).not.toHaveProperty("used_today");
    expect(unknown).not.toHaveProperty("remaining_today");
    expect(unknown["reason"]).toContain(keyDir);
    expect(unknown["next_step"]).toContain("GENERATION_STATE_DIR");
    expect(creditsText).toMatch(
      /Daily allowance \(this server's limit for you, 100 credits a day\): unknown\./,
    );

    // Space freed: the count is known again, and starts go on from what the record holds.
    await rm(path.join(stateView, "filler"));
    expect(await allowance()).toMatchObject({ used_today: 25, remaining_today: 75 });
    const after = await video("after space was freed: a kettle", 10);
    expect(after.isError, textOf(after)).toBeFalsy();
    expect(startsBy(sandbox, KEY)).toBe(2);
    expect(await recorded(keyView)).toBe(7500);
    expect(stderr).toContain("Could not write the spend record");
  }, 60_000);
});
