/**
 * Red team, the issuer behind the OAuth tokens (issues 20 and 26): the built bin in `--http` OAuth mode,
 * trusting a small issuer of the test's own (jwks-issuer.ts) that rotates its keys, goes away, answers 500
 * or answers too slowly.
 * - Rotation: a token under a new `kid` is accepted once the server fetches the keys again, which it does
 *   for an unknown `kid` (at most every 5 s: the cool-down keeps forged kids from making it a fetch
 *   cannon); a retired key's tokens are refused once the server has the new set.
 * - Unreachable at start: one clear stderr line, `/readyz` 503, every request 503 (never let through, never
 *   sent to the service); when the issuer answers again the same process becomes ready and serves, without
 *   a restart.
 * - Lost later: the keys in hand keep verifying and `/readyz` stays 200; a token under any other `kid` is
 *   401 `invalid_token`, and a flood of them costs the issuer a fetch per cool-down, nobody else anything.
 * The cases wait on the server's own clocks (the 5 s cool-down, the 10 s age a probe refreshes at, the 5 s
 * fetch timeout), so they run at once, each with its own sandbox, issuer and server.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { tempRoot } from "../helpers/http-calls.js";
import { startJwksIssuer, type IssuerFault, type JwksIssuer } from "../helpers/jwks-issuer.js";
import { readyz, startOAuthBin, type OAuthBin } from "../helpers/oauth-bin.js";
import { rpc, sleep, until } from "../helpers/red-team.js";
import { freePort } from "../helpers/redis.js";

const UNREACHABLE =
  /OAuth: the issuer http:\/\/127\.0\.0\.1:\d+ cannot be reached \(.+\): \/readyz reports not ready and requests are refused until it answers\./g;
/** The issuer lost while its keys are in hand. */
const KEPT =
  /OAuth: the issuer http:\/\/127\.0\.0\.1:\d+ cannot be reached \(.+\): tokens are still checked against the keys fetched at \S+; a token under any other key is refused until it answers\./g;
const IN_HAND = /OAuth: the keys of http:\/\/127\.0\.0\.1:\d+ are in hand/g;

let root: Awaited<ReturnType<typeof tempRoot>>;
const stops: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  root = await tempRoot("generation-mcp-oauth-issuer-");
});

afterAll(async () => {
  for (const stop of stops.splice(0).reverse()) await stop().catch(() => undefined);
  await root?.remove();
});

interface Setup {
  sandbox: SandboxHandle;
  issuer: JwksIssuer;
  bin: OAuthBin;
}

/** A sandbox, an issuer and a server trusting it, each on its own port; the issuer stopped first if `away`. */
async function setUp(name: string, away = false): Promise<Setup> {
  const [sandbox, port] = await Promise.all([
    startSandbox({ rateLimit: { limit: 100_000, windowMs: 60_000 } }),
    freePort(),
  ]);
  stops.push(() => sandbox.close());
  const issuer = await startJwksIssuer({ audience: `http://127.0.0.1:${port}/mcp` });
  stops.push(() => issuer.stop());
  if (away) await issuer.stop();
  const bin = await startOAuthBin({ sandbox, issuer: issuer.issuer, dir: `${root.dir}/${name}`, port });
  stops.push(() => bin.server.stop());
  return { sandbox, issuer, bin };
}

const credits = (bin: OAuthBin, token: string) =>
  rpc(bin.resource, token, "tools/call", { name: "get_credits", arguments: {} });
const jwksFetches = (issuer: JwksIssuer) => issuer.requests.filter((path) => path === "/jwks").length;
const count = (bin: OAuthBin, line: RegExp) => bin.server.stderr().match(line)?.length ?? 0;

/** A token signed with the issuer's own current key, naming a `kid` nobody publishes. */
const randomKid = (issuer: JwksIssuer) =>
  issuer.sign(issuer.claims({ sub: "forger" }), { kid: `forged-${randomUUID()}` });

/** The 401 every token under an unknown `kid` gets, whether or not the issuer answers. */
async function expectInvalidToken(bin: OAuthBin, token: string): Promise<void> {
  const answer = await credits(bin, token);
  expect(answer.status, answer.text).toBe(401);
  expect(answer.headers.get("www-authenticate")).toMatch(/error="invalid_token"/);
}

