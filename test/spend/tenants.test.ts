/**
 * GENERATION_DAILY_CREDITS is per caller where one service key serves several (CONTRACT.md "Spend limits",
 * "Remote sign-in (OAuth)"), through the built bin against the sandbox:
 *
 * - gateway mode (GENERATION_HTTP_TOKENS_FILE of SHA-256 hashes, one service key held by the server): token A
 *   spends its whole day and is refused with budget_exceeded; token B still starts; get_credits gives each
 *   its own `allowance`;
 * - OAuth mode (tokens from a JWKS issuer), two replicas on one real redis-server: subject A spends its day
 *   across both replicas and is refused on either (under a refreshed token too); subject B still starts; the
 *   allowance of each subject is the same on both replicas.
 *
 * Every start goes to one sandbox key, so the sandbox's request log counts the starts of all callers: it
 * grows by exactly one per start that was let through, and not at all for a refusal. Needs `npm run build`.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { sha256Hex } from "../helpers/http-calls.js";
import { startHttpBin, type HttpServerProcess } from "../helpers/http.js";
import { startJwksIssuer, type JwksIssuer } from "../helpers/jwks-issuer.js";
import { startOAuthBin, type OAuthBin } from "../helpers/oauth-bin.js";
import { resultOf, rpc, tenant } from "../helpers/red-team.js";
import type { RedisProcess } from "../helpers/redis.js";
import { startSharedState, type SharedState } from "../helpers/shared-state.js";
import { nextMidnightUtc, startRequestsBy, startsBy } from "./spend-helpers.js";

const DAILY = 100;
/** 5 s on the lite model: 25 credits, so a caller's day holds exactly four starts. */
const COST = 25;
const STARTS_A_DAY = DAILY / COST;
const PUBLIC_URL = "https://mcp.spend.example.test";

const TEAM = tenant("team", "sk-spend-team-5e1c0a7f93");
const TOKEN_A = "tok-spend-alice-0b7e4c19d2";
const TOKEN_B = "tok-spend-bob-a93f5d0e61";

let shared: SharedState;
let sandbox: SandboxHandle;
let redis: RedisProcess;
let root: SharedState["root"];
let issuer: JwksIssuer;
let gateway: HttpServerProcess;
let replicas: OAuthBin[] = [];

beforeAll(async () => {
  [shared, issuer] = await Promise.all([
    startSharedState("generation-mcp-spend-tenants-", {
      accounts: [TEAM],
      timings: { queuedMs: 60_000, processingMs: 60_000 },
      rateLimit: { limit: 100_000, windowMs: 60_000 },
    }),
    startJwksIssuer({ audience: `${PUBLIC_URL}/mcp` }),
  ]);
  ({ sandbox, redis, root } = shared);
  const tokensFile = path.join(root.dir, "tokens.sha256");
  await writeFile(
    tokensFile,
    `# gateway callers of the team key\n${sha256Hex(TOKEN_A)}  # alice\n${sha256Hex(TOKEN_B)}  # bob\n`,
  );
  const replica = (name: string) =>
    startOAuthBin({
      sandbox,
      issuer: issuer.issuer,
      dir: path.join(root.dir, name),
      publicUrl: PUBLIC_URL,
      env: {
        GENERATION_API_KEY: TEAM.key,
        GENERATION_REDIS_URL: redis.url,
        GENERATION_DAILY_CREDITS: String(DAILY),
      },
    });
  let one: OAuthBin;
  let two: OAuthBin;
  [gateway, one, two] = await Promise.all([
    startHttpBin([], {
      HOME: root.dir,
      GENERATION_BASE_URL: sandbox.baseUrl,
      GENERATION_API_KEY: TEAM.key,
      GENERATION_HTTP_TOKENS_FILE: tokensFile,
      GENERATION_STATE_DIR: path.join(root.dir, "gateway"),
      GENERATION_DAILY_CREDITS: String(DAILY),
    }),
    replica("replica-one"),
    replica("replica-two"),
  ]);
  replicas = [one, two];
}, 30_000);

afterAll(async () => {
  await Promise.all([gateway?.stop(), ...replicas.map((bin) => bin.server.stop())]);
  await Promise.all([shared?.close(), issuer?.stop()]);
});

let prompts = 0;

/** One generate_video of COST credits with a prompt never used before (so the duplicate guard stays out). */
async function startVideo(url: string, bearer: string): Promise<{ isError: boolean; text: string }> {
  const answer = await rpc(url, bearer, "tools/call", {
    name: "generate_video",
    arguments: { prompt: `tenant spend ${++prompts}: a paper boat on a pond`, duration: 5, wait: false },
  });
  expect(answer.status, answer.text).toBe(200);
  const result = resultOf(answer) as { isError?: boolean; content?: Array<{ text?: string }> } | undefined;
  return { isError: result?.isError === true, text: result?.content?.[0]?.text ?? answer.text };
}

async function allowanceOf(url: string, bearer: string): Promise<Record<string, unknown>> {
  const answer = await rpc(url, bearer, "tools/call", { name: "get_credits", arguments: {} });
  const result = resultOf(answer) as
    { isError?: boolean; structuredContent?: { allowance?: Record<string, unknown> } } | undefined;
  expect(result?.isError, answer.text).toBeUndefined();
  return result?.structuredContent?.allowance ?? {};
}

