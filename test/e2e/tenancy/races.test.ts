/**
 * Red team, one final answer per task: a cancel on one `--http` replica of the built bin racing the completion
 * seen on the other (both on one real redis-server, against one sandbox) ends with every replica answering
 * the same status. A file of its own beside redis.test.ts, whose Redis refuses writes on purpose.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SandboxHandle } from "../../../src/sandbox/types.js";
import type { HttpServerProcess } from "../../helpers/http.js";
import { report, resultOf, rpc, SCALE, sleep, startsSent } from "../../helpers/red-team.js";
import { startReplicas, startSharedState, type SharedState } from "../../helpers/shared-state.js";

let shared: SharedState;
let sandbox: SandboxHandle;
const stops: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  shared = await startSharedState("red-team-races-", {
    timings: { queuedMs: 200, processingMs: 800 },
    rateLimit: { limit: 100_000, windowMs: 60_000 },
  });
  ({ sandbox } = shared);
});
afterAll(async () => {
  for (const stop of stops.splice(0)) await stop().catch(() => undefined);
  await shared?.close();
});

async function replicas(count: number, env: Record<string, string> = {}): Promise<HttpServerProcess[]> {
  const started = await startReplicas(shared, count, env);
  for (const replica of started) stops.push(() => replica.stop());
  return started;
}

describe("one final answer per task", () => {
  it(
    "agrees on every replica when a cancel on one races the completion seen on the other (8 rounds)",
    async () => {
      // No frame sheet: its decode would put the completion after every cancel point below.
      const [first, second] = await replicas(2, { GENERATION_PREVIEWS: "off" });
      const outcomes: string[] = [];
      let disagreements = 0;
      // 8 rounds, times RED_TEAM_SCALE: the cancel comes at 8 points around the end, each SCALE times.
      const rounds = 8 * SCALE;
      for (let round = 0; round < rounds; round++) {
        const started = await rpc(first!.url, sandbox.keys.paid, "tools/call", {
          name: "generate_video",
          arguments: { prompt: `a race ${round}`, duration: 1 },
          task: {},
        });
        const taskId = (resultOf(started)?.["task"] as { taskId: string }).taskId;
        // Near the end of the generation: sometimes before the completion, sometimes after.
        await sleep(850 + (round % 8) * 40);
        await rpc(second!.url, sandbox.keys.paid, "tasks/cancel", { taskId });
        await sleep(600);
        const seen = await Promise.all(
          [first!, second!].map(async (server) => {
            const answer = await rpc(server.url, sandbox.keys.paid, "tasks/get", { taskId });
            return String(resultOf(answer)?.["status"]);
          }),
        );
        if (seen[0] !== seen[1]) disagreements += 1;
        expect(seen[0], `round ${round}`).toBe(seen[1]);
        expect(["completed", "cancelled"]).toContain(seen[0]);
        outcomes.push(seen[0]!);
      }
      report("cancel racing the completion across 2 replicas", {
        rounds,
        calls: 4 * rounds,
        completed: outcomes.filter((outcome) => outcome === "completed").length,
        cancelled: outcomes.filter((outcome) => outcome === "cancelled").length,
        disagreements,
        startsSent: startsSent(sandbox),
      });
      // The race went both ways at least once, or it tested nothing.
      expect(new Set(outcomes).size).toBe(2);
    },
    60_000 * SCALE,
  );

  it("agrees at once when the cancel lands while the other replica still builds the result (its frame sheet)", async () => {
    const [first, second] = await replicas(2);
    const seen: string[][] = [];
    for (const delay of [1150, 1250, 1350]) {
      const started = await rpc(first!.url, sandbox.keys.paid, "tools/call", {
        name: "generate_video",
        arguments: { prompt: `a late cancel ${delay}`, duration: 1 },
        task: {},
      });
      const taskId = (resultOf(started)?.["task"] as { taskId: string }).taskId;
      await sleep(delay);
      await rpc(second!.url, sandbox.keys.paid, "tasks/cancel", { taskId });
      seen.push(
        await Promise.all(
          [first!, second!].map(async (server) => {
            const answer = await rpc(server.url, sandbox.keys.paid, "tasks/get", { taskId });
            return String(resultOf(answer)?.["status"]);
          }),
        ),
      );
    }
    for (const [index, [one, other]] of seen.entries()) expect(one, `cancel ${index + 1}`).toBe(other);
    // At least one cancel came while the result was being built, or this tested nothing.
    expect(seen.some(([one]) => one === "cancelled")).toBe(true);
  }, 30_000);
});
