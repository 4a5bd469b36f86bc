/**
 * Remote sign-in, end to end (CONTRACT.md "Remote sign-in (OAuth)"): the built bin in `--http` OAuth mode,
 * in front of one sandbox key, with a real authorization server (oidc-provider on 127.0.0.1:
 * test/helpers/oidc.ts) and a real OAuth client: the MCP SDK v1 client's own OAuth support, starting with
 * no token at all. It meets the 401, reads the Protected Resource Metadata the challenge names, then the
 * authorization server's metadata, registers itself, and sends a person's browser (headless Chromium,
 * test/helpers/oauth-browser.ts) through the sign-in and consent pages with PKCE; the code comes back to a
 * loopback callback and is exchanged for a JWT access token for this server, which then serves the person.
 *
 * Also: two people are two callers (each sees only their own videos); a token minted for another resource
 * is refused (no confused deputy); a token without `generation:create` cannot start work; and no access token
 * ever shows in the server's stderr, its files, any answer, or a request to the service (no passthrough).
 *
 * mcp-remote (test/interop) signs in too, by its own flow: the browser it opens is BROWSER, a script that
 * hands the URL to the test's Chromium (its `open` runs xdg-open, which with no desktop runs $BROWSER).
 *
 * Screenshots of the pages: test-artifacts/oauth/.
 */
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile, chmod } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { createRemoteJWKSet, decodeJwt, jwtVerify } from "jose";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../../src/sandbox/index.js";
import type { SandboxHandle } from "../../../src/sandbox/types.js";
import { callTool, expectTheTools, tempRoot } from "../../helpers/http-calls.js";
import { startHttpBin, type HttpServerProcess } from "../../helpers/http.js";
import {
  BrowserOAuthProvider,
  connectSignedIn,
  launchChromium,
  recordingFetch,
  signInInBrowser,
  startCallbackServer,
  type CallbackServer,
  type Exchange,
} from "../../helpers/oauth-browser.js";
import { GENERATION_SCOPES, startOidc, type OidcServer } from "../../helpers/oidc.js";
import { filesUnder, resultOf, rpc as rawRpc, until } from "../../helpers/red-team.js";
import { freePort } from "../../helpers/redis.js";

const ARTIFACTS = path.resolve(import.meta.dirname, "../../../test-artifacts/oauth");
const INTEROP = path.resolve(import.meta.dirname, "../../interop/node_modules");
const MCP_REMOTE = path.join(INTEROP, "mcp-remote/dist/proxy.js");

let sandbox: SandboxHandle;
let root: Awaited<ReturnType<typeof tempRoot>>;
let oidc: OidcServer;
let server: HttpServerProcess;
let browser: Browser | undefined;
let publicUrl: string;
let resource: string;
/** Resources of other APIs the same authorization server issues tokens for. */
let otherApi: string;
let sameOriginOther: string;
const callbacks: CallbackServer[] = [];
const clients: Client[] = [];
/** Every access token handed out in this file: none may ever leak. */
const tokens = new Set<string>();
/** Every exchange of the SDK clients with the server and the authorization server (one list per client). */
const exchanges: Exchange[][] = [];
/** Other answers the tests received: raw posts (with their headers), results through mcp-remote. */
const answers: string[] = [];
/** Alice's video, started in the first test. */
let alicesVideo: string | undefined;
let alice: Client | undefined;

beforeAll(async () => {
  const port = await freePort();
  publicUrl = `http://127.0.0.1:${port}`;
  resource = `${publicUrl}/mcp`;
  otherApi = "https://billing.example.test/api";
  sameOriginOther = `${publicUrl}/other-api`;
  [sandbox, root, oidc] = await Promise.all([
    startSandbox({
      timings: { queuedMs: 100, processingMs: 500 },
      rateLimit: { limit: 100_000, windowMs: 60_000 },
    }),
    tempRoot("generation-mcp-oauth-"),
    startOidc({ resources: [resource, otherApi, sameOriginOther] }),
  ]);
  server = await startHttpBin(["--port", String(port)], {
    HOME: root.dir,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_API_KEY: sandbox.keys.paid,
    GENERATION_STATE_DIR: path.join(root.dir, "state"),
    GENERATION_POLL_INTERVAL_MS: "100",
    GENERATION_OAUTH_ISSUER: oidc.issuer,
    GENERATION_PUBLIC_URL: publicUrl,
  });
  expect(server.url).toBe(resource);
}, 30_000);

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
  await browser?.close();
  await server?.stop();
  await Promise.all([...callbacks.map((callback) => callback.close()), oidc?.close(), sandbox?.close()]);
  await root?.remove();
});

