/**
 * Red team, OAuth access tokens (issue 20; CONTRACT.md "Remote sign-in (OAuth)"): the built bin in `--http`
 * OAuth mode in front of one sandbox key, trusting a small issuer of the test's own (jwks-issuer.ts) that
 * signs whatever an attacker, a careless client or a drifting clock would present.
 *
 * Every token that must not pass gets the same HTTP 401 with `error="invalid_token"` and the same body: no
 * word of why (expired, signature, audience ...), so a refusal teaches an attacker nothing; and no request
 * reaches the service. A token without the scope a call needs gets 403 `insufficient_scope` naming it. No
 * token ever shows in the server's stderr, its state files or an answer.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { tempRoot } from "../helpers/http-calls.js";
import { startJwksIssuer, type JwksIssuer } from "../helpers/jwks-issuer.js";
import { startOAuthBin, type OAuthBin } from "../helpers/oauth-bin.js";
import { errorOf, filesUnder, resultOf, rpc as rawRpc, type RawAnswer } from "../helpers/red-team.js";
import { freePort } from "../helpers/redis.js";

/** What a refusal must never say: the reason a token failed. */
const REASONS =
  /expire|signature|audience|\baud\b|issuer|\biss\b|\bkid\b|\bnbf\b|\balg|claim|jws|jwt|base64|json|malformed|too long|size/i;
const NOW = () => Math.floor(Date.now() / 1000);

let sandbox: SandboxHandle;
let root: Awaited<ReturnType<typeof tempRoot>>;
let issuer: JwksIssuer;
let bin: OAuthBin;
const tokens = new Set<string>();
const answers: string[] = [];
/** The 401 a plainly forged token gets: every other invalid token must get exactly this. */
let reference: RawAnswer;

beforeAll(async () => {
  const port = await freePort();
  const resource = `http://127.0.0.1:${port}/mcp`;
  [sandbox, root, issuer] = await Promise.all([
    startSandbox({
      timings: { queuedMs: 100, processingMs: 300 },
      rateLimit: { limit: 100_000, windowMs: 60_000 },
    }),
    tempRoot("generation-mcp-oauth-tokens-"),
    startJwksIssuer({ audience: resource }),
  ]);
  bin = await startOAuthBin({ sandbox, issuer: issuer.issuer, dir: root.dir, port });
  reference = await rpc(bin.resource, "forged.not-a.token", "tools/call", {
    name: "get_credits",
    arguments: {},
  });
}, 30_000);

afterAll(async () => {
  await bin?.server.stop();
  await Promise.all([issuer?.stop(), sandbox?.close()]);
  await root?.remove();
});

async function rpc(...args: Parameters<typeof rawRpc>): Promise<RawAnswer> {
  if (args[1] !== undefined) tokens.add(args[1]);
  const answer = await rawRpc(...args);
  answers.push(`${JSON.stringify([...answer.headers])}\n${answer.text}`);
  return answer;
}

const serviceCalls = () => sandbox.requests.length;
const sign = (overrides: Record<string, unknown> = {}, options?: Parameters<JwksIssuer["sign"]>[1]) =>
  issuer.sign(issuer.claims(overrides), options);
const b64 = (text: string) => Buffer.from(text).toString("base64url");

/** Asserts that `token` (or a request shaped by `options`) is refused like any forged token. */
async function expectInvalid(
  token: string | undefined,
  options: Parameters<typeof rawRpc>[4] = {},
): Promise<void> {
  const before = serviceCalls();
  const answer = await rpc(
    bin.resource,
    token,
    "tools/call",
    { name: "get_credits", arguments: {} },
    options,
  );
  expect(answer.status, answer.text).toBe(401);
  expect(answer.headers.get("www-authenticate")).toMatch(/error="invalid_token"/);
  expect(answer.headers.get("www-authenticate")).toBe(reference.headers.get("www-authenticate"));
  expect(answer.text).toBe(reference.text);
  expect(`${errorOf(answer)?.message}\n${answer.headers.get("www-authenticate")}`).not.toMatch(REASONS);
  expect(serviceCalls()).toBe(before);
}

/** A control: the token is served (so a refusal above is about what the test changed, nothing else). */
async function expectServed(token: string): Promise<void> {
  const answer = await rpc(bin.resource, token, "tools/call", { name: "get_credits", arguments: {} });
  expect(answer.status, answer.text).toBe(200);
  expect(resultOf(answer)?.["isError"], answer.text).toBeUndefined();
}

