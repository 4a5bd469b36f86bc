/**
 * kill -9 at random points around a start never charges twice. Each round runs the built bin, asks it for a
 * video, kills it (SIGKILL: no cleanup of any kind) somewhere around the start, starts it again on the same
 * state folder and asks for the same video. The service (the sandbox, which ignores Idempotency-Key: the
 * worst case) must hold exactly one task for the prompt, and the journal must name it. (A start whose intent
 * was written but that the service never received is not sent again by itself: the round then starts it
 * with allow_duplicate: true, as the answer says.) Each round has its
 * own account key and state folder, so rounds run a few at a time without seeing each other.
 */
import { spawn } from "node:child_process";
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { JOURNAL_FILE } from "../../src/state/local/journal.js";
import { CLI, connectStdio } from "../helpers/stdio.js";

const ROUNDS = 32;
const PARALLEL = 4;
/**
 * Where the kill lands, drawn per round: after the call is written (mostly before the POST leaves; the intent
 * may or may not be on disk yet), after the service received the POST (during its 25 ms latency, before it
 * charged), or just after the service charged and wrote its answer (the answer in flight or parsed, the
 * journal not yet written: the case that charged twice before).
 */
const KILL_POINTS = [
  { after: "call", share: 0.2, spreadMs: 40 },
  { after: "received", share: 0.3, spreadMs: 25 },
  { after: "answered", share: 0.5, spreadMs: 10 },
] as const;

const keyOf = (round: number) => `sk-kill-round-${String(round).padStart(3, "0")}`;

let sandbox: SandboxHandle;
let root: string;

beforeAll(async () => {
  sandbox = await startSandbox({
    timings: { queuedMs: 5000, processingMs: 5000 },
    accounts: Array.from({ length: ROUNDS }, (_, round) => ({
      key: keyOf(round),
      name: `round-${round}`,
      credits: 1000,
      paidAccess: true,
      subscription: "pro",
    })),
  });
  sandbox.faults.latency("generate", 25);
  root = await mkdtemp(path.join(tmpdir(), "generation-mcp-kill-"));
});

afterAll(async () => {
  await sandbox?.close();
  await rm(root, { recursive: true, force: true });
});

/** A small deterministic generator, so a failing round can be replayed. */
function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function envFor(stateDir: string, key: string): Record<string, string> {
  return {
    PATH: process.env["PATH"] ?? "",
    HOME: stateDir,
    GENERATION_API_KEY: key,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_STATE_DIR: path.join(stateDir, "state"),
    GENERATION_ALLOWED_DIRS: stateDir,
    GENERATION_OUTPUT_DIR: path.join(stateDir, "out"),
  };
}

type KillPoint = { after: (typeof KILL_POINTS)[number]["after"]; ms: number };

/** Starts the bin, initializes, sends generate_video, and kills it at the given point. */
async function startAndKill(stateDir: string, key: string, prompt: string, kill: KillPoint): Promise<void> {
  const child = spawn(process.execPath, [CLI], {
    env: envFor(stateDir, key),
    stdio: ["pipe", "pipe", "ignore"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const send = (message: unknown) => child.stdin.write(`${JSON.stringify(message)}\n`);
  child.stdin.on("error", () => undefined);
  let buffered = "";
  const initialized = new Promise<void>((resolve) => {
    child.stdout.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("utf8");
      if (buffered.includes('"id":1')) resolve();
    });
  });
  send({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "killer", version: "1" } },
  });
  await initialized;
  send({ jsonrpc: "2.0", method: "notifications/initialized" });
  send({
    jsonrpc: "2.0",
    id: 2,
    method: "tools/call",
    params: { name: "generate_video", arguments: { prompt, wait: false } },
  });
  if (kill.after !== "call") {
    // The sandbox logs a request when it arrives and sets its status once it has answered.
    const reached = () =>
      sandbox.requests.some(
        (request) =>
          request.route === "generate" &&
          request.key === key &&
          (kill.after === "received" || request.status !== 0),
      );
    const until = Date.now() + 10_000;
    while (!reached()) {
      if (Date.now() > until || child.exitCode !== null) break;
      await sleep(1);
    }
  }
  await sleep(kill.ms);
  child.kill("SIGKILL");
  await exited;
}