/** A raw JSON-RPC post; its answer (headers included) joins the ones checked for tokens. */
async function rpc(...args: Parameters<typeof rawRpc>) {
  const answer = await rawRpc(...args);
  answers.push(`${JSON.stringify([...answer.headers])}\n${answer.text}`);
  return answer;
}

/** Chromium, launched once, from a test (so a machine without it shows the reason as a failure). */
async function chromium(): Promise<Browser> {
  browser ??= await launchChromium();
  return browser;
}

/** A person signs in through the SDK client's OAuth flow and the browser; returns the connected client. */
async function signIn(username: "alice" | "bob") {
  const callback = await startCallbackServer();
  callbacks.push(callback);
  const provider = new BrowserOAuthProvider({
    browser: await chromium(),
    person: { username, password: oidc.users[username]?.password ?? "" },
    callback,
    clientName: `Sign-in test (${username})`,
    screenshots: { dir: ARTIFACTS, name: username },
  });
  const recorder = recordingFetch();
  const client = await connectSignedIn(resource, provider, recorder.fetch);
  clients.push(client);
  exchanges.push(recorder.exchanges);
  const token = provider.tokens()?.access_token;
  if (token === undefined) throw new Error("signed in without a token");
  tokens.add(token);
  return { client, provider, token, exchanges: recorder.exchanges, callback };
}