describe("tokens that must not pass: 401 invalid_token, the same answer for each, nothing sent on", () => {
  it("serves a token of the issuer's key, for this resource, in time (the control)", async () => {
    expect(reference.status).toBe(401);
    await expectServed(await sign());
  });

  it("refuses another key's signature under the published kid", async () => {
    const other = await issuer.newKey();
    await expectInvalid(await sign({}, { key: other, kid: issuer.current.kid }));
  });

  it("refuses another key's signature under a kid the issuer does not publish", async () => {
    await expectInvalid(await sign({}, { key: await issuer.newKey("attacker-kid") }));
  });

  it("refuses alg none (an unsigned token)", async () => {
    const header = b64(JSON.stringify({ alg: "none", typ: "at+jwt", kid: issuer.current.kid }));
    await expectInvalid(`${header}.${b64(JSON.stringify(issuer.claims()))}.`);
  });

  it("refuses HS256 signed with the issuer's public key (algorithm confusion)", async () => {
    const { SignJWT } = await import("jose");
    const secret = new TextEncoder().encode(await issuer.publicPem());
    const token = await new SignJWT(issuer.claims())
      .setProtectedHeader({ alg: "HS256", typ: "at+jwt", kid: issuer.current.kid })
      .sign(secret);
    await expectInvalid(token);
  });

  it("refuses a token of another issuer, signed with the right key", async () => {
    await expectInvalid(await sign({ iss: "http://127.0.0.1:1/another-issuer" }));
  });

  it("refuses a token for another resource (no confused deputy), alone or with another audience only", async () => {
    await expectInvalid(await sign({ aud: "https://billing.example.test/api" }));
    await expectInvalid(await sign({ aud: `${bin.publicUrl}/other-api` }));
    await expectInvalid(await sign({ aud: [`${bin.publicUrl}/mcp/`, "https://billing.example.test/api"] }));
    // The control: this resource among others is this resource's token.
    await expectServed(await sign({ aud: ["https://billing.example.test/api", bin.resource] }));
  });

  it("refuses an expired token, and one without exp", async () => {
    await expectInvalid(await sign({ iat: NOW() - 3600, exp: NOW() - 60 }));
    await expectInvalid(await sign({ exp: undefined }));
  });

  it("refuses a token not yet valid (nbf)", async () => {
    await expectInvalid(await sign({ nbf: NOW() + 60 }));
  });

  it("keeps a 5 s leeway on both sides: 2 s past exp or before nbf passes, 10 s does not", async () => {
    await expectServed(await sign({ iat: NOW() - 60, exp: NOW() - 2 }));
    await expectServed(await sign({ nbf: NOW() + 2 }));
    await expectInvalid(await sign({ iat: NOW() - 60, exp: NOW() - 10 }));
    await expectInvalid(await sign({ nbf: NOW() + 10 }));
  });

  it("refuses a token without sub (no subject, no caller)", async () => {
    await expectInvalid(await sign({ sub: undefined }));
    await expectInvalid(await sign({ sub: "" }));
  });

  it("refuses malformed tokens: not three parts, bad base64, bad JSON", async () => {
    const good = await sign();
    const [header, payload, signature] = good.split(".") as [string, string, string];
    await expectInvalid(`${header}.${payload}`);
    await expectInvalid(`${good}.${signature}`);
    await expectInvalid("plain-opaque-token");
    await expectInvalid(`${header}.${payload}!!.${signature}`);
    await expectInvalid(`${header.slice(0, -1)}%.${payload}.${signature}`);
    await expectInvalid(`${b64("{not json")}.${payload}.${signature}`);
    await expectInvalid(`${header}.${b64("[1,2")}.${signature}`);
    await expectInvalid(`${header}.${b64('"a string"')}.${signature}`);
  });

  it("refuses an oversized token, even one the issuer signed (a huge JOSE header)", async () => {
    await expectInvalid(`${"a".repeat(5000)}.${"b".repeat(5000)}.c`);
    const huge = await sign({}, { header: { pad: "x".repeat(9000) } });
    expect(huge.length).toBeGreaterThan(8192);
    await expectInvalid(huge);
    // The control: a large header under the limit is still the issuer's token.
    await expectServed(await sign({}, { header: { pad: "x".repeat(3000) } }));
  });

  it("drops a huge Authorization header before reading it (431), and serves on", async () => {
    const before = serviceCalls();
    const answer = await fetch(bin.resource, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${"z".repeat(64 * 1024)}` },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    }).catch((error: unknown) => ({ status: 0, error }));
    expect([0, 431]).toContain(answer.status);
    expect(serviceCalls()).toBe(before);
    await expectServed(await sign());
  });

  it("ignores a valid token in the query string or a cookie: only the Authorization header counts", async () => {
    const token = await sign();
    for (const [url, headers] of [
      [`${bin.resource}?access_token=${token}`, {}],
      [bin.resource, { cookie: `access_token=${token}; token=${token}` }],
    ] as const) {
      const before = serviceCalls();
      const answer = await rpc(
        url,
        undefined,
        "tools/call",
        { name: "get_credits", arguments: {} },
        { headers },
      );
      expect(answer.status).toBe(401);
      // No credentials at all (RFC 6750 §3.1): the bare challenge, pointing at where to sign in.
      expect(answer.headers.get("www-authenticate")).toBe(
        `Bearer realm="generation-mcp", resource_metadata="${bin.publicUrl}/.well-known/oauth-protected-resource/mcp", scope="generation:read generation:create"`,
      );
      expect(serviceCalls()).toBe(before);
    }
    // The very same token as a bearer is served.
    await expectServed(token);
  });
});

describe("scopes: 403 insufficient_scope naming the one missing, nothing sent on", () => {
  /** Asserts the step-up refusal of `body` with `token`. */
  async function expectStepUp(token: string, body: unknown, scope: string, version = "2025-11-25") {
    const before = serviceCalls();
    const answer = await rpc(
      bin.resource,
      token,
      "",
      {},
      {
        body: JSON.stringify(body),
        headers: { "mcp-protocol-version": version },
      },
    );
    expect(answer.status, answer.text).toBe(403);
    const challenge = answer.headers.get("www-authenticate") ?? "";
    expect(challenge).toMatch(/error="insufficient_scope"/);
    expect(challenge).toContain(`scope="${scope}"`);
    expect(challenge).toContain(
      `resource_metadata="${bin.publicUrl}/.well-known/oauth-protected-resource/mcp"`,
    );
    expect(errorOf(answer)?.message).toContain(scope);
    expect(serviceCalls()).toBe(before);
  }
  const call = (id: number, name: string, args: Record<string, unknown> = {}) => ({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name, arguments: args },
  });
  const creates = [
    call(1, "generate_video", { prompt: "not allowed", duration: 1, wait: false }),
    call(2, "generate_image", { prompt: "not allowed" }),
    call(3, "upload_image", { data_base64: "iVBORw0KGgo=", mime_type: "image/png" }),
  ];

  it("gives a read-only token no generate_video, generate_image or upload_image, alone or in a batch", async () => {
    const reader = await sign({ scope: "generation:read" });
    for (const message of creates) await expectStepUp(reader, message, "generation:create");
    // A batch (2025-03-26 still has them) with one create among reads is refused whole.
    await expectStepUp(
      reader,
      [call(4, "get_credits"), creates[0], call(5, "list_videos")],
      "generation:create",
      "2025-03-26",
    );
    // What the token does grant is served.
    await expectServed(reader);
  });

  it("gives a create-only token no get_status, list_videos or get_credits", async () => {
    const creator = await sign({ scope: "generation:create" });
    for (const message of [
      call(6, "get_status", { video_id: "vid_anything" }),
      call(7, "list_videos"),
      call(8, "get_credits"),
    ]) {
      await expectStepUp(creator, message, "generation:read");
    }
    await expectStepUp(
      creator,
      { jsonrpc: "2.0", id: 9, method: "tasks/list", params: {} },
      "generation:read",
    );
  });

  it("reads scopes from scp (a list, as Entra ID writes it) as well as scope", async () => {
    const reader = await sign({ scope: undefined, scp: ["generation:read"] });
    await expectServed(reader);
    await expectStepUp(reader, creates[0], "generation:create");
    const none = await sign({ scope: undefined });
    await expectStepUp(none, call(10, "get_credits"), "generation:read");
  });
});

describe("the access tokens stay secret", () => {
  it("never shows a token in the server's stderr, its state files or any answer", async () => {
    expect(tokens.size).toBeGreaterThan(20);
    const haystacks: Array<[string, string]> = [["server stderr", bin.server.stderr()]];
    for (const [name, text] of await filesUnder(root.dir)) haystacks.push([`file ${name}`, text]);
    answers.forEach((answer, at) => haystacks.push([`answer ${at}`, answer]));
    for (const token of tokens) {
      const signature = token.split(".")[2] ?? "";
      for (const [where, text] of haystacks) {
        expect(text.includes(token), `a token shows in ${where}`).toBe(false);
        if (signature.length > 20)
          expect(text.includes(signature), `a signature shows in ${where}`).toBe(false);
      }
    }
    expect(new Set(sandbox.requests.map((request) => request.key))).toEqual(new Set([sandbox.keys.paid]));
  });
});