/** The tasks the service holds for one key, read straight from it. */
async function tasksOf(key: string): Promise<string[]> {
  const response = await fetch(`${sandbox.baseUrl}/videos?limit=50`, {
    headers: { authorization: `Bearer ${key}` },
  });
  const body = (await response.json()) as { data: { items: { video_id: string }[] } };
  return body.data.items.map((item) => item.video_id);
}

async function journalOf(stateDir: string): Promise<string> {
  const state = path.join(stateDir, "state");
  const folders = await readdir(state).catch(() => [] as string[]);
  const texts = await Promise.all(
    folders.map((folder) => readFile(path.join(state, folder, JOURNAL_FILE), "utf8").catch(() => "")),
  );
  return texts.join("");
}

async function round(index: number, kill: KillPoint): Promise<{ chargedBeforeRestart: boolean }> {
  const stateDir = await mkdtemp(path.join(root, `round-${index}-`));
  const key = keyOf(index);
  const prompt = `kill round ${index}: a kite over the dunes`;
  const where = `round ${index} (kill ${kill.ms} ms after the ${kill.after})`;
  await startAndKill(stateDir, key, prompt, kill);
  // A POST the dead process sent finishes on the service's side (its latency), as it would for real.
  await sleep(60);
  const chargedBeforeRestart = (await tasksOf(key)).length > 0;

  const session = await connectStdio([], envFor(stateDir, key));
  try {
    const generate = async (args: Record<string, unknown>) => {
      const answer = (await session.client.callTool(
        { name: "generate_video", arguments: { prompt, wait: false, ...args } },
        undefined,
        { timeout: 30_000 },
      )) as CallToolResult;
      return {
        answer,
        text: answer.content.map((part) => (part.type === "text" ? part.text : "")).join("\n"),
      };
    };
    let { answer: result, text } = await generate({});
    if (result.isError === true && /^timeout: An identical generate_video request was sent/.test(text)) {
      // The dead process wrote its intent but the service never made a task of it (the history would have
      // shown it): an identical call sends nothing by itself while the start may still appear, so the user
      // decides to start another.
      expect(text, where).toContain("This call sent nothing and charged nothing.");
      expect(await tasksOf(key), `${where}: the service's tasks`).toEqual([]);
      ({ answer: result, text } = await generate({ allow_duplicate: true }));
    }
    expect(result.isError, `${where}: ${text}`).toBeFalsy();
    const videoId = (result.structuredContent as { video_id: string }).video_id;
    expect(await tasksOf(key), `${where}: the service's tasks`).toEqual([videoId]);
    expect(await journalOf(stateDir), `${where}: the journal`).toContain(`"id":"${videoId}"`);
  } finally {
    await session.close();
  }
  return { chargedBeforeRestart };
}

describe("kill -9 around a start", () => {
  it(`never charges twice in ${ROUNDS} rounds with random kill points`, async () => {
    const random = lcg(20261123);
    const kills: KillPoint[] = Array.from({ length: ROUNDS }, () => {
      let pick = random();
      const point = KILL_POINTS.find((candidate) => (pick -= candidate.share) < 0) ?? KILL_POINTS[2];
      return { after: point.after, ms: Math.floor(random() * point.spreadMs) };
    });
    // PARALLEL rounds at a time, the next starting as soon as one ends.
    const outcomes: { chargedBeforeRestart: boolean }[] = [];
    let next = 0;
    const runner = async () => {
      for (let index = next++; index < ROUNDS; index = next++) {
        outcomes.push(await round(index, kills[index]!));
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, runner));
    // The rounds only prove something if many kills landed after the service had charged: every
    // "answered" round did (the sandbox charges before it answers), whatever the machine's load.
    const answered = kills.filter((kill) => kill.after === "answered").length;
    const hit = outcomes.filter((outcome) => outcome.chargedBeforeRestart).length;
    expect(answered, "rounds killed after the service answered").toBeGreaterThanOrEqual(ROUNDS / 4);
    expect(hit, `kills after the charge: ${hit} of ${ROUNDS}`).toBeGreaterThanOrEqual(answered);
  }, 240_000);
});