describe("signing in with OAuth, as an MCP client and a person do", () => {
  it("goes from a bare 401 to a completed generate_video: discovery, registration, PKCE, browser, JWT", async () => {
    const started = Date.now();
    const { client, provider, token, exchanges: seen, callback } = await signIn("alice");
    alice = client;
    const signedInMs = Date.now() - started;

    // The path the SDK took, from nothing but the server's URL.
    const trail = seen.map((exchange) => `${exchange.method} ${exchange.url} ${exchange.status}`);
    const first = seen[0];
    expect(first).toMatchObject({ method: "POST", url: resource, status: 401, authorized: false });
    const metadataAt = seen.findIndex(
      (exchange) =>
        exchange.url === `${publicUrl}/.well-known/oauth-protected-resource/mcp` && exchange.status === 200,
    );
    const asMetadataAt = seen.findIndex(
      (exchange) => exchange.url.startsWith(`${oidc.issuer}/.well-known/`) && exchange.status === 200,
    );
    const registerAt = seen.findIndex((exchange) => exchange.url === `${oidc.issuer}/reg`);
    const tokenAt = seen.findIndex((exchange) => exchange.url === `${oidc.issuer}/token`);
    const servedAt = seen.findIndex(
      (exchange) => exchange.url === resource && exchange.authorized && exchange.status === 200,
    );
    expect(
      [metadataAt, asMetadataAt, registerAt, tokenAt, servedAt].every((at) => at > 0),
      trail.join("\n"),
    ).toBe(true);
    expect(
      metadataAt < asMetadataAt && asMetadataAt < registerAt && registerAt < tokenAt && tokenAt < servedAt,
    ).toBe(true);
    expect(seen[registerAt]?.status).toBe(201);
    expect(seen[tokenAt]?.status).toBe(200);
    // The Protected Resource Metadata the SDK read.
    expect(JSON.parse(await seen[metadataAt]!.body)).toMatchObject({
      resource,
      authorization_servers: [oidc.issuer],
      scopes_supported: [...GENERATION_SCOPES],
    });

    // What the authorization server saw: a public client registered with our callback, PKCE S256, the
    // resource indicator and both scopes, then alice's sign-in and consent.
    const clientId = provider.clientInformation()?.client_id;
    expect(oidc.events).toContainEqual({
      type: "registration",
      clientId,
      clientName: "Sign-in test (alice)",
      redirectUris: [callback.url],
      tokenEndpointAuthMethod: "none",
    });
    const authorization = oidc.events.find(
      (event) => event.type === "authorization" && event.clientId === clientId,
    );
    expect(authorization).toMatchObject({
      codeChallengeMethod: "S256",
      hasCodeChallenge: true,
      resource,
      redirectUri: callback.url,
    });
    expect(authorization?.type === "authorization" && authorization.scope.split(" ").sort()).toEqual(
      [...GENERATION_SCOPES].sort(),
    );
    expect(oidc.events).toContainEqual({ type: "login", login: "alice" });
    expect(provider.signIn?.consentText).toContain(resource);
    expect(provider.signIn?.finalUrl.startsWith(`${callback.url}?`)).toBe(true);

    // The token: a JWT signed by the issuer's key, for this resource only, carrying both scopes.
    const { payload, protectedHeader } = await jwtVerify(
      token,
      createRemoteJWKSet(new URL(`${oidc.issuer}/jwks`)),
      { issuer: oidc.issuer, audience: resource },
    );
    expect(protectedHeader.typ).toBe("at+jwt");
    expect(payload.sub).toBe("alice");
    expect([payload.aud].flat()).toEqual([resource]);
    expect(String(payload["scope"]).split(" ").sort()).toEqual([...GENERATION_SCOPES].sort());

    // Signed in: the tools, and a video made to the end.
    const { tools } = await client.listTools();
    expectTheTools(tools);
    const { result, structured } = await callTool(client, "generate_video", {
      prompt: "a lighthouse at dusk, signed in with OAuth",
      duration: 2,
      wait: true,
      timeout_seconds: 30,
    });
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    expect(structured).toMatchObject({ status: "completed", video_url: expect.stringMatching(/^http/) });
    alicesVideo = String(structured["video_id"]);
    // The service was called with the server's own key, never with the person's token.
    const generates = sandbox.requests.filter((request) => request.route === "generate");
    expect(generates.length).toBeGreaterThan(0);
    expect(generates.every((request) => request.key === sandbox.keys.paid)).toBe(true);
    process.stderr.write(`[oauth] signed in through the browser in ${signedInMs} ms\n`);
  }, 45_000);

  it("keeps two people apart: each sees and lists only their own videos", async () => {
    if (alice === undefined || alicesVideo === undefined) throw new Error("alice did not sign in");
    const { client: bob, token } = await signIn("bob");
    expect(decodeJwt(token).sub).toBe("bob");
    const started = await callTool(bob, "generate_video", {
      prompt: "a harbour at dawn, bob's",
      duration: 2,
      wait: false,
    });
    expect(started.result.isError, started.text).toBeFalsy();
    const bobsVideo = String(started.structured["video_id"]);

    const peek = await callTool(bob, "get_status", { video_id: alicesVideo });
    expect(peek.result.isError).toBe(true);
    expect(peek.text).toMatch(/not_found/);
    expect(peek.text).not.toContain("lighthouse");
    const own = await callTool(alice, "get_status", { video_id: alicesVideo });
    expect(own.result.isError, own.text).toBeFalsy();
    expect(own.structured["status"]).toBe("completed");

    const listed = async (client: Client) =>
      ((await callTool(client, "list_videos")).structured["items"] as Array<{ video_id: string }>).map(
        (item) => item.video_id,
      );
    expect(await listed(alice)).toEqual([alicesVideo]);
    expect(await listed(bob)).toEqual([bobsVideo]);
  }, 30_000);

  it("refuses a token minted for another resource (no confused deputy) or by another issuer, and no token", async () => {
    const bare = await rpc(resource, undefined, "tools/list");
    expect(bare.status).toBe(401);
    expect(bare.headers.get("www-authenticate")).toBe(
      `Bearer realm="generation-mcp", resource_metadata="${publicUrl}/.well-known/oauth-protected-resource/mcp", scope="generation:read generation:create"`,
    );
    for (const path of [
      "/.well-known/oauth-protected-resource",
      "/.well-known/oauth-protected-resource/mcp",
    ]) {
      const metadata = await fetch(`${publicUrl}${path}`);
      expect(metadata.status).toBe(200);
      expect(await metadata.json()).toMatchObject({ resource, authorization_servers: [oidc.issuer] });
    }

    // Same issuer, same person, same scopes: only the audience differs.
    for (const other of [otherApi, sameOriginOther]) {
      const token = await oidc.issueToken({ login: "alice", resource: other });
      tokens.add(token);
      expect(decodeJwt(token)).toMatchObject({ aud: other, sub: "alice", iss: oidc.issuer });
      const answer = await rpc(resource, token, "tools/call", { name: "get_credits", arguments: {} });
      expect(answer.status, answer.text).toBe(401);
      expect(answer.headers.get("www-authenticate")).toMatch(/error="invalid_token"/);
      expect(answer.headers.get("www-authenticate")).toContain(
        `resource_metadata="${publicUrl}/.well-known/oauth-protected-resource/mcp"`,
      );
    }
    // A token for this very resource, from an authorization server this server does not trust.
    const impostor = await startOidc({ resources: [resource] });
    try {
      const forged = await impostor.issueToken({ login: "alice", resource });
      tokens.add(forged);
      expect(decodeJwt(forged)).toMatchObject({ aud: resource, sub: "alice" });
      const answer = await rpc(resource, forged, "tools/call", { name: "get_credits", arguments: {} });
      expect(answer.status, answer.text).toBe(401);
      expect(answer.headers.get("www-authenticate")).toMatch(/error="invalid_token"/);
    } finally {
      await impostor.close();
    }
    // The control: the very same flow for this resource is served.
    const right = await oidc.issueToken({ login: "alice", resource });
    tokens.add(right);
    const served = await rpc(resource, right, "tools/call", { name: "get_credits", arguments: {} });
    expect(served.status, served.text).toBe(200);
    expect(resultOf(served)?.["isError"]).toBeUndefined();
  });

  it("gives no token to a person who denies the client, nor to a wrong password", async () => {
    const callback = await startCallbackServer();
    callbacks.push(callback);
    const provider = new BrowserOAuthProvider({
      browser: await chromium(),
      person: { username: "bob", password: oidc.users["bob"]?.password ?? "" },
      callback,
      clientName: "Sign-in test (denied)",
      consent: "deny",
    });
    await expect(connectSignedIn(resource, provider)).rejects.toThrow(/access_denied/);
    expect(provider.tokens()).toBeUndefined();
    await expect(oidc.issueToken({ login: "bob", password: "not-bobs", resource })).rejects.toThrow(
      /login refused/,
    );
    expect(oidc.events).toContainEqual({ type: "login-refused", login: "bob" });
  });

  it("answers 403 insufficient_scope to a token that may read but not create", async () => {
    const token = await oidc.issueToken({ login: "bob", resource, scope: "generation:read" });
    tokens.add(token);
    expect(decodeJwt(token)["scope"]).toBe("generation:read");
    const reads = await rpc(resource, token, "tools/call", { name: "list_videos", arguments: {} });
    expect(reads.status, reads.text).toBe(200);
    const before = sandbox.requests.filter((request) => request.route === "generate").length;
    const creates = await rpc(resource, token, "tools/call", {
      name: "generate_video",
      arguments: { prompt: "not allowed", duration: 2, wait: false },
    });
    expect(creates.status).toBe(403);
    expect(creates.headers.get("www-authenticate")).toMatch(/error="insufficient_scope"/);
    expect(creates.headers.get("www-authenticate")).toMatch(/scope="generation:create"/);
    expect(sandbox.requests.filter((request) => request.route === "generate").length).toBe(before);
  });
});

