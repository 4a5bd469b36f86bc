/**
 * Callers of one `--http` server stay apart. Passthrough (each caller's Bearer is its own service key): two
 * keys never see, reuse or list each other's tasks. Gateway (the server holds the key, callers present
 * tokens of this server): the duplicate guard is per token, the service key never leaves the server, and an
 * unknown token is refused with `invalid_token`. Against the built bin and one sandbox whose accounts are
 * separate per key (a foreign video_id is 404 there). Needs `npm run build`.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../../src/sandbox/index.js";
import type { SandboxAccount, SandboxHandle } from "../../../src/sandbox/types.js";
import { callTool, sha256Hex, tempRoot } from "../../helpers/http-calls.js";
import { INITIALIZE, connectHttp, post, startHttpBin, type HttpServerProcess } from "../../helpers/http.js";

/** Equal standing, so that any difference between two callers comes from isolation, not from rights. */
const account = (name: string): SandboxAccount => ({
  key: `sk-test-${name}-0123456789abcdef`,
  name,
  credits: 1000,
  paidAccess: true,
  subscription: "pro",
});
const ALICE = account("alice");
const BOB = account("bob");
const TEAM = account("team");
const TOKEN_ONE = "tok-one-5f2b9c1e7d";
const TOKEN_TWO = "tok-two-a83e4d0c61";

let sandbox: SandboxHandle;
let root: Awaited<ReturnType<typeof tempRoot>>;
let passthrough: HttpServerProcess;
let gateway: HttpServerProcess;

beforeAll(async () => {
  // Tasks stay running: a reused answer can only come from the duplicate guard, not from a finished task.
  sandbox = await startSandbox({
    accounts: [ALICE, BOB, TEAM],
    timings: { queuedMs: 60_000, processingMs: 60_000 },
  });
  root = await tempRoot("http-isolation-");
  const common = { HOME: root.dir, GENERATION_BASE_URL: sandbox.baseUrl };
  [passthrough, gateway] = await Promise.all([
    startHttpBin([], { ...common, GENERATION_STATE_DIR: `${root.dir}/passthrough` }),
    startHttpBin([], {
      ...common,
      GENERATION_STATE_DIR: `${root.dir}/gateway`,
      GENERATION_API_KEY: TEAM.key,
      GENERATION_HTTP_TOKENS: `${sha256Hex(TOKEN_ONE)},${sha256Hex(TOKEN_TWO)}`,
    }),
  ]);
});
afterAll(async () => {
  await Promise.all([passthrough?.stop(), gateway?.stop()]);
  await sandbox?.close();
  await root?.remove();
});

const SAME_REQUEST = { prompt: "a fox in the snow", duration: 2, wait: false };

describe("passthrough: each caller's own service key", () => {
  let alice: Client;
  let bob: Client;
  let aliceTask: string;
  let bobTask: string;

  beforeAll(async () => {
    [alice, bob] = await Promise.all([
      connectHttp(passthrough.url, ALICE.key),
      connectHttp(passthrough.url, BOB.key),
    ]);
  });
  afterAll(async () => {
    await Promise.all([alice?.close(), bob?.close()]);
  });

  it("gives two keys sending the same request at once two tasks, neither reused", async () => {
    const [fromAlice, fromBob] = await Promise.all([
      callTool(alice, "generate_video", SAME_REQUEST),
      callTool(bob, "generate_video", SAME_REQUEST),
    ]);
    for (const answer of [fromAlice, fromBob]) {
      expect(answer.result.isError).toBeFalsy();
      expect(answer.structured["reused"]).toBeUndefined();
    }
    aliceTask = String(fromAlice.structured["video_id"]);
    bobTask = String(fromBob.structured["video_id"]);
    expect(aliceTask).not.toBe(bobTask);
    // Each task was started with its caller's own key.
    const starts = sandbox.requests.filter((request) => request.route === "generate");
    expect(starts.map((request) => request.key).sort()).toEqual([ALICE.key, BOB.key].sort());

    // The guard is live: the same key repeating gets its own task back.
    const again = await callTool(alice, "generate_video", SAME_REQUEST);
    expect(again.structured).toMatchObject({ video_id: aliceTask, reused: true });
  });

  it("answers not_found for another key's video_id", async () => {
    const foreign = await callTool(bob, "get_status", { video_id: aliceTask });
    expect(foreign.result.isError).toBe(true);
    expect(foreign.text).toMatch(/^not_found: /);
    const own = await callTool(alice, "get_status", { video_id: aliceTask });
    expect(own.structured).toMatchObject({ video_id: aliceTask, status: "queued" });
  });

  it("lists only the caller's own tasks", async () => {
    const [aliceList, bobList] = await Promise.all([
      callTool(alice, "list_videos"),
      callTool(bob, "list_videos"),
    ]);
    const ids = (answer: typeof aliceList) =>
      (answer.structured["items"] as Array<Record<string, unknown>>).map((item) => item["video_id"]);
    expect(ids(aliceList)).toEqual([aliceTask]);
    expect(ids(bobList)).toEqual([bobTask]);
  });
});