/** Every request is answered 503 (with Retry-After), and none reaches the service. */
async function expectRefusedWhileAway({ sandbox, bin }: Setup, tokens: string[]): Promise<void> {
  const before = sandbox.requests.length;
  for (const token of tokens) {
    const answer = await credits(bin, token);
    expect(answer.status, answer.text).toBe(503);
    expect(answer.headers.get("retry-after")).toBe("5");
    expect(answer.text).toMatch(/identity provider cannot be reached/);
  }
  expect(sandbox.requests.length).toBe(before);
}

type Fault = [
  how: string,
  induce: (issuer: JwksIssuer) => void,
  restore: (issuer: JwksIssuer) => Promise<void>,
];
const STOPPED: Fault = ["stopped", (issuer) => void issuer.stop(), (issuer) => issuer.start()];
const ERROR: Fault = [
  "answering 500",
  (issuer) => (issuer.fault = "error" as IssuerFault),
  async (issuer) => void (issuer.fault = undefined),
];
const SLOW: Fault = [
  "answering too slowly",
  (issuer) => (issuer.fault = "slow"),
  async (issuer) => void (issuer.fault = undefined),
];

/** The issuer lost while the server holds its keys, then found again. */
async function lostAndFound(setup: () => Setup, [, induce, restore]: Fault): Promise<void> {
  const { sandbox, issuer, bin } = setup();
  const token = await issuer.sign(issuer.claims());
  expect((await credits(bin, token)).status).toBe(200);
  const [kept, inHand, refused] = [count(bin, KEPT), count(bin, IN_HAND), count(bin, UNREACHABLE)];

  induce(issuer);
  // The server learns of it at its next fetch: a forged kid asks for one (once per 5 s cool-down), and
  // so does a readiness probe finding the last fetch older than 10 s. Ready all along.
  await until(
    async () => {
      expect(await readyz(bin)).toBe(200);
      await expectInvalidToken(bin, await randomKid(issuer));
      await sleep(250);
      return count(bin, KEPT) > kept;
    },
    "the issuer's absence noticed",
    40_000,
  );
  const before = sandbox.requests.length;
  for (const known of [token, await issuer.sign(issuer.claims({ sub: "bob" }))]) {
    const served = await credits(bin, known);
    expect(served.status, served.text).toBe(200);
  }
  expect(sandbox.requests.length).toBeGreaterThan(before);
  await expectInvalidToken(bin, await randomKid(issuer));
  expect(await readyz(bin)).toBe(200);

  await restore(issuer);
  await until(
    async () => {
      expect(await readyz(bin)).toBe(200);
      await sleep(500);
      return count(bin, IN_HAND) > inHand;
    },
    "the issuer found again",
    40_000,
  );
  const served = await credits(bin, token);
  expect(served.status, served.text).toBe(200);
  expect(count(bin, KEPT)).toBe(kept + 1);
  expect(count(bin, UNREACHABLE)).toBe(refused);
}

const keepsVerifying = ([how]: Fault) =>
  `keeps verifying the keys in hand while the issuer is ${how}, refuses other kids, stays ready`;