describe("mcp-remote's own OAuth flow, with its browser opened headless", () => {
  it("signs in through the browser it opens (BROWSER) and completes a generate_video over stdio", async () => {
    if (!existsSync(MCP_REMOTE)) {
      throw new Error(
        `${path.relative(process.cwd(), MCP_REMOTE)} is missing: run \`npm run test:clients\` (it installs test/interop).`,
      );
    }
    const home = await mkdtemp(path.join(tmpdir(), "generation-mcp-mcp-remote-"));
    const opened = path.join(home, "opened-urls");
    // What mcp-remote's `open` (xdg-open, no desktop here) runs as "the browser": it writes the URL down,
    // and the test's Chromium opens it as the person.
    const fakeBrowser = path.join(home, "browser.sh");
    await writeFile(fakeBrowser, `#!/bin/sh\nprintf '%s\\n' "$1" >> "${opened}"\n`);
    await chmod(fakeBrowser, 0o755);
    const callbackPort = await freePort();
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [MCP_REMOTE, resource, String(callbackPort), "--host", "127.0.0.1", "--transport", "http-only"],
      env: {
        PATH: process.env["PATH"] ?? "",
        HOME: home,
        MCP_REMOTE_CONFIG_DIR: path.join(home, "mcp-auth"),
        BROWSER: fakeBrowser,
      },
      stderr: "pipe",
    });
    let stderr = "";
    transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const client = new Client({ name: "via-mcp-remote", version: "1.0.0" }, { capabilities: {} });
    clients.push(client);
    try {
      const connected = client.connect(transport);
      await until(
        async () => (await readFile(opened, "utf8").catch(() => "")).trim() !== "",
        "mcp-remote to open the browser",
        20_000,
      );
      const url = (await readFile(opened, "utf8")).trim().split("\n")[0] ?? "";
      const authorizeUrl = new URL(url);
      expect(authorizeUrl.origin).toBe(oidc.issuer);
      expect(authorizeUrl.searchParams.get("resource")).toBe(resource);
      expect(authorizeUrl.searchParams.get("code_challenge_method")).toBe("S256");
      const signedIn = await signInInBrowser(
        await chromium(),
        url,
        { username: "alice", password: oidc.users["alice"]?.password ?? "" },
        { screenshots: { dir: ARTIFACTS, name: "mcp-remote" } },
      );
      expect(signedIn.finalUrl.startsWith(`http://127.0.0.1:${callbackPort}/`)).toBe(true);
      await connected;

      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toContain("generate_video");
      const { result, structured } = await callTool(client, "generate_video", {
        prompt: "a windmill, through mcp-remote",
        duration: 2,
        wait: true,
        timeout_seconds: 30,
      });
      expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
      expect(structured).toMatchObject({ status: "completed", video_url: expect.stringMatching(/^http/) });
      answers.push(JSON.stringify(result));
      // The same person as in the SDK's sign-in: the same caller, so the same list.
      const listed = await callTool(client, "list_videos");
      expect(
        (listed.structured["items"] as Array<{ video_id: string }>).map((item) => item.video_id),
      ).toContain(alicesVideo);
      // mcp-remote keeps its token in its own folder: it too must be a JWT for this resource only.
      const saved = await filesUnder(path.join(home, "mcp-auth"));
      const tokenFile = [...saved].find(([name]) => name.endsWith("_tokens.json"));
      expect(tokenFile, [...saved.keys()].join(", ")).toBeDefined();
      const accessToken = (JSON.parse(tokenFile![1]) as { access_token: string }).access_token;
      tokens.add(accessToken);
      expect(decodeJwt(accessToken)).toMatchObject({ aud: resource, sub: "alice" });
    } catch (error) {
      throw new Error(`${String(error)}\n--- mcp-remote stderr ---\n${stderr.slice(-4000)}`, {
        cause: error,
      });
    } finally {
      await client.close().catch(() => undefined);
      await rm(home, { recursive: true, force: true });
    }
  }, 60_000);
});

