/**
 * Upload links (`upload_image {from_user: true}`) through real clients, the built bin and a sandbox on
 * 127.0.0.1: the SDK's Client asks for a link over stdio and over HTTP, a real headless Chromium opens it,
 * picks a file and sends it, and `upload_image {upload_id, wait: true}` answers a url the sandbox takes as
 * image_url for an image_to_video start. A client that declared URL elicitation is asked to open the link
 * (2025-11-25 `elicitation/create` in url mode; 2026-07-28 an input_required answer) and the call answers
 * url once the picture is there. curl -T works as the text says; a path prefix in GENERATION_PUBLIC_URL is
 * kept. With the server's key (gateway tokens, OAuth) a link uploads at once, and is its caller's alone. The page's screenshots go to docs/ (docs/tools.md shows them) and test-artifacts/uploads/.
 */
import { spawn } from "node:child_process";
import { copyFile, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import { tinyPng } from "../helpers/harness.js";
import { callTool, sha256Hex, tempRoot } from "../helpers/http-calls.js";
import { connectHttp, startHttpAgainst, type HttpServerProcess } from "../helpers/http.js";
import { startJwksIssuer } from "../helpers/jwks-issuer.js";
import { REVISION } from "../helpers/modern.js";
import { startOAuthBin } from "../helpers/oauth-bin.js";
import { resultOf, rpc } from "../helpers/red-team.js";
import { freePort } from "../helpers/redis.js";
import { outputOf } from "../helpers/processes.js";
import { connectStdio, type StdioSession } from "../helpers/stdio.js";
import { openBrowser, sendThroughPage, type PersonBrowser } from "../helpers/upload-page.js";

const ARTIFACTS = path.resolve(import.meta.dirname, "../../test-artifacts/uploads");
const DOCS = path.resolve(import.meta.dirname, "../../docs");
const LINK = /^http:\/\/127\.0\.0\.1:\d+\/upload\/[A-Za-z0-9_-]{43}$/;

let root: Awaited<ReturnType<typeof tempRoot>>;
let browser: PersonBrowser;
let picture: string;
const closers: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  [root, browser] = await Promise.all([tempRoot("upload-links-"), openBrowser()]);
  picture = path.join(root.dir, "cat.png");
  await writeFile(picture, tinyPng(96, 64));
  await mkdir(ARTIFACTS, { recursive: true });
});
afterAll(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
  await browser?.close();
  await root?.remove();
});

/** Each server's own folder. */
let folders = 0;

/**
 * A sandbox for one case, and the servers and checks bound to it: the cases run side by side, and each
 * counts the uploads that reached its own sandbox.
 */
async function setUp() {
  const sandbox = await startSandbox({ timings: { queuedMs: 50, processingMs: 300 } });
  closers.push(() => sandbox.close());
  const uploadsSent = () => sandbox.requests.filter((request) => request.route === "upload").length;

  async function stdio(capabilities: Record<string, unknown> = {}): Promise<StdioSession> {
    const session = await connectStdio(
      [],
      {
        HOME: root.dir,
        GENERATION_API_KEY: sandbox.keys.paid,
        GENERATION_BASE_URL: sandbox.baseUrl,
        GENERATION_STATE_DIR: path.join(root.dir, `state-${folders++}`),
        GENERATION_POLL_INTERVAL_MS: "100",
      },
      capabilities,
    );
    closers.push(() => session.close());
    return session;
  }

  async function http(env: Record<string, string> = {}): Promise<HttpServerProcess> {
    const server = await startHttpAgainst(sandbox, path.join(root.dir, `http-${folders++}`), 100, env);
    closers.push(() => server.stop());
    return server;
  }

  /** The hosted picture starts a video: the service takes it as image_url. */
  async function startsVideoFrom(client: Client, url: string): Promise<void> {
    const started = await callTool(client, "generate_video", {
      prompt: "the cat looks around",
      image_url: url,
      generation_type: "image_to_video",
      wait: false,
    });
    expect(started.result.isError, started.text).toBeFalsy();
    expect(started.structured["video_id"]).toEqual(expect.any(String));
    const generate = sandbox.requests.filter((request) => request.route === "generate").at(-1);
    expect(generate?.status).toBe(200);
  }

  return { sandbox, uploadsSent, stdio, http, startsVideoFrom };
}

