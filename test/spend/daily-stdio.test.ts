/**
 * The daily limit through the built bin over stdio, against a separately started sandbox: an agent loop of 50
 * generate_video calls starts exactly what GENERATION_DAILY_CREDITS allows (the sandbox's request log is the
 * proof), every refusal is budget_exceeded naming what remains and the reset time, get_credits agrees, and
 * a restart of the server (stdio clients restart servers all the time) keeps the day's spend.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { connectStdio, type StdioSession } from "../helpers/stdio.js";
import { nextMidnightUtc, startsBy, textOf } from "./spend-helpers.js";

const DAILY = 200;
/** The lite model costs 5 credits per second: 25, 40, 15 and 50 credits, over and over. */
const DURATIONS = [5, 8, 3, 10];
const KEY = "sk-spend-loop";
const SHARED_KEY = "sk-spend-two-clients";

let sandbox: SandboxHandle;
let root: string;

beforeAll(async () => {
  sandbox = await startSandbox({
    timings: { queuedMs: 60_000, processingMs: 60_000 },
    accounts: [
      { key: KEY, name: "loop", credits: 100_000, paidAccess: true, subscription: "pro" },
      { key: SHARED_KEY, name: "two clients", credits: 100_000, paidAccess: true, subscription: "pro" },
    ],
    rateLimit: { limit: 1000, windowMs: 60_000 },
  });
  root = await mkdtemp(path.join(tmpdir(), "generation-mcp-spend-"));
});

afterAll(async () => {
  await sandbox?.close();
  await rm(root, { recursive: true, force: true });
});

function serve(key = KEY, state = "state"): Promise<StdioSession> {
  return connectStdio([], {
    HOME: root,
    GENERATION_API_KEY: key,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_STATE_DIR: path.join(root, state),
    GENERATION_DAILY_CREDITS: String(DAILY),
  });
}

async function allowanceOf(session: StdioSession): Promise<Record<string, unknown>> {
  const credits = await session.client.callTool({ name: "get_credits", arguments: {} });
  expect(credits.isError).toBeFalsy();
  return (credits.structuredContent as { allowance: Record<string, unknown> }).allowance;
}

describe("GENERATION_DAILY_CREDITS over stdio", () => {
  it("lets an agent loop of 50 calls start exactly what the limit allows, and a restart keeps the count", async () => {
    const first = await serve();
    let expectedUsed = 0;
    let expectedStarts = 0;
    const refusals: string[] = [];
    try {
      for (let call = 0; call < 50; call++) {
        const duration = DURATIONS[call % DURATIONS.length] ?? 5;
        const cost = duration * 5;
        const result = (await first.client.callTool({
          name: "generate_video",
          arguments: {
            prompt: `an agent's attempt number ${call}: a fox in the snow`,
            duration,
            wait: false,
          },
        })) as CallToolResult;
        if (expectedUsed + cost <= DAILY) {
          expect(result.isError, textOf(result)).toBeFalsy();
          expectedUsed += cost;
          expectedStarts += 1;
        } else {
          expect(result.isError).toBe(true);
          refusals.push(textOf(result));
        }
      }
      expect(startsBy(sandbox, KEY)).toBe(expectedStarts);
      expect(refusals.length).toBe(50 - expectedStarts);
      for (const text of refusals) {
        expect(text).toMatch(/^budget_exceeded: /);
        expect(text).toContain(`of today's ${DAILY} credits remain`);
        expect(text).toContain(nextMidnightUtc());
        // stdio advice: the variable in the client's configuration, never an operator.
        expect(text).toContain("GENERATION_DAILY_CREDITS");
      }
      expect(refusals[0]).toContain(`only ${DAILY - expectedUsed} of today's`);
      expect(await allowanceOf(first)).toEqual({
        daily_limit: DAILY,
        used_today: expectedUsed,
        remaining_today: DAILY - expectedUsed,
        resets_at: nextMidnightUtc(),
      });
      // A dry run and a reused task spend nothing.
      const dry = await first.client.callTool({
        name: "generate_video",
        arguments: { prompt: "a dry run", duration: 20, dry_run: true },
      });
      expect(dry.isError).toBeFalsy();
      const again = (await first.client.callTool({
        name: "generate_video",
        arguments: { prompt: "an agent's attempt number 0: a fox in the snow", duration: 5, wait: false },
      })) as CallToolResult;
      expect(again.isError, textOf(again)).toBeFalsy();
      expect(again.structuredContent).toMatchObject({ reused: true });
      expect(startsBy(sandbox, KEY)).toBe(expectedStarts);
    } finally {
      await first.close();
    }

    // The client restarts the server: the day's spend is still there, on disk beside the journal.
    const second = await serve();
    try {
      expect(await allowanceOf(second)).toMatchObject({ used_today: expectedUsed });
      const over = (await second.client.callTool({
        name: "generate_video",
        arguments: { prompt: "after the restart", duration: 20, wait: false },
      })) as CallToolResult;
      expect(over.isError).toBe(true);
      expect(textOf(over)).toMatch(/^budget_exceeded: /);
      expect(startsBy(sandbox, KEY)).toBe(expectedStarts);
    } finally {
      await second.close();
    }
  }, 120_000);

  // Claude Desktop and Claude Code side by side: two servers of one key share the state folder.
  it("holds across two servers of one key running at once: together they start exactly what it allows", async () => {
    const [one, two] = await Promise.all([serve(SHARED_KEY, "shared"), serve(SHARED_KEY, "shared")]);
    try {
      const calls = [one, two].flatMap((session, server) =>
        Array.from({ length: 12 }, (_, call) =>
          session.client.callTool({
            name: "generate_video",
            // 5 s of the lite model: 25 credits each, so 8 fit in the day's 200.
            arguments: { prompt: `server ${server}, attempt ${call}: a heron`, duration: 5, wait: false },
          }),
        ),
      );
      const results = (await Promise.all(calls)) as CallToolResult[];
      const refused = results.filter((result) => result.isError === true);
      for (const result of refused) expect(textOf(result)).toMatch(/^budget_exceeded: /);
      expect(results.length - refused.length).toBe(DAILY / 25);
      expect(startsBy(sandbox, SHARED_KEY)).toBe(DAILY / 25);
      expect(await allowanceOf(two)).toMatchObject({ used_today: DAILY, remaining_today: 0 });
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  }, 60_000);
});