describe.concurrent("the issuer behind the OAuth tokens", () => {
  describe("the issuer unreachable at start", () => {
    it("starts, says so once on stderr, is not ready, answers 503; then serves when the issuer comes up", async () => {
      const setup = await setUp("start", true);
      const { issuer, bin } = setup;
      expect(bin.server.stderr().match(UNREACHABLE)).toHaveLength(1);
      expect(await readyz(bin)).toBe(503);
      const token = await issuer.sign(issuer.claims());
      await expectRefusedWhileAway(setup, [token, "forged.not-a.token"]);

      await issuer.start();
      await until(async () => (await readyz(bin)) === 200, "ready once the issuer answers", 20_000);
      const served = await credits(bin, token);
      expect(served.status, served.text).toBe(200);
      expect(bin.server.stderr()).toMatch(/OAuth: the keys of http:\/\/127\.0\.0\.1:\d+ are in hand/);
      expect(bin.server.child.exitCode).toBeNull();
      expect(bin.server.stderr().match(UNREACHABLE)).toHaveLength(1);
    }, 40_000);
  });

  describe("key rotation", () => {
    it("accepts a new kid by fetching the keys again, and refuses the retired key's tokens", async () => {
      const { issuer, bin } = await setUp("rotation");
      const old = issuer.current;
      const oldToken = await issuer.sign(issuer.claims({ sub: "old-key" }));
      expect((await credits(bin, oldToken)).status).toBe(200);

      await issuer.rotate();
      const newToken = await issuer.sign(issuer.claims({ sub: "new-key" }));
      const rotatedAt = Date.now();
      // Refused while the set fetched at start is fresh (the cool-down); then the unknown kid fetches it.
      let fetchedByRequest = false;
      await until(
        async () => {
          const fetches = issuer.requests.filter((path) => path === "/jwks").length;
          const answer = await credits(bin, newToken);
          if (answer.status !== 200) {
            expect(answer.status).toBe(401);
            await sleep(1000);
            return false;
          }
          fetchedByRequest = issuer.requests.filter((path) => path === "/jwks").length > fetches;
          return true;
        },
        "the new kid accepted",
        45_000,
      );
      expect(fetchedByRequest).toBe(true);
      expect(Date.now() - rotatedAt).toBeLessThan(15_000);
      // Both keys are published: the old key's tokens still pass.
      expect((await credits(bin, oldToken)).status).toBe(200);

      issuer.retire(old.kid);
      // The next refresh of the keys (a readiness probe asks for one) drops the old key.
      await until(
        async () => {
          await readyz(bin);
          await sleep(500);
          return (await credits(bin, oldToken)).status === 401;
        },
        "the retired key refused",
        20_000,
      );
      expect((await credits(bin, newToken)).status).toBe(200);
      expect(bin.server.stderr().match(UNREACHABLE)).toBeNull();
    }, 70_000);
  });

  // One server through two outages in turn: the second must be told again once the first has ended.
  describe("the issuer lost and found again, twice", () => {
    let setup: Setup;
    beforeAll(async () => {
      setup = await setUp("lost-twice");
    });
    for (const fault of [STOPPED, ERROR]) {
      it.sequential(keepsVerifying(fault), () => lostAndFound(() => setup, fault), 90_000);
    }
  });

  describe("the issuer lost and found again", () => {
    let setup: Setup;
    beforeAll(async () => {
      setup = await setUp("lost-slow");
    });
    it(keepsVerifying(SLOW), () => lostAndFound(() => setup, SLOW), 90_000);
  });

  describe("the key set answering 500 while tokens under random kids arrive", () => {
    it("serves every valid token, refuses every random kid with 401, and asks the issuer a handful of times", async () => {
      const { sandbox, issuer, bin } = await setUp("random-kids");
      const valid = await issuer.sign(issuer.claims({ sub: "carol" }));
      expect((await credits(bin, valid)).status).toBe(200);

      issuer.fault = "error";
      const fetchesBefore = jwksFetches(issuer);
      const servedBefore = sandbox.requests.length;
      const startedAt = Date.now();
      const statuses = { valid: [] as number[], forged: [] as number[] };
      for (let round = 0; round < 50; round += 1) {
        // Each forged token arrives beside a valid one, the order alternating, over more than one cool-down.
        await sleep(150);
        const forged = await randomKid(issuer);
        const pair = round % 2 === 0 ? [forged, valid] : [valid, forged];
        const answers = await Promise.all(pair.map((token) => credits(bin, token)));
        for (const [index, answer] of answers.entries()) {
          if (pair[index] === forged) {
            statuses.forged.push(answer.status);
            expect(answer.headers.get("www-authenticate") ?? "", answer.text).toMatch(
              /error="invalid_token"/,
            );
          } else statuses.valid.push(answer.status);
        }
      }
      const elapsed = Date.now() - startedAt;
      expect(statuses.valid).toEqual(Array.from({ length: 50 }, () => 200));
      expect(statuses.forged).toEqual(Array.from({ length: 50 }, () => 401));
      expect(sandbox.requests.length - servedBefore).toBeGreaterThanOrEqual(50);
      // One fetch per 5 s cool-down at most, however many forged kids came.
      const fetches = jwksFetches(issuer) - fetchesBefore;
      expect(fetches).toBeGreaterThanOrEqual(1);
      expect(fetches).toBeLessThanOrEqual(Math.min(5, 1 + Math.ceil(elapsed / 5000)));
      expect(await readyz(bin)).toBe(200);
      issuer.fault = undefined;
    }, 60_000);
  });
});