describe.concurrent("a link for the person's picture", () => {
  it("stdio: a loopback link, sent from the browser, waited on with upload_id, then used for a video", async () => {
    const { uploadsSent, stdio, startsVideoFrom } = await setUp();
    const session = await stdio();
    const before = uploadsSent();
    const asked = await callTool(session.client, "upload_image", { from_user: true });
    expect(asked.result.isError, asked.text).toBeFalsy();
    const link = String(asked.structured["upload_url"]);
    expect(asked.structured).toMatchObject({ status: "waiting_for_upload", upload_id: expect.any(String) });
    expect(link).toMatch(LINK);
    expect(asked.text).toContain(link);
    expect(Date.parse(String(asked.structured["expires_at"])) - Date.now()).toBeGreaterThan(800_000);
    expect(uploadsSent()).toBe(before);

    const shots = {
      picked: path.join(ARTIFACTS, "upload-page.png"),
      sent: path.join(ARTIFACTS, "upload-sent.png"),
    };
    const sent = await sendThroughPage(browser, link, picture, shots);
    await copyFile(shots.picked, path.join(DOCS, "upload-link-page.png"));
    expect(sent.consoleErrors).toEqual([]);
    expect(sent.policy).toMatch(/default-src 'none'/);
    expect(sent.shown).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
    expect(uploadsSent()).toBe(before + 1);

    const waited = await callTool(session.client, "upload_image", {
      upload_id: asked.structured["upload_id"],
      wait: true,
    });
    expect(waited.structured).toEqual({ url: sent.shown });
    await startsVideoFrom(session.client, sent.shown);
    // Used: the link answers no more, and with no link open the loopback listener is gone.
    await expect(fetch(link)).rejects.toThrow();
  });

  it("stdio, a client that declared URL elicitation: asked to open the link, the call answers url", async () => {
    const { stdio, startsVideoFrom } = await setUp();
    const session = await stdio({ elicitation: { url: {} } });
    const asked: Array<Record<string, unknown>> = [];
    let sending: Promise<unknown> | undefined;
    session.client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params);
      // The client opens the link for the person, who sends the picture.
      sending = sendThroughPage(browser, String((request.params as { url?: string }).url), picture);
      return { action: "accept" };
    });
    const answer = await callTool(session.client, "upload_image", { from_user: true, timeout_seconds: 40 });
    expect(answer.result.isError, answer.text).toBeFalsy();
    expect(asked).toEqual([
      expect.objectContaining({
        mode: "url",
        url: expect.stringMatching(LINK),
        elicitationId: expect.any(String),
      }),
    ]);
    expect(answer.structured["url"]).toEqual(expect.stringMatching(/^http:\/\//));
    expect((await sending) as { shown: string }).toMatchObject({ shown: answer.structured["url"] });
    const complete = session.messages.map(
      (text) => JSON.parse(text) as { method?: string; params?: unknown },
    );
    expect(complete).toContainEqual({
      jsonrpc: "2.0",
      method: "notifications/elicitation/complete",
      params: { elicitationId: asked[0]?.["elicitationId"] },
    });
    await startsVideoFrom(session.client, String(answer.structured["url"]));
  });

  it("HTTP: a link at the listening address; curl -T sends the picture; the SDK client waits on upload_id", async () => {
    const { sandbox, http, startsVideoFrom } = await setUp();
    const server = await http();
    const client = await connectHttp(server.url, sandbox.keys.paid);
    closers.push(() => client.close());
    const asked = await callTool(client, "upload_image", { from_user: true });
    const link = String(asked.structured["upload_url"]);
    expect(link.startsWith(`http://127.0.0.1:${server.port}/upload/`)).toBe(true);
    expect(asked.structured["notes"]).toContainEqual(
      `From a terminal the same link takes: curl -T picture.png ${link}`,
    );
    const waiting = callTool(client, "upload_image", {
      upload_id: asked.structured["upload_id"],
      wait: true,
    });
    const curl = spawn("curl", ["-sS", "-T", picture, link]);
    const { code, stdout } = await outputOf(curl);
    expect(code).toBe(0);
    const answered = JSON.parse(stdout) as { url: string };
    expect((await waiting).structured).toEqual({ url: answered.url });
    await startsVideoFrom(client, answered.url);
  });

  it("HTTP behind a path prefix (GENERATION_PUBLIC_URL): the link keeps it, and the page works under it", async () => {
    const { sandbox, http } = await setUp();
    const server = await http({ GENERATION_PUBLIC_URL: "https://mcp.example.test/team/gen" });
    const client = await connectHttp(server.url, sandbox.keys.paid);
    closers.push(() => client.close());
    const asked = await callTool(client, "upload_image", { from_user: true });
    const link = String(asked.structured["upload_url"]);
    expect(link).toMatch(/^https:\/\/mcp\.example\.test\/team\/gen\/upload\/[A-Za-z0-9_-]{43}$/);
    // What a proxy that passes the prefix on would ask this server for.
    const local = link.replace("https://mcp.example.test", `http://127.0.0.1:${server.port}`);
    const waited = callTool(client, "upload_image", { upload_id: asked.structured["upload_id"] });
    const sent = await sendThroughPage(browser, local, picture);
    expect(sent.consoleErrors).toEqual([]);
    expect((await waited).structured).toEqual({ url: sent.shown });
  });

  it("2026-07-28 over HTTP: an input_required answer opens the link; the retry with the answer gets url", async () => {
    const { sandbox, uploadsSent, http } = await setUp();
    const server = await http();
    const call = async (extra: Record<string, unknown> = {}) => {
      const response = await fetch(server.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          authorization: `Bearer ${sandbox.keys.paid}`,
          "mcp-protocol-version": REVISION,
          "mcp-method": "tools/call",
          "mcp-name": "upload_image",
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: {
            name: "upload_image",
            arguments: { from_user: true, timeout_seconds: 30 },
            ...extra,
            _meta: {
              "io.modelcontextprotocol/protocolVersion": REVISION,
              "io.modelcontextprotocol/clientInfo": { name: "hand-written-2026", version: "1.0.0" },
              "io.modelcontextprotocol/clientCapabilities": { elicitation: { url: {} } },
            },
          },
        }),
      });
      const text = await response.text();
      const line = text.trim().startsWith("{")
        ? text
        : (text.split("\n").find((entry) => entry.startsWith("data:")) ?? "").slice(5);
      return (JSON.parse(line) as { result: Record<string, unknown> }).result;
    };
    const first = await call();
    expect(first["resultType"]).toBe("input_required");
    const request = (
      first["inputRequests"] as Record<string, { method: string; params: Record<string, string> }>
    )["open_upload_link"];
    expect(request).toMatchObject({ method: "elicitation/create", params: { mode: "url" } });
    const link = String(request?.params["url"]);
    expect(link.startsWith(`http://127.0.0.1:${server.port}/upload/`)).toBe(true);
    const before = uploadsSent();
    // No call of this caller runs here now, so nothing holds its key: the picture waits for the retry.
    const put = await fetch(link, { method: "PUT", body: tinyPng(32, 32) });
    expect(put.status).toBe(202);
    expect(uploadsSent()).toBe(before);
    const second = await call({
      inputResponses: { open_upload_link: { action: "accept" } },
      requestState: first["requestState"],
    });
    expect(second["structuredContent"]).toEqual({
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\//),
    });
    expect(uploadsSent()).toBe(before + 1);
  });

  it("gateway tokens: the server's key uploads, the link and its upload_id are the asking token's alone", async () => {
    const { sandbox, uploadsSent, http } = await setUp();
    const [one, two] = ["gateway-token-one-of-32-characters", "gateway-token-two-of-32-characters"];
    const server = await http({
      GENERATION_API_KEY: sandbox.keys.paid,
      GENERATION_HTTP_TOKENS: `${sha256Hex(one)},${sha256Hex(two)}`,
    });
    const [first, second] = await Promise.all([connectHttp(server.url, one), connectHttp(server.url, two)]);
    closers.push(
      () => first.close(),
      () => second.close(),
    );
    const asked = await callTool(first, "upload_image", { from_user: true });
    expect(asked.result.isError, asked.text).toBeFalsy();
    expect(asked.structured).toMatchObject({ status: "waiting_for_upload", upload_id: expect.any(String) });
    const link = String(asked.structured["upload_url"]);
    expect(link).toMatch(LINK);
    // Another token of the same server neither sees nor takes the link's upload.
    const stranger = await callTool(second, "upload_image", { upload_id: asked.structured["upload_id"] });
    expect(stranger.result.isError).toBe(true);
    expect(stranger.text).toMatch(/^not_found: upload_id /);
    const before = uploadsSent();
    const sent = await fetch(link, { method: "PUT", body: tinyPng(24, 24) });
    expect(sent.status).toBe(200);
    expect(uploadsSent()).toBe(before + 1);
    expect(sandbox.requests.filter((request) => request.route === "upload").at(-1)?.key).toBe(
      sandbox.keys.paid,
    );
    const answered = await callTool(first, "upload_image", { upload_id: asked.structured["upload_id"] });
    expect(answered.result.isError, answered.text).toBeFalsy();
    expect(answered.structured["url"]).toBe(((await sent.json()) as { url: string }).url);
  });

  it("OAuth: a link needs generation:create; the link itself no token; the server's key uploads at once", async () => {
    const { sandbox, uploadsSent } = await setUp();
    const port = await freePort();
    const issuer = await startJwksIssuer({ audience: `http://127.0.0.1:${port}/mcp` });
    closers.push(() => issuer.stop());
    const bin = await startOAuthBin({
      sandbox,
      issuer: issuer.issuer,
      dir: path.join(root.dir, "oauth"),
      port,
    });
    closers.push(() => bin.server.stop());
    const ask = async (scope: string) =>
      rpc(bin.server.url, await issuer.sign(issuer.claims({ sub: "person", scope })), "tools/call", {
        name: "upload_image",
        arguments: { from_user: true },
      });
    const reader = await ask("generation:read");
    expect(reader.status).toBe(403);
    expect(reader.headers.get("www-authenticate")).toMatch(
      /scope="generation:create".*error="insufficient_scope"/,
    );
    const made = resultOf(await ask("generation:read generation:create"))?.["structuredContent"] as Record<
      string,
      string
    >;
    expect(made["upload_url"]?.startsWith(`http://127.0.0.1:${port}/upload/`)).toBe(true);
    const before = uploadsSent();
    // No call waits on the link: the replica holds the server's key, so the picture goes to the service now.
    const sent = await fetch(made["upload_url"] ?? "", { method: "PUT", body: tinyPng(24, 24) });
    expect(sent.status).toBe(200);
    expect(((await sent.json()) as { url: string }).url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
    expect(uploadsSent()).toBe(before + 1);
    expect(sandbox.requests.filter((request) => request.route === "upload").at(-1)?.key).toBe(
      sandbox.keys.paid,
    );
  });
});