describe("gateway: the server's key, callers' tokens", () => {
  /** Every response header and body the SDK clients received from the gateway. */
  const received: Array<Promise<string>> = [];
  const recordingFetch: FetchLike = async (url, init) => {
    const response = await fetch(url, init);
    const headers = [...response.headers].map(([name, value]) => `${name}: ${value}`).join("\n");
    received.push(
      response
        .clone()
        .text()
        .then((body) => `${headers}\n\n${body}`),
    );
    return response;
  };
  const connectAs = async (token: string) => {
    const client = new Client({ name: "gateway-e2e", version: "1" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(gateway.url), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
        fetch: recordingFetch,
      }),
    );
    return client;
  };
  let one: Client;
  let two: Client;

  beforeAll(async () => {
    [one, two] = await Promise.all([connectAs(TOKEN_ONE), connectAs(TOKEN_TWO)]);
  });
  afterAll(async () => {
    await Promise.all([one?.close(), two?.close()]);
  });

  it("keeps the duplicate guard per token: two tokens get two tasks, a token repeating gets its own back", async () => {
    const [fromOne, fromTwo] = await Promise.all([
      callTool(one, "generate_video", SAME_REQUEST),
      callTool(two, "generate_video", SAME_REQUEST),
    ]);
    for (const answer of [fromOne, fromTwo]) {
      expect(answer.result.isError).toBeFalsy();
      expect(answer.structured["reused"]).toBeUndefined();
    }
    expect(fromOne.structured["video_id"]).not.toBe(fromTwo.structured["video_id"]);

    const again = await callTool(one, "generate_video", SAME_REQUEST);
    expect(again.structured).toMatchObject({ video_id: fromOne.structured["video_id"], reused: true });
    // Both callers spend the team's account: the tokens themselves never reach the service.
    const keys = new Set(
      sandbox.requests.filter((request) => request.route === "generate").map((r) => r.key),
    );
    expect(keys).toContain(TEAM.key);
    expect(keys).not.toContain(TOKEN_ONE);
    expect(keys).not.toContain(TOKEN_TWO);
  });

  it("refuses an unknown token, and the service key itself, with 401 invalid_token", async () => {
    for (const token of ["tok-unknown-000000", TEAM.key]) {
      const answer = await post(gateway.url, INITIALIZE, { authorization: `Bearer ${token}` });
      expect(answer.status).toBe(401);
      expect(answer.headers.get("www-authenticate")).toContain('error="invalid_token"');
      expect(answer.text).not.toContain(TEAM.key);
    }
  });

  it("never shows the service key: not in any answer, header or the server's stderr", async () => {
    // Answers that talk about the service and its requests: an error from it, and a dry run's request.
    const missing = await callTool(two, "get_status", { video_id: "vid_does_not_exist" });
    expect(missing.text).toMatch(/^not_found: /);
    const dry = await callTool(one, "generate_video", { prompt: "a dry run", dry_run: true });
    expect(dry.structured["dry_run"]).toBe(true);
    await callTool(one, "get_credits");

    const seen = await Promise.all(received);
    expect(seen.length).toBeGreaterThan(5);
    expect(seen.join("\n")).toContain("not_found");
    expect(seen.join("\n")).not.toContain(TEAM.key);
    expect(gateway.stderr()).toContain("gateway");
    expect(gateway.stderr()).not.toContain(TEAM.key);
  });
});
