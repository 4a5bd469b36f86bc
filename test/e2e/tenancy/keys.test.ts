/**
 * Red team, keys: against the built `--http` bin in passthrough mode, a real redis-server and the sandbox:
 * - a caller's key is masked for its runtime's whole life: an MCP task whose background wait ends while no
 *   request of that key is in flight, with a service text that echoes the key, shows it nowhere (tasks/get,
 *   tasks/result, mcp-tasks.json, Redis); neither does the later of two overlapping calls;
 * - a disconnect frees what it held: a flood of made-up bearers whose clients go away mid-call leaves memory
 *   near where it was, and a bearer such as `completed` never changes another caller's answer.
 */
import { randomBytes } from "node:crypto";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SandboxHandle } from "../../../src/sandbox/types.js";
import { startHttpBin, type HttpServerProcess } from "../../helpers/http.js";
import {
  filesUnder,
  heapSnapshotEnv,
  liveHeapMiB,
  redisDump,
  report,
  resultOf,
  rpc,
  rssMiB,
  SCALE,
  serviceRequests,
  sleep,
  startsSent,
  tenant,
  until,
} from "../../helpers/red-team.js";
import type { RedisProcess } from "../../helpers/redis.js";
import { startSharedState, type SharedState } from "../../helpers/shared-state.js";

const KEY = `sk-echo-${randomBytes(12).toString("hex")}`;
const OTHER = `sk-other-${randomBytes(12).toString("hex")}`;

let shared: SharedState;
let sandbox: SandboxHandle;
let redis: RedisProcess;
let root: SharedState["root"];
let server: HttpServerProcess;
let stateDir: string;

beforeAll(async () => {
  shared = await startSharedState("red-team-keys-", {
    accounts: [tenant("echo", KEY), tenant("other", OTHER)],
    timings: { queuedMs: 200, processingMs: 800 },
    rateLimit: { limit: 100_000, windowMs: 60_000 },
  });
  ({ sandbox, redis, root } = shared);
  stateDir = path.join(root.dir, "state");
  server = await startHttpBin([], {
    HOME: root.dir,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_STATE_DIR: stateDir,
    GENERATION_REDIS_URL: redis.url,
    GENERATION_POLL_INTERVAL_MS: "100",
    GENERATION_HTTP_MAX_CONCURRENT: "1000",
    ...heapSnapshotEnv(root.dir),
  });
});
afterAll(async () => {
  await server?.stop();
  await shared?.close();
});

/** Everything anyone could read back: on disk, in Redis, in the server's log (and how many files and keys). */
async function everywhere(): Promise<{ text: string; files: number; redisKeys: number }> {
  const files = await filesUnder(stateDir);
  const shared = await redisDump(redis.url);
  const text = [
    ...files.values(),
    ...[...shared].map(([key, value]) => `${key} ${value}`),
    server.stderr(),
  ].join("\n");
  return { text, files: files.size, redisKeys: shared.size };
}

/** How many times `needle` occurs in `text`. */
const occurrences = (text: string, needle: string) => text.split(needle).length - 1;

describe("a caller's key is masked for its runtime's whole life", () => {
  it("in an MCP task that ends while no request of the key is in flight, and in what was written", async () => {
    const startsBefore = startsSent(sandbox);
    const seen: string[] = [];
    // One task per round (RED_TEAM_SCALE rounds), each ending in the background.
    for (let round = 0; round < SCALE; round++) {
      const failedOnDisk = async () => {
        const text = [...(await filesUnder(stateDir)).values()].join("\n");
        return text.match(/"status":"failed"/g)?.length ?? 0;
      };
      const failedBefore = await failedOnDisk();
      const started = await rpc(server.url, KEY, "tools/call", {
        name: "generate_video",
        arguments: { prompt: `a lantern that fails ${round}`, duration: 2 },
        task: {},
      });
      const task = resultOf(started)?.["task"] as { taskId: string; statusMessage: string };
      const videoId = /video_id (\S+?):/.exec(task.statusMessage)?.[1] ?? "";
      expect(videoId).not.toBe("");
      // The request is over; the service then fails the task with a reason that quotes the caller's key.
      expect(sandbox.faults.failTask(videoId, `the provider refused key ${KEY}: quota used up`)).toBe(true);
      await until(async () => (await failedOnDisk()) > failedBefore, "the task to fail in the background");

      const answers = [
        await rpc(server.url, KEY, "tasks/get", { taskId: task.taskId }),
        await rpc(server.url, KEY, "tasks/result", { taskId: task.taskId }),
      ].map((answer) => answer.text);
      expect(answers[0]).toContain('"status":"failed"');
      expect(answers[1]).toContain("[redacted]");
      seen.push(...answers);
    }
    const written = await everywhere();
    report("key echoed by a task that ends alone", {
      rounds: SCALE,
      calls: 3 * SCALE,
      startsSent: startsSent(sandbox) - startsBefore,
      filesSearched: written.files,
      redisKeysSearched: written.redisKeys,
      keyShownInAnswers: seen.reduce((sum, text) => sum + occurrences(text, KEY), 0),
      keyShownWritten: occurrences(written.text, KEY),
    });
    for (const text of seen) expect(text).not.toContain(KEY);
    expect(written.text).not.toContain(KEY);
  });

  it("in both of two overlapping calls of one key, whichever ends last", async () => {
    const startsBefore = startsSent(sandbox);
    const seen: string[] = [];
    // Two overlapping readers per round (RED_TEAM_SCALE rounds), each round a video of its own.
    for (let round = 0; round < SCALE; round++) {
      const started = await rpc(server.url, KEY, "tools/call", {
        name: "generate_video",
        arguments: { prompt: `two readers ${round}`, duration: 2, wait: false },
      });
      const videoId = String((resultOf(started)?.["structuredContent"] as { video_id: string }).video_id);
      sandbox.faults.failTask(videoId, `no more renders for ${KEY}`);
      sandbox.faults.latency("video-status", 400);
      try {
        const first = rpc(server.url, KEY, "tools/call", {
          name: "get_status",
          arguments: { video_id: videoId },
        });
        await sleep(150);
        const second = rpc(server.url, KEY, "tools/call", {
          name: "get_status",
          arguments: { video_id: videoId },
        });
        for (const answer of await Promise.all([first, second])) {
          seen.push(answer.text);
          expect(answer.text).toContain("[redacted]");
          expect(answer.text).not.toContain(KEY);
        }
      } finally {
        sandbox.faults.latency("video-status", 0);
      }
    }
    const written = await everywhere();
    report("key echoed to two overlapping calls", {
      rounds: SCALE,
      calls: 3 * SCALE,
      startsSent: startsSent(sandbox) - startsBefore,
      answersRedacted: seen.filter((text) => text.includes("[redacted]")).length,
      keyShownInAnswers: seen.reduce((sum, text) => sum + occurrences(text, KEY), 0),
      keyShownWritten: occurrences(written.text, KEY),
    });
    expect(written.text).not.toContain(KEY);
  });
});

