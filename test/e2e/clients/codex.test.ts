/**
 * The Codex CLI (`@openai/codex`, `codex exec`) driving the built bin in sandbox mode, configured as the
 * README's "Client configuration" says. `codex exec` runs with the approval policy `never`, so it refuses
 * every MCP tool not annotated read-only (all but get_credits and list_videos) unless config.toml approves
 * it: these tests run generate_video and get_status with the README's setting, server-wide and per tool, and
 * in the README's real-service form (key and address in the entry's env table, against a sandbox service on
 * 127.0.0.1), and show that the same run without the setting is refused.
 *
 * There is no real model: Codex's model provider is a fake one on 127.0.0.1 that speaks the Responses API's
 * event stream. It calls generate_video (wait: false), then get_status on the video_id that came back, then
 * ends with a message, and records the tools Codex offered and the tool outputs Codex sent back. Codex's home
 * is a temporary folder; its update check, analytics, plugin sync (a `git ls-remote` to github.com), app
 * connectors and shell snapshot are off, so nothing leaves 127.0.0.1.
 *
 * Codex lives in test/interop/package.json, which `npm run test:clients` installs on first use.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { responseStream, serveModel } from "../../helpers/scripted-model.js";
import { describeTools } from "../../../src/mcp/tool-list.js";
import { startSandbox } from "../../../src/sandbox/index.js";
import { CLI } from "../../helpers/stdio.js";

const run = promisify(execFile);
const CODEX = path.resolve(import.meta.dirname, "../../interop/node_modules/@openai/codex/bin/codex.js");
/** Codex offers a server's tools to the model as one namespace, `mcp__<server name>`. */
const NAMESPACE = "mcp__generation";
const REFUSAL = "MCP tool call requires approval, but approval policy is never";
const TOOL_NAMES = describeTools().map((tool) => tool.name);
const CODEX_LIMIT_MS = 90_000;

/** The README's entry, sandbox form: what a user pastes into ~/.codex/config.toml. */
const SERVER_ENTRY = `[mcp_servers.generation]
command = "node"
args = [${JSON.stringify(CLI)}, "--sandbox"]
`;
const APPROVE_SERVER = `${SERVER_ENTRY}default_tools_approval_mode = "approve"\n`;
const APPROVE_PER_TOOL = `${SERVER_ENTRY}
[mcp_servers.generation.tools.generate_video]
approval_mode = "approve"

[mcp_servers.generation.tools.get_status]
approval_mode = "approve"
`;

/** The README's entry for the real service: Codex passes servers only a few of its own variables (HOME, PATH,
 * ...), so the key and the address go in the entry's env table. */
const realServiceEntry = (key: string, baseUrl: string) => `[mcp_servers.generation]
command = "node"
args = [${JSON.stringify(CLI)}]
default_tools_approval_mode = "approve"

[mcp_servers.generation.env]
GENERATION_API_KEY = "${key}"
GENERATION_BASE_URL = "${baseUrl}"
`;

/** What only the test needs: the fake model, and Codex kept off the network. */
const testSettings = (modelUrl: string) => `model = "fake-model"
model_provider = "fake"
check_for_update_on_startup = false

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
apps = false
shell_snapshot = false

[model_providers.fake]
name = "fake"
base_url = "${modelUrl}"
wire_api = "responses"
env_key = "FAKE_MODEL_KEY"
`;

interface ResponsesRequest {
  tools: { type: string; name: string; tools?: { name: string }[] }[];
  input: { type: string; output?: string | { text?: string }[] }[];
}
interface FakeModel {
  url: string;
  /** The tools Codex offered under NAMESPACE. */
  offered: string[];
  /** The text of every tool output Codex sent back, in order. */
  outputs: string[];
  close(): Promise<void>;
}

async function startFakeModel(): Promise<FakeModel> {
  const model: Omit<FakeModel, "url" | "close"> = { offered: [], outputs: [] };
  let turn = 0;
  const server = await serveModel((_req, body, res) => {
    const request = JSON.parse(body) as ResponsesRequest;
    model.offered = request.tools.find((tool) => tool.name === NAMESPACE)?.tools?.map((t) => t.name) ?? [];
    // Every request carries the whole conversation so far.
    model.outputs = request.input
      .filter((item) => item.type === "function_call_output")
      .map(({ output = "" }) =>
        typeof output === "string" ? output : output.map((p) => p.text ?? "").join("\n"),
      );
    const call = (name: string, args: Record<string, unknown>) => ({
      type: "function_call",
      id: `fc_${turn}`,
      call_id: `call_${turn}`,
      namespace: NAMESPACE,
      name,
      arguments: JSON.stringify(args),
    });
    const videoId = /"video_id":"(vid_[\w-]+)"/.exec(model.outputs[0] ?? "")?.[1];
    const item =
      model.outputs.length === 0
        ? call("generate_video", { prompt: "a paper boat", duration: 2, wait: false })
        : model.outputs.length === 1 && videoId !== undefined
          ? call("get_status", { video_id: videoId })
          : { type: "message", role: "assistant", content: [{ type: "output_text", text: "All done." }] };
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.end(responseStream(`resp_${++turn}`, item));
  });
  return Object.assign(model, {
    url: `${server.origin}/v1`,
    close: server.close,
  });
}

