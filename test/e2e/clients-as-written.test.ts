/**
 * What real clients and a newcomer ran into (issue: works in every client as written), through the built
 * bin over stdio and HTTP against the sandbox:
 * - Gemini CLI's `wait_for_previous` is accepted and ignored; a typo such as `duraton` is still refused;
 * - what the text tells the model is in `structuredContent` too (`notes`, `next_step`), for clients that
 *   show only that;
 * - every next step names what that user can change: the client configuration (stdio), the extension's
 *   form (the Claude Desktop bundle), the Authorization header (HTTP, own key), or the operator (a shared key);
 * - without OAuth, the discovery paths say what this server takes instead, unmangled;
 * - `--help` and `--version` print on stdout; `--http --sandbox` prints the sandbox's keys.
 */
import { spawnSync } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { CreateTaskResultSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { FLAG_TO_ENV } from "../../src/config/index.js";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { sha256Hex, tempRoot } from "../helpers/http-calls.js";
import { startHttpBin, type HttpServerProcess } from "../helpers/http.js";
import { rpc } from "../helpers/red-team.js";
import { CLI, connectStdio, type StdioSession } from "../helpers/stdio.js";

let sandbox: SandboxHandle;
let root: Awaited<ReturnType<typeof tempRoot>>;
const sessions: StdioSession[] = [];
const servers: HttpServerProcess[] = [];
const extraSandboxes: SandboxHandle[] = [];
/** Each process gets a state folder of its own; the cases run at once (each waits on its own processes). */
let folders = 0;
// Side by side on two cores a case takes longer than alone.
vi.setConfig({ testTimeout: 60_000 });

beforeAll(async () => {
  [sandbox, root] = await Promise.all([
    startSandbox({ timings: { queuedMs: 100, processingMs: 300 } }),
    tempRoot("clients-as-written-"),
  ]);
});
afterAll(async () => {
  await Promise.allSettled(sessions.map((session) => session.close()));
  await Promise.allSettled(servers.map((server) => server.stop()));
  await Promise.allSettled([sandbox, ...extraSandboxes].map((service) => service?.close()));
  await root?.remove();
});

async function stdio(env: Record<string, string> = {}, service = sandbox): Promise<StdioSession> {
  const session = await connectStdio([], {
    HOME: root.dir,
    GENERATION_API_KEY: service.keys.paid,
    GENERATION_BASE_URL: service.baseUrl,
    GENERATION_STATE_DIR: path.join(root.dir, `state-${folders++}`),
    GENERATION_POLL_INTERVAL_MS: "100",
    ...env,
  });
  sessions.push(session);
  return session;
}

async function http(env: Record<string, string> = {}): Promise<HttpServerProcess> {
  const server = await startHttpBin([], {
    HOME: root.dir,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_STATE_DIR: path.join(root.dir, `http-${folders++}`),
    ...env,
  });
  servers.push(server);
  return server;
}

async function call(session: StdioSession, name: string, args: Record<string, unknown>) {
  const result = (await session.client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content.map((part) => (part.type === "text" ? part.text : "")).join("\n");
  return { result, text, structured: result.structuredContent ?? {} };
}

const toolText = (answer: { text: string }) => answer.text;

describe.concurrent("arguments clients add on their own", () => {
  it("accepts Gemini CLI's wait_for_previous and ignores it, and still refuses a typo by name", async () => {
    const session = await stdio();
    const accepted = await call(session, "generate_video", {
      prompt: "a kite over the dunes",
      duration: 2,
      dry_run: true,
      wait_for_previous: true,
    });
    expect(accepted.result.isError).toBeFalsy();
    expect(accepted.structured).toMatchObject({ dry_run: true, estimated_credits: 10 });
    expect(JSON.stringify(accepted.structured)).not.toContain("wait_for_previous");
    const credits = await call(session, "get_credits", { wait_for_previous: false });
    expect(credits.result.isError).toBeFalsy();
    const typo = await call(session, "generate_video", {
      prompt: "a kite",
      duraton: 2,
      wait_for_previous: true,
    });
    expect(typo.result.isError).toBe(true);
    expect(typo.text).toMatch(/^validation_error: .*unknown parameter\(s\) duraton/);
    expect(typo.text).not.toContain("wait_for_previous");
  });
});

describe.concurrent("what the text says is in structuredContent too", () => {
  it("tells the cost, a reuse that charged nothing, the next step and a missing preview in structuredContent", async () => {
    // The video reused below is still running however loaded the machine (a finished one adds its own notes).
    const slow = await startSandbox({ timings: { queuedMs: 60_000, processingMs: 60_000 } });
    extraSandboxes.push(slow);
    const session = await stdio({ GENERATION_PREVIEWS: "off" }, slow);
    const request = { prompt: "a paper boat, structured", duration: 2, wait: false };
    const first = await call(session, "generate_video", request);
    expect(first.structured["notes"]).toEqual(["Estimated cost 10 credits."]);
    expect(first.structured["next_step"]).toMatch(/get_status .*wait: true/);
    const again = await call(session, "generate_video", request);
    expect(again.structured["reused"]).toBe(true);
    expect(again.structured["notes"]).toEqual([expect.stringMatching(/^No new credits were charged/)]);
    expect(again.text).toContain("No new credits were charged");
    const image = await call(session, "generate_image", { prompt: "a lantern, structured" });
    expect(image.structured["notes"]).toEqual([
      "Estimated cost 5 credits.",
      "No preview: previews are off (GENERATION_PREVIEWS=off).",
    ]);
    await call(session, "generate_video", { ...request, prompt: "a second paper boat" });
    const page = await call(session, "list_videos", { limit: 1 });
    expect(page.structured["next_step"]).toMatch(/call list_videos with page 2/);
  });
});

describe.concurrent("advice that fits the mode", () => {
  it("stdio: a refused key and a folder outside the allowed ones name the client configuration", async () => {
    const folder = path.join(root.dir, "outside");
    await mkdir(folder, { recursive: true });
    await writeFile(path.join(folder, "cat.png"), "not really a png");
    const session = await stdio({
      GENERATION_API_KEY: "sk-wrong-0123456789",
      GENERATION_ALLOWED_DIRS: root.dir + "/none",
    });
    const refused = await call(session, "get_credits", {});
    expect(refused.text).toMatch(/^unauthorized: /);
    expect(refused.text).toContain(
      "GENERATION_API_KEY in this server's entry of their MCP client configuration",
    );
    const outside = await call(session, "upload_image", { path: path.join(folder, "cat.png") });
    expect(outside.text).toMatch(/^validation_error: /);
    expect(outside.text).toContain(
      "GENERATION_ALLOWED_DIRS in this server's entry of their MCP client configuration",
    );
  });

  it("the Claude Desktop bundle: the same problems name the extension's form fields", async () => {
    const folder = path.join(root.dir, "outside-bundle");
    await mkdir(folder, { recursive: true });
    await writeFile(path.join(folder, "cat.png"), "not really a png");
    const session = await stdio({
      GENERATION_SETTINGS_FORM: "mcpb",
      GENERATION_API_KEY: "sk-wrong-0123456789",
      GENERATION_ALLOWED_DIRS: root.dir + "/none",
    });
    const refused = await call(session, "get_credits", {});
    expect(refused.text).toContain("the API key in Claude Desktop's Settings > Extensions");
    expect(refused.text).not.toContain("GENERATION_API_KEY");
    const outside = await call(session, "upload_image", { path: path.join(folder, "cat.png") });
    expect(outside.text).toContain("Upload folders in Claude Desktop's Settings > Extensions");
    expect(outside.text).not.toContain("GENERATION_ALLOWED_DIRS");
  });

  it("HTTP with the caller's own key: a refused key names the Authorization header", async () => {
    const server = await http();
    const answer = await rpc(server.url, "sk-wrong-0123456789", "tools/call", {
      name: "get_credits",
      arguments: {},
    });
    expect(toolText(answer)).toMatch(/unauthorized/);
    expect(answer.text).toContain("Authorization: Bearer <key>");
    expect(answer.text).not.toContain("GENERATION_API_KEY");
  });

  it("HTTP with a key the server holds: the operator must act, not the caller", async () => {
    const server = await http({
      GENERATION_API_KEY: "sk-revoked-0123456789",
      GENERATION_HTTP_TOKENS: sha256Hex("tok-someone-1234"),
    });
    const answer = await rpc(server.url, "tok-someone-1234", "tools/call", {
      name: "get_credits",
      arguments: {},
    });
    expect(answer.text).toMatch(/unauthorized/);
    expect(answer.text).toContain("operator");
    expect(answer.text).not.toMatch(/GENERATION_API_KEY|Authorization: Bearer/);
  });
});

describe.concurrent("no OAuth here, said plainly", () => {
  it("answers every discovery path with a JSON 404 that says what to send instead", async () => {
    const server = await http();
    for (const discovery of [
      "/.well-known/oauth-protected-resource",
      "/.well-known/oauth-protected-resource/mcp",
      "/.well-known/oauth-authorization-server",
      "/.well-known/openid-configuration",
      "/register",
    ]) {
      const response = await fetch(new URL(discovery, server.url), {
        method: discovery === "/register" ? "POST" : "GET",
      });
      expect(response.status, discovery).toBe(404);
      const body = (await response.json()) as { message: string; oauth: boolean };
      expect(body.oauth).toBe(false);
      expect(body.message).toContain("Authorization: Bearer <key>");
      expect(JSON.stringify(body)).not.toContain("[redacted]");
    }
    const elsewhere = (await (await fetch(new URL("/nowhere", server.url))).json()) as { message: string };
    expect(elsewhere.message).toBe("MCP is served at /mcp.");
  });
});

describe.concurrent("revision hygiene", () => {
  it("words a refusal once: no doubled 'MCP error -32601: MCP error -32601'", async () => {
    const session = await stdio();
    const error = (await session.client
      .request(
        { method: "tools/call", params: { name: "get_credits", arguments: {}, task: {} } },
        CreateTaskResultSchema,
      )
      .catch((caught: unknown) => caught)) as Error;
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toMatch(/^MCP error -32601: get_credits does not run as a task/);
    expect(error.message.match(/MCP error/g)).toHaveLength(1);
  });
});

describe.concurrent("the CLI a newcomer meets", () => {
  it("prints --help and --version on stdout and exits 0", () => {
    for (const flag of ["--help", "--version"]) {
      const run = spawnSync(process.execPath, [CLI, flag], { encoding: "utf8" });
      expect(run.status).toBe(0);
      expect(run.stdout.length).toBeGreaterThan(0);
      expect(run.stderr).toBe("");
    }
    expect(spawnSync(process.execPath, [CLI, "--version"], { encoding: "utf8" }).stdout.trim()).toMatch(
      /^\d+\.\d+\.\d+/,
    );
  });

  it("lists every flag and the variable it mirrors in --help", () => {
    const help = spawnSync(process.execPath, [CLI, "--help"], { encoding: "utf8" }).stdout;
    const missing = Object.entries(FLAG_TO_ENV).filter(
      ([flag, variable]) => !new RegExp(`${flag}\\b[^\\n]*${variable}\\b`).test(help),
    );
    expect(missing).toEqual([]);
  });

  it("prints the sandbox's keys with --http --sandbox, and warns that --sandbox replicas share nothing on Redis", async () => {
    const server = await startHttpBin(["--sandbox"], {
      HOME: root.dir,
      GENERATION_REDIS_URL: "redis://127.0.0.1:1",
    });
    servers.push(server);
    expect(server.stderr()).toMatch(/sk-sandbox-paid\s+paid: 10000 credits/);
    expect(server.stderr()).toMatch(/sk-sandbox-free/);
    expect(server.stderr()).toMatch(/every --sandbox process has a sandbox of its own/);
  });
});
