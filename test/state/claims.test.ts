/**
 * A replica that died in the middle of a start, with Redis shared: its intent (mirrored to Redis before the
 * POST left) is settled by the next replica that receives the identical request, exactly as a restarted
 * single server settles its own journal: the history first, so nothing is paid twice.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { Logger } from "../../src/logger.js";
import { DEFAULT_ASPECT_RATIO_VIDEO, DEFAULT_DURATION_S, DEFAULT_VIDEO_MODEL } from "../../src/models.js";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { localState } from "../../src/state/local/index.js";
import { connectRedis } from "../../src/state/redis/index.js";
import type { StateHub } from "../../src/state/records.js";
import { fingerprintRequest } from "../../src/generations/fingerprint.js";
import { startHarness } from "../helpers/harness.js";
import { startRedis, type RedisProcess } from "../helpers/redis.js";
import { byRoute } from "../generations/support.js";

let redis: RedisProcess;
let sandbox: SandboxHandle;
const hubs: StateHub[] = [];

beforeAll(async () => {
  [redis, sandbox] = await Promise.all([
    startRedis(),
    startSandbox({ timings: { queuedMs: 40, processingMs: 160 } }),
  ]);
});
afterAll(async () => {
  await Promise.all(hubs.map((hub) => hub.close()));
  await sandbox?.close();
  await redis?.stop();
});

async function hub(): Promise<StateHub> {
  const made = await connectRedis(
    { url: redis.url, prefix: "gm-claims:", whenDown: "refuse" },
    new Logger("error", () => {}),
  );
  hubs.push(made);
  return made;
}

it("settles the intent of a replica that died after its POST reached the service: the task is returned, not paid again", async () => {
  const prompt = "a kite over the dunes";
  const body = {
    prompt,
    generation_type: "text_to_video",
    aspect_ratio: DEFAULT_ASPECT_RATIO_VIDEO,
    duration: DEFAULT_DURATION_S,
  };
  const fingerprint = fingerprintRequest("video", { ...body, model: DEFAULT_VIDEO_MODEL }, []);
  // The dead replica: it mirrored its intent, its claim lapsed, and the service charged its POST.
  const dead = (await hub()).forKey(
    { baseUrl: sandbox.baseUrl, apiKey: sandbox.keys.paid },
    await localState(undefined, new Logger("error", () => {})),
  );
  await dead.claims.mirror(
    {
      kind: "video",
      phase: "intent",
      key: "key-of-the-dead-replica",
      id: undefined,
      fingerprint,
      started_at: Date.now() - 500,
      request: body,
    },
    60_000,
  );
  const response = await fetch(`${sandbox.baseUrl}/generate`, {
    method: "POST",
    headers: { authorization: `Bearer ${sandbox.keys.paid}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const charged = ((await response.json()) as { data: { video_id: string } }).data.video_id;

  const survivor = await startHarness({ reuseSandbox: sandbox, hub: await hub() });
  try {
    const mark = sandbox.requests.length;
    const again = await survivor.call("generate_video", { prompt, wait: false });
    expect(again.result.isError, again.text).toBeFalsy();
    expect(again.structured).toMatchObject({ video_id: charged, reused: true });
    expect(byRoute(sandbox.requests.slice(mark), "generate")).toEqual([]);
  } finally {
    await survivor.close();
  }
});
