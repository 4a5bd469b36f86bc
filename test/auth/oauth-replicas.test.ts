/**
 * Red team, OAuth subjects across replicas (issue 20; CONTRACT.md "Remote sign-in (OAuth)"): two `--http`
 * replicas of the built bin in OAuth mode behind one public address, on one real redis-server, in front of
 * one sandbox key. Each subject (`iss` + `sub`) is one caller, whichever replica it reaches: its own tasks,
 * list, concurrency cap, duplicate guard and reuse; another subject sees none of it. No access token ever
 * reaches Redis (keys or values), the service, a state file or the servers' stderr.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { tempRoot } from "../helpers/http-calls.js";
import { startJwksIssuer, type JwksIssuer } from "../helpers/jwks-issuer.js";
import { startOAuthBin, type OAuthBin } from "../helpers/oauth-bin.js";
import { filesUnder, redisDump, resultOf, rpc as rawRpc, sleep } from "../helpers/red-team.js";
import { startRedis, type RedisProcess } from "../helpers/redis.js";

const PUBLIC_URL = "https://mcp.example.test";
const CAP = 3;

let sandbox: SandboxHandle;
let redis: RedisProcess;
let root: Awaited<ReturnType<typeof tempRoot>>;
let issuer: JwksIssuer;
let one: OAuthBin;
let two: OAuthBin;
let alice: string;
let bob: string;
const answers: string[] = [];

beforeAll(async () => {
  [sandbox, redis, root, issuer] = await Promise.all([
    startSandbox({
      timings: { queuedMs: 200, processingMs: 4000 },
      rateLimit: { limit: 100_000, windowMs: 60_000 },
    }),
    startRedis(),
    tempRoot("generation-mcp-oauth-replicas-"),
    startJwksIssuer({ audience: `${PUBLIC_URL}/mcp` }),
  ]);
  const replica = (name: string) =>
    startOAuthBin({
      sandbox,
      issuer: issuer.issuer,
      dir: `${root.dir}/${name}`,
      publicUrl: PUBLIC_URL,
      env: { GENERATION_REDIS_URL: redis.url, GENERATION_HTTP_MAX_CONCURRENT: String(CAP) },
    });
  [one, two] = await Promise.all([replica("one"), replica("two")]);
  [alice, bob] = await Promise.all([
    issuer.sign(issuer.claims({ sub: "alice" })),
    issuer.sign(issuer.claims({ sub: "bob" })),
  ]);
}, 30_000);

afterAll(async () => {
  await Promise.all([one?.server.stop(), two?.server.stop()]);
  await Promise.all([sandbox?.close(), redis?.stop(), issuer?.stop()]);
  await root?.remove();
});

async function rpc(...args: Parameters<typeof rawRpc>) {
  const answer = await rawRpc(...args);
  answers.push(`${JSON.stringify([...answer.headers])}\n${answer.text}`);
  return answer;
}

const call = (bin: OAuthBin, token: string, name: string, args: Record<string, unknown> = {}) =>
  rpc(bin.server.url, token, "tools/call", { name, arguments: args });

async function start(bin: OAuthBin, token: string, prompt: string) {
  const answer = await call(bin, token, "generate_video", { prompt, duration: 1, wait: false });
  const structured = resultOf(answer)?.["structuredContent"] as Record<string, unknown> | undefined;
  if (structured?.["video_id"] === undefined) throw new Error(`no video_id: ${answer.text}`);
  return structured as { video_id: string; reused?: boolean };
}

async function listed(bin: OAuthBin, token: string): Promise<string[]> {
  const answer = await call(bin, token, "list_videos");
  const items = (resultOf(answer)?.["structuredContent"] as { items: Array<{ video_id: string }> }).items;
  return items.map((item) => item.video_id);
}

const generates = () => sandbox.requests.filter((request) => request.route === "generate").length;

describe("each OAuth subject is one caller, on every replica", () => {
  it("lets alice see on replica two the video she started on replica one; bob sees nothing of it anywhere", async () => {
    const video = await start(one, alice, "alice's lighthouse, replica one");
    const status = await call(two, alice, "get_status", { video_id: video.video_id });
    expect(resultOf(status)?.["isError"], status.text).toBeUndefined();
    expect(await listed(two, alice)).toEqual([video.video_id]);
    expect(await listed(one, alice)).toEqual([video.video_id]);

    for (const bin of [one, two]) {
      const peek = await call(bin, bob, "get_status", { video_id: video.video_id });
      expect(resultOf(peek)?.["isError"]).toBe(true);
      expect(peek.text).toMatch(/not_found/);
      expect(peek.text).not.toContain("lighthouse");
      expect(await listed(bin, bob)).toEqual([]);
    }
  });

  it("is the same caller for the same subject under another token (a refreshed one)", async () => {
    const [video] = await listed(one, alice);
    const refreshed = await issuer.sign(
      issuer.claims({ sub: "alice", iat: Math.floor(Date.now() / 1000) - 1 }),
    );
    expect(refreshed).not.toBe(alice);
    expect(await listed(two, refreshed)).toEqual([video]);
  });

  it("counts the concurrency cap per subject: alice at her cap leaves bob untouched", async () => {
    const held = await start(one, alice, "held by alice");
    const waits = Array.from({ length: CAP }, () =>
      call(one, alice, "get_status", { video_id: held.video_id, wait: true, timeout_seconds: 3 }),
    );
    await sleep(400);
    const aliceOver = await call(one, alice, "get_credits");
    expect(aliceOver.status, aliceOver.text).toBe(429);
    const bobs = await call(one, bob, "get_credits");
    expect(bobs.status).toBe(200);
    expect(resultOf(bobs)?.["isError"]).toBeUndefined();
    await Promise.all(waits);
    expect((await call(one, alice, "get_credits")).status).toBe(200);
  }, 30_000);

  it("never hands one subject's start to another: the same request by alice and bob is two tasks; alice twice is one", async () => {
    const prompt = "the same harbour at dawn, asked by two people";
    const before = generates();
    const alices = await start(one, alice, prompt);
    const bobs = await start(two, bob, prompt);
    expect(bobs.video_id).not.toBe(alices.video_id);
    expect(bobs.reused).toBeFalsy();
    expect(generates()).toBe(before + 2);

    const aliceAgain = await start(two, alice, prompt);
    expect(aliceAgain).toMatchObject({ video_id: alices.video_id, reused: true });
    const bobAgain = await start(one, bob, prompt);
    expect(bobAgain).toMatchObject({ video_id: bobs.video_id, reused: true });
    expect(generates()).toBe(before + 2);
    expect(await listed(two, bob)).not.toContain(alices.video_id);
  });

  it("finds on replica two a video alice started on replica one with a prompt of 1,500 characters", async () => {
    const video = await start(
      one,
      alice,
      `alice's long harbour scene: ${"waves against the pier, ".repeat(60)}`,
    );
    const status = await call(two, alice, "get_status", { video_id: video.video_id });
    expect(resultOf(status)?.["isError"], status.text).toBeUndefined();
    expect(await listed(two, alice)).toContain(video.video_id);
  });
});

describe("the access tokens stay secret across replicas", () => {
  it("never puts a token in Redis (keys or values), a state file, stderr, an answer, or a service request", async () => {
    const tokens = [alice, bob];
    const haystacks: Array<[string, string]> = [
      ["replica one stderr", one.server.stderr()],
      ["replica two stderr", two.server.stderr()],
    ];
    const dump = await redisDump(redis.url);
    expect(dump.size).toBeGreaterThan(0);
    for (const [key, value] of dump) haystacks.push([`redis key ${key}`, `${key}\n${value}`]);
    for (const [name, text] of await filesUnder(root.dir)) haystacks.push([`file ${name}`, text]);
    answers.forEach((answer, at) => haystacks.push([`answer ${at}`, answer]));
    for (const token of tokens) {
      const signature = token.split(".")[2] ?? token;
      for (const [where, text] of haystacks) {
        expect(text.includes(token) || text.includes(signature), `a token shows in ${where}`).toBe(false);
      }
    }
    expect(new Set(sandbox.requests.map((request) => request.key))).toEqual(new Set([sandbox.keys.paid]));
  });
});