const day = (used: number) => ({
  daily_limit: DAILY,
  used_today: used,
  remaining_today: DAILY - used,
  resets_at: nextMidnightUtc(),
});

/** What a refusal of the daily limit says to a caller of a shared server. */
function expectDailyRefusal(text: string): void {
  expect(text).toMatch(/^budget_exceeded: /);
  expect(text).toContain(`only 0 of today's ${DAILY} credits remain for this caller`);
  expect(text).toContain(nextMidnightUtc());
  // The limit is the operator's: nothing in the caller's own client raises it.
  expect(text).toMatch(/Next step: .*operator/);
}

describe("GENERATION_DAILY_CREDITS per gateway token (one service key)", () => {
  it("refuses token A once its day is spent, still starts token B, and reports each its own allowance", async () => {
    const before = startsBy(sandbox, TEAM.key);
    for (let index = 0; index < STARTS_A_DAY; index++) {
      const started = await startVideo(gateway.url, TOKEN_A);
      expect(started.isError, started.text).toBe(false);
    }
    expect(startsBy(sandbox, TEAM.key) - before).toBe(STARTS_A_DAY);

    const refused = await startVideo(gateway.url, TOKEN_A);
    expect(refused.isError).toBe(true);
    expectDailyRefusal(refused.text);
    // Refused before anything reached the service.
    expect(startRequestsBy(sandbox, TEAM.key) - before).toBe(STARTS_A_DAY);

    expect(await allowanceOf(gateway.url, TOKEN_A)).toEqual(day(DAILY));
    expect(await allowanceOf(gateway.url, TOKEN_B)).toEqual(day(0));

    const bobs = await startVideo(gateway.url, TOKEN_B);
    expect(bobs.isError, bobs.text).toBe(false);
    expect(startsBy(sandbox, TEAM.key) - before).toBe(STARTS_A_DAY + 1);
    expect(await allowanceOf(gateway.url, TOKEN_B)).toEqual(day(COST));
    // B's start took nothing of A's day, and A's refusal nothing of B's.
    expect(await allowanceOf(gateway.url, TOKEN_A)).toEqual(day(DAILY));
    const stillRefused = await startVideo(gateway.url, TOKEN_A);
    expect(stillRefused.isError).toBe(true);
    expect(startRequestsBy(sandbox, TEAM.key) - before).toBe(STARTS_A_DAY + 1);
  }, 60_000);
});

describe("GENERATION_DAILY_CREDITS per OAuth subject, on two replicas sharing Redis", () => {
  it("refuses subject A on every replica once its day is spent, still starts subject B", async () => {
    const [one, two] = replicas as [OAuthBin, OAuthBin];
    const [alice, bob] = await Promise.all([
      issuer.sign(issuer.claims({ sub: "alice" })),
      issuer.sign(issuer.claims({ sub: "bob" })),
    ]);
    const before = startsBy(sandbox, TEAM.key);
    // Alice's day is spent half on each replica: only a count shared in Redis sees all four starts.
    for (let index = 0; index < STARTS_A_DAY; index++) {
      const bin = index % 2 === 0 ? one : two;
      const started = await startVideo(bin.server.url, alice);
      expect(started.isError, started.text).toBe(false);
    }
    expect(startsBy(sandbox, TEAM.key) - before).toBe(STARTS_A_DAY);
    for (const bin of [one, two]) {
      const refused = await startVideo(bin.server.url, alice);
      expect(refused.isError).toBe(true);
      expectDailyRefusal(refused.text);
      expect(await allowanceOf(bin.server.url, alice)).toEqual(day(DAILY));
    }
    // The subject is the caller, not the token: a refreshed token of alice has no new day.
    const refreshed = await issuer.sign(
      issuer.claims({ sub: "alice", iat: Math.floor(Date.now() / 1000) - 1 }),
    );
    expect(refreshed).not.toBe(alice);
    const again = await startVideo(two.server.url, refreshed);
    expect(again.isError).toBe(true);
    expectDailyRefusal(again.text);
    expect(startRequestsBy(sandbox, TEAM.key) - before).toBe(STARTS_A_DAY);

    for (const bin of [one, two]) expect(await allowanceOf(bin.server.url, bob)).toEqual(day(0));
    const bobs = await startVideo(two.server.url, bob);
    expect(bobs.isError, bobs.text).toBe(false);
    expect(startsBy(sandbox, TEAM.key) - before).toBe(STARTS_A_DAY + 1);
    // Counted once, seen by both replicas; alice's day untouched by it.
    for (const bin of [one, two]) {
      expect(await allowanceOf(bin.server.url, bob)).toEqual(day(COST));
      expect(await allowanceOf(bin.server.url, alice)).toEqual(day(DAILY));
    }
    const bobsSecond = await startVideo(one.server.url, bob);
    expect(bobsSecond.isError, bobsSecond.text).toBe(false);
    expect(await allowanceOf(two.server.url, bob)).toEqual(day(2 * COST));
    expect(startsBy(sandbox, TEAM.key) - before).toBe(STARTS_A_DAY + 2);
    expect(startRequestsBy(sandbox, TEAM.key) - before).toBe(STARTS_A_DAY + 2);
  }, 60_000);
});