describe("a disconnect frees everything it held", () => {
  it(
    "keeps memory near its baseline through 1,500 made-up bearers whose clients go away mid-call",
    async () => {
      // Every call reaches the service and waits there: the client is gone long before the answer.
      sandbox.faults.latency("credits", 300);
      const flood = async (from: number, count: number) => {
        for (let at = from; at < from + count; at += 50) {
          await Promise.all(
            Array.from({ length: Math.min(50, from + count - at) }, async (_, i) => {
              const controller = new AbortController();
              // Long enough for the call to reach the service (it answers after 300 ms), short of its answer.
              const timer = setTimeout(() => controller.abort(), 250);
              await rpc(
                server.url,
                `made-up-${at + i}-${randomBytes(6).toString("hex")}`,
                "tools/call",
                { name: "get_credits", arguments: {} },
                { signal: controller.signal },
              ).catch(() => undefined);
              clearTimeout(timer);
            }),
          );
        }
      };
      const pid = server.child.pid ?? 0;
      try {
        await flood(0, 300);
        await sleep(1000);
        const baseline = await liveHeapMiB(pid, root.dir);
        const rssBefore = await rssMiB(pid);
        const [creditsBefore, startsBefore] = [serviceRequests(sandbox, "credits"), startsSent(sandbox)];
        await flood(300, 1500 * SCALE);
        // Idle connections close after the keep-alive timeout (5 s); what is left then is what calls kept.
        await sleep(6000);
        const after = await liveHeapMiB(pid, root.dir);
        // The live heap, after a full collection: what the calls left behind (before the fix each kept its
        // bearer registered for good). RSS is reported, not judged: it depends on when the collector ran.
        report("disconnects", {
          calls: 1500 * SCALE,
          reachedService: serviceRequests(sandbox, "credits") - creditsBefore,
          startsSent: startsSent(sandbox) - startsBefore,
          heapBeforeMiB: baseline,
          heapAfterMiB: after,
          rssBeforeMiB: rssBefore,
          rssAfterMiB: await rssMiB(pid),
        });
        expect(after - baseline).toBeLessThan(4);
      } finally {
        sandbox.faults.latency("credits", 0);
      }
    },
    60_000 * SCALE,
  );

  it("never lets a bearer such as `completed` change another caller's answer", async () => {
    const startsBefore = startsSent(sandbox);
    // A call whose client goes away while the service is slow to answer it.
    sandbox.faults.latency("credits", 1000);
    try {
      const controller = new AbortController();
      const pending = rpc(
        server.url,
        "completed",
        "tools/call",
        { name: "get_credits", arguments: {} },
        { signal: controller.signal },
      ).catch(() => undefined);
      await sleep(100);
      controller.abort();
      await pending;
      // Past the time the service takes to answer it, whether or not the server still waits for that answer.
      await sleep(1500);
    } finally {
      sandbox.faults.latency("credits", 0);
    }
    const started = await rpc(server.url, OTHER, "tools/call", {
      name: "generate_video",
      arguments: { prompt: "an answer of my own", duration: 1, wait: true, timeout_seconds: 20 },
    });
    const result = resultOf(started)?.["structuredContent"] as { status: string };
    report("bearer `completed`", {
      calls: 2,
      startsSent: startsSent(sandbox) - startsBefore,
      otherStatus: result.status,
      otherRedacted: occurrences(started.text, "[redacted]"),
    });
    expect(result.status).toBe("completed");
    expect(started.text).not.toContain("[redacted]");
  });
});
