/**
 * Red team, gateway callers: two `--http` replicas of the built bin in gateway mode (the server holds one
 * service key; callers present tokens), on one real redis-server, against one sandbox. Callers of one key are
 * isolated from each other: the concurrency cap is each caller's own, a caller sees and lists only the videos
 * it started, and the settlement of one caller's lost start never hands it another caller's task (nor charges
 * that other caller again).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SandboxHandle } from "../../../src/sandbox/types.js";
import { sha256Hex } from "../../helpers/http-calls.js";
import { startHttpBin, type HttpServerProcess } from "../../helpers/http.js";
import { report, resultOf, rpc, SCALE, sleep, startsSent, tenant } from "../../helpers/red-team.js";
import { startSharedState, type SharedState } from "../../helpers/shared-state.js";

const TEAM = tenant("team", "sk-team-7f3a9c2e1b6d4085");
const ALICE = "tok-alice-c41d92ab7e";
const BOB = "tok-bob-58e0f1d3a9";

let shared: SharedState;
let sandbox: SandboxHandle;
let first: HttpServerProcess;
let second: HttpServerProcess;

beforeAll(async () => {
  shared = await startSharedState("red-team-gateway-", {
    accounts: [TEAM],
    timings: { queuedMs: 60_000, processingMs: 60_000 },
    rateLimit: { limit: 100_000, windowMs: 60_000 },
  });
  sandbox = shared.sandbox;
  const { redis, root } = shared;
  const env = (name: string) => ({
    HOME: root.dir,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_API_KEY: TEAM.key,
    GENERATION_HTTP_TOKENS: `${sha256Hex(ALICE)},${sha256Hex(BOB)}`,
    GENERATION_REDIS_URL: redis.url,
    GENERATION_STATE_DIR: `${root.dir}/${name}`,
    GENERATION_HTTP_MAX_CONCURRENT: "4",
    GENERATION_POLL_INTERVAL_MS: "200",
  });
  [first, second] = await Promise.all([startHttpBin([], env("one")), startHttpBin([], env("two"))]);
});
afterAll(async () => {
  await Promise.all([first?.stop(), second?.stop()]);
  await shared?.close();
});

async function start(server: HttpServerProcess, token: string, prompt: string) {
  const answer = await rpc(server.url, token, "tools/call", {
    name: "generate_video",
    arguments: { prompt, duration: 1, wait: false },
  });
  const structured = resultOf(answer)?.["structuredContent"] as Record<string, unknown> | undefined;
  if (structured?.["video_id"] === undefined) throw new Error(`no video_id: ${answer.text}`);
  return structured as { video_id: string; reused?: boolean; warning?: string };
}

const generates = () => startsSent(sandbox);

describe("gateway callers are isolated from each other", () => {
  it("counts the concurrency cap per caller: one caller at its cap leaves the other untouched", async () => {
    const before = generates();
    const held = await start(first, ALICE, "held by alice");
    const waits = Array.from({ length: 4 }, () =>
      rpc(first.url, ALICE, "tools/call", {
        name: "get_status",
        arguments: { video_id: held.video_id, wait: true, timeout_seconds: 3 },
      }),
    );
    await sleep(300);
    const aliceFifth = await rpc(first.url, ALICE, "tools/call", { name: "get_credits", arguments: {} });
    const bob = await rpc(first.url, BOB, "tools/call", { name: "get_credits", arguments: {} });
    report("gateway: one caller at its cap", {
      calls: 7,
      capPerCaller: 4,
      holderRefused429: aliceFifth.status === 429 ? 1 : 0,
      otherStatus: bob.status,
      otherIsError: resultOf(bob)?.["isError"] === true ? 1 : 0,
      startsSent: generates() - before,
    });
    expect(aliceFifth.status).toBe(429);
    expect(bob.status).toBe(200);
    expect(resultOf(bob)?.["isError"]).toBeUndefined();
    await Promise.all(waits);
  });

  it("shows a caller only its own videos: another's is not_found, and each lists its own", async () => {
    const before = generates();
    const alices = await start(first, ALICE, "alice's lighthouse");
    const bobs = await start(second, BOB, "bob's harbour");
    const peek = await rpc(second.url, BOB, "tools/call", {
      name: "get_status",
      arguments: { video_id: alices.video_id },
    });
    expect(resultOf(peek)?.["isError"]).toBe(true);
    expect(peek.text).toMatch(/not_found/);
    expect(peek.text).not.toContain("lighthouse");
    const own = await rpc(first.url, ALICE, "tools/call", {
      name: "get_status",
      arguments: { video_id: alices.video_id },
    });
    expect(resultOf(own)?.["isError"]).toBeUndefined();

    const listed = async (server: HttpServerProcess, token: string) => {
      const answer = await rpc(server.url, token, "tools/call", { name: "list_videos", arguments: {} });
      const items = (resultOf(answer)?.["structuredContent"] as { items: Array<{ video_id: string }> }).items;
      return items.map((item) => item.video_id);
    };
    // Each replica answers for every caller: the list is shared.
    const alicesList = await listed(second, ALICE);
    const bobsList = await listed(first, BOB);
    report("gateway: peeking at and listing another caller's videos", {
      calls: 6,
      peeksNotFound: /not_found/.test(peek.text) ? 1 : 0,
      othersVideosListed:
        alicesList.filter((id) => id === bobs.video_id).length +
        bobsList.filter((id) => id === alices.video_id).length,
      startsSent: generates() - before,
    });
    expect(alicesList).toContain(alices.video_id);
    expect(alicesList).not.toContain(bobs.video_id);
    expect(bobsList).toEqual([bobs.video_id]);
  });

  it(
    "never settles one caller's lost start with another caller's task, and never charges that one again",
    async () => {
      const before = generates();
      let reused = 0;
      // RED_TEAM_SCALE rounds, each with a prompt of its own.
      for (let round = 0; round < SCALE; round++) {
        const prompt = round === 0 ? "the same harbour at dawn" : `the same harbour at dawn, round ${round}`;
        const roundBefore = generates();
        // Alice's start reaches the service but its answer is lost; the history she settles from is slow, and
        // Bob starts the same prompt on the other replica meanwhile, so his task is the newest in the history.
        sandbox.faults.dropNext("generate", { phase: "after" });
        sandbox.faults.latency("videos", 1500);
        try {
          const alice = start(first, ALICE, prompt);
          await sleep(400);
          const bob = await start(second, BOB, prompt);
          const settled = await alice;
          expect(settled.video_id).not.toBe(bob.video_id);
          expect(generates() - roundBefore).toBe(2);
          // Each caller's identical call returns its own task, and nobody pays again.
          const bobAgain = await start(first, BOB, prompt);
          const aliceAgain = await start(second, ALICE, prompt);
          expect(bobAgain).toMatchObject({ video_id: bob.video_id, reused: true });
          expect(aliceAgain).toMatchObject({ video_id: settled.video_id, reused: true });
          reused += Number(bobAgain.reused === true) + Number(aliceAgain.reused === true);
          expect(generates() - roundBefore).toBe(2);
        } finally {
          sandbox.faults.latency("videos", 0);
        }
      }
      report("gateway: a lost start settled while another caller starts the same prompt", {
        rounds: SCALE,
        calls: 4 * SCALE,
        startsSent: generates() - before,
        retriesReused: reused,
      });
    },
    30_000 * SCALE,
  );
});
