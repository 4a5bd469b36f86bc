/**
 * A 2026-07-28 cost confirmation answers one question once, wherever it is replayed: the `requestState` the
 * user accepted for a 50-credit call (per-call limit 30, so only a confirmation lets it through) is no answer
 * a second time, on the replica that took it, on another replica sharing its Redis, or on the same replica
 * after a restart; nor, without Redis, on a server restarted with the same state folder. Real processes
 * throughout (the built bin over HTTP, a real redis-server, the sandbox), a gateway key with one token. The
 * call asks for `allow_duplicate: true`, so the duplicate guard never answers in the confirmation's place:
 * only the confirmation stands between a replay and a second charge. Needs `npm run build`.
 */
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { sha256Hex, tempRoot } from "../helpers/http-calls.js";
import { startHttpBin, type HttpServerProcess } from "../helpers/http.js";
import { tenant } from "../helpers/red-team.js";
import { startRedis, type RedisProcess } from "../helpers/redis.js";
import { modernCall, startRequestsBy, textOf } from "../spend/spend-helpers.js";

const KEY = "sk-confirm-replay";
const TOKEN = "tok-confirm-replay-6c1e0f";
const ACCEPT = { confirm_cost: { action: "accept", content: { confirm: true } } };

let sandbox: SandboxHandle;
let redis: RedisProcess;
let root: Awaited<ReturnType<typeof tempRoot>>;
const servers = new Set<HttpServerProcess>();

beforeAll(async () => {
  [sandbox, redis, root] = await Promise.all([
    startSandbox({
      timings: { queuedMs: 60_000, processingMs: 60_000 },
      rateLimit: { limit: 100_000, windowMs: 60_000 },
      accounts: [tenant(KEY, KEY)],
    }),
    startRedis(),
    tempRoot("generation-mcp-confirm-replay-"),
  ]);
}, 30_000);

afterAll(async () => {
  await Promise.all([...servers].map((server) => server.stop()));
  await Promise.all([sandbox?.close(), redis?.stop()]);
  await root?.remove();
});

/** A gateway server of the key, limits 30 per call / confirm above 20; `folder` is its state folder. */
async function serve(folder: string, env: Record<string, string> = {}): Promise<HttpServerProcess> {
  const server = await startHttpBin([], {
    HOME: root.dir,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_STATE_DIR: path.join(root.dir, folder),
    GENERATION_API_KEY: KEY,
    GENERATION_HTTP_TOKENS: sha256Hex(TOKEN),
    GENERATION_MAX_CREDITS_PER_CALL: "30",
    GENERATION_CONFIRM_ABOVE_CREDITS: "20",
    ...env,
  });
  servers.add(server);
  return server;
}

async function restart(server: HttpServerProcess, folder: string, env: Record<string, string> = {}) {
  await server.stop();
  servers.delete(server);
  return serve(folder, env);
}

let prompts = 0;
/** 10 s on the lite model: 50 credits, above the per-call limit. */
const question = () => ({
  prompt: `a kite over the dunes, replayed #${prompts++}`,
  duration: 10,
  wait: false,
  allow_duplicate: true,
});

const call = (server: HttpServerProcess, args: Record<string, unknown>, extra: Record<string, unknown>) =>
  modernCall(
    server.url,
    TOKEN,
    "tools/call",
    { name: "generate_video", arguments: args, ...extra },
    {
      elicitation: true,
    },
  );

/** Asked, then accepted with the state: one start. Answers the state the user accepted. */
async function acceptOnce(server: HttpServerProcess, args: Record<string, unknown>): Promise<string> {
  const asked = await call(server, args, {});
  expect(asked).toMatchObject({ resultType: "input_required", requestState: expect.any(String) });
  const state = String(asked?.["requestState"]);
  const before = startRequestsBy(sandbox, KEY);
  const started = await call(server, args, { inputResponses: ACCEPT, requestState: state });
  expect(started?.["isError"], textOf(started)).toBeUndefined();
  expect(started).toMatchObject({
    structuredContent: { estimated_credits: 50, video_id: expect.any(String) },
  });
  expect(startRequestsBy(sandbox, KEY)).toBe(before + 1);
  return state;
}

/** The replayed accept is no answer: the client is asked again and nothing is sent. */
async function expectAskedAgain(server: HttpServerProcess, args: Record<string, unknown>, state: string) {
  const before = startRequestsBy(sandbox, KEY);
  const replayed = await call(server, args, { inputResponses: ACCEPT, requestState: state });
  expect(replayed, JSON.stringify(replayed)).toMatchObject({ resultType: "input_required" });
  expect(replayed?.["requestState"]).not.toBe(state);
  expect(startRequestsBy(sandbox, KEY)).toBe(before);
}

describe("a used confirmation on replicas sharing Redis", () => {
  it("is no answer on the replica that took it, on the other one, nor after the first restarted", async () => {
    const env = { GENERATION_REDIS_URL: redis.url };
    const b = await serve("replica-b", env);
    let a = await serve("replica-a", env);
    const args = question();
    const state = await acceptOnce(a, args);
    await expectAskedAgain(a, args, state);
    await expectAskedAgain(b, args, state);
    a = await restart(a, "replica-a", env);
    await expectAskedAgain(a, args, state);
    // And a state the user accepted on B after that is its own answer, once.
    const other = question();
    const second = await acceptOnce(b, other);
    await expectAskedAgain(a, other, second);
  }, 60_000);
});

describe("a used confirmation on one server without Redis", () => {
  it("stays used across a restart with the same state folder", async () => {
    let server = await serve("alone");
    const args = question();
    const state = await acceptOnce(server, args);
    await expectAskedAgain(server, args, state);
    server = await restart(server, "alone");
    await expectAskedAgain(server, args, state);
  }, 60_000);

  it("stays used across a restart when the user declined it, though nothing was started", async () => {
    let server = await serve("declined");
    const args = question();
    const asked = await call(server, args, {});
    const state = String(asked?.["requestState"]);
    const declined = await call(server, args, {
      inputResponses: { confirm_cost: { action: "decline" } },
      requestState: state,
    });
    expect(textOf(declined)).toMatch(/^Declined by the user: /);
    server = await restart(server, "declined");
    await expectAskedAgain(server, args, state);
  }, 60_000);
});