const homes: string[] = [];
afterAll(async () => {
  await Promise.all(homes.map((home) => rm(home, { recursive: true, force: true })));
});

/** One `codex exec` in a fresh home (so a fresh sandbox state) with `entry` as its MCP configuration. */
async function codexExec(entry: string): Promise<{ model: FakeModel; stderr: string }> {
  if (!existsSync(CODEX)) {
    throw new Error(
      `${path.relative(process.cwd(), CODEX)} is missing: run \`npm run test:clients\`, which installs ` +
        "test/interop (the third-party MCP clients these tests use) first.",
    );
  }
  const model = await startFakeModel();
  const home = await mkdtemp(path.join(tmpdir(), "generation-mcp-codex-"));
  homes.push(home);
  const codexHome = path.join(home, ".codex");
  await mkdir(codexHome);
  await writeFile(path.join(codexHome, "config.toml"), `${testSettings(model.url)}\n${entry}`);
  try {
    const args = [
      "exec",
      "--skip-git-repo-check",
      "--strict-config",
      "--ephemeral",
      "Make a video of a paper boat.",
    ];
    const pending = run(process.execPath, [CODEX, ...args], {
      cwd: home,
      env: {
        PATH: process.env["PATH"] ?? "",
        HOME: home,
        CODEX_HOME: codexHome,
        FAKE_MODEL_KEY: "not-a-key",
      },
      timeout: CODEX_LIMIT_MS,
    });
    // `codex exec` appends a piped stdin to the prompt: without an end it would wait for one.
    pending.child.stdin?.end();
    const { stderr } = await pending;
    return { model, stderr };
  } catch (error) {
    const { stderr = "" } = error as { stderr?: string };
    throw new Error(`codex exec failed: ${String(error)}\n${stderr}`, { cause: error });
  } finally {
    await model.close();
  }
}

/** generate_video really ran in the sandbox, and get_status then read the same task. */
function expectBothToolsRan({ model, stderr }: { model: FakeModel; stderr: string }) {
  expect([...model.offered].sort()).toEqual([...TOOL_NAMES].sort());
  expect(model.outputs, model.outputs.join("\n")).toHaveLength(2);
  const [started = "", status = ""] = model.outputs;
  const videoId = /"video_id":"(vid_[\w-]+)"/.exec(started)?.[1];
  expect(started, started).toMatch(/"status":"queued"/);
  expect(videoId).toBeDefined();
  expect(status, status).toContain(`"video_id":"${videoId}"`);
  expect(status).toMatch(/"status":"(queued|processing)"/);
  expect(stderr).toContain("mcp: generation/get_status (completed)");
  expect(model.outputs.join("\n")).not.toContain(REFUSAL);
}

describe("Codex CLI (@openai/codex, codex exec) with the README's config.toml", () => {
  it(
    'default_tools_approval_mode = "approve": generate_video and get_status run',
    { timeout: CODEX_LIMIT_MS + 10_000 },
    async () => {
      expectBothToolsRan(await codexExec(APPROVE_SERVER));
    },
  );

  it(
    'per tool, [mcp_servers.generation.tools.<tool>] approval_mode = "approve": the same',
    { timeout: CODEX_LIMIT_MS + 10_000 },
    async () => {
      expectBothToolsRan(await codexExec(APPROVE_PER_TOOL));
    },
  );

  it(
    "the real-service form: the key and address in the env table reach the server",
    { timeout: CODEX_LIMIT_MS + 10_000 },
    async () => {
      const sandbox = await startSandbox();
      try {
        expectBothToolsRan(await codexExec(realServiceEntry(sandbox.keys.paid, sandbox.baseUrl)));
        const created = sandbox.requests.filter((r) => r.method === "POST" && r.status === 200);
        expect(created.map((r) => r.key)).toEqual([sandbox.keys.paid]);
      } finally {
        await sandbox.close();
      }
    },
  );

  it(
    "without the setting, the same run is refused: approval needed, policy never",
    { timeout: CODEX_LIMIT_MS + 10_000 },
    async () => {
      const { model, stderr } = await codexExec(SERVER_ENTRY);
      expect(model.offered).toContain("generate_video");
      expect(model.outputs).toHaveLength(1);
      expect(model.outputs[0]).toContain(REFUSAL);
      expect(model.outputs[0]).not.toContain("video_id");
      expect(stderr).toContain("mcp: generation/generate_video (failed)");
    },
  );
});