describe("the access tokens stay secret", () => {
  it("never shows a token in the server's stderr, its files, any answer, or a request to the service", async () => {
    expect(tokens.size).toBeGreaterThanOrEqual(5);
    const haystacks: Array<[string, string]> = [["server stderr", server.stderr()]];
    const files = await filesUnder(root.dir);
    // The journal of the tasks the signed-in callers started is among them.
    expect(
      [...files.keys()].some((name) => name.endsWith("tasks.json")),
      [...files.keys()].join(", "),
    ).toBe(true);
    for (const [name, text] of files) haystacks.push([`file ${name}`, text]);
    answers.forEach((answer, at) => haystacks.push([`answer ${at}`, answer]));
    for (const exchange of exchanges.flat()) {
      // The token endpoint's answer is where a token is meant to be; every other answer must not carry one.
      if (exchange.url.endsWith("/token")) continue;
      haystacks.push([`answer of ${exchange.method} ${exchange.url}`, await exchange.body]);
    }
    for (const token of tokens) {
      const signature = token.split(".")[2] ?? token;
      for (const [where, text] of haystacks) {
        expect(text.includes(token) || text.includes(signature), `a token shows in ${where}`).toBe(false);
      }
    }
    const keys = new Set(sandbox.requests.map((request) => request.key));
    expect([...keys].filter((key) => key !== undefined && tokens.has(key))).toEqual([]);
    // Every request to the API carries the server's key; the finished video's file (fetched for its frame
    // sheet) is served without one, and none is sent there.
    const [api, media] = [true, false].map((wanted) =>
      sandbox.requests.filter((request) => request.path.startsWith("/api/") === wanted),
    );
    expect(new Set(api?.map((request) => request.key))).toEqual(new Set([sandbox.keys.paid]));
    expect(media?.filter((request) => request.key !== undefined)).toEqual([]);
  });
});
