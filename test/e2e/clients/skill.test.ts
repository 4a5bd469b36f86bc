/**
 * A real agent CLI given the agent skill (skills/generation-mcp) finds it and runs a command from it: the
 * Codex CLI (`codex exec`), the agent of this suite (codex.test.ts), with the skill installed where Codex
 * looks for a user's skills (`~/.agents/skills/`) and the `generation-mcp` command on its PATH.
 *
 * There is no real model: Codex's model provider is a scripted one on 127.0.0.1 (the Responses API's event
 * stream). It looks for the skill in the list Codex gives the model, reads its SKILL.md through Codex's shell
 * tool, runs the first command of the skill's example block with `--sandbox` (as the skill says, for no
 * account), then ends. Codex runs everything itself: its skill discovery, its shell, the command's output.
 *
 * Codex lives in test/interop/package.json, which `npm run test:clients` installs on first use.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { readProperties } from "skills-ref";
import { describe, expect, it } from "vitest";
import { responseStream, serveModel } from "../../helpers/scripted-model.js";
import { agentHome, SKILL } from "../../helpers/agent-home.js";

const CODEX = path.resolve(import.meta.dirname, "../../interop/node_modules/@openai/codex/bin/codex.js");

interface Seen {
  /** The skill's line in the list Codex gave the model, and the SKILL.md path it names. */
  listed?: { description: string; file: string };
  /** The commands the model had Codex run, and what each printed. */
  commands: string[];
  outputs: string[];
}

interface ResponsesRequest {
  input: Array<{ type: string; content?: Array<{ text?: string }>; output?: string }>;
}

/** The scripted model: find the skill, read it, run its first example with --sandbox, stop. */
async function startScriptedModel() {
  const seen: Seen = { commands: [], outputs: [] };
  let turn = 0;
  const server = await serveModel((_req, body, res) => {
    const request = JSON.parse(body) as ResponsesRequest;
    const context = request.input
      .flatMap((item) => item.content?.map((part) => part.text ?? "") ?? [])
      .join("\n");
    seen.outputs = request.input
      .filter((item) => item.type === "function_call_output")
      .map((item) => item.output ?? "");
    const run = (cmd: string) => {
      seen.commands.push(cmd);
      return {
        type: "function_call",
        id: `fc_${turn}`,
        call_id: `call_${turn}`,
        name: "exec_command",
        arguments: JSON.stringify({ cmd, login: false, yield_time_ms: 30_000 }),
      };
    };
    let item: Record<string, unknown> = {
      type: "message",
      role: "assistant",
      content: [{ type: "output_text", text: "Done." }],
    };
    if (seen.outputs.length === 0) {
      const entry = /- generation-mcp: (.*?) \(file: (r\d+)\/generation-mcp\/SKILL\.md\)/.exec(context);
      const roots = new Map(
        [...context.matchAll(/`(r\d+)` = `([^`]+)`/g)].map(([, alias, dir]) => [alias, dir]),
      );
      if (entry?.[1] !== undefined && entry[2] !== undefined) {
        seen.listed = {
          description: entry[1],
          file: path.join(roots.get(entry[2]) ?? "", "generation-mcp/SKILL.md"),
        };
        item = run(`cat ${seen.listed.file}`);
      }
    } else if (seen.outputs.length === 1) {
      const example = /```sh\n(generation-mcp [^\n]+)/.exec(seen.outputs[0] ?? "")?.[1];
      if (example !== undefined) item = run(`${example} --sandbox`);
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.end(responseStream(`resp_${++turn}`, item));
  });
  return {
    seen,
    url: `${server.origin}/v1`,
    close: server.close,
  };
}

describe("the agent skill in Codex", () => {
  it("is found in the list Codex gives the model, read, and a command from it runs", async () => {
    if (!existsSync(CODEX)) {
      throw new Error("test/interop is not installed: run `npm run test:clients`, which installs it first.");
    }
    const model = await startScriptedModel();
    // As `npx skills add` installs it for Codex: the skill's folder under ~/.agents/skills/.
    const { home, bin } = await agentHome(".agents/skills");
    const codexHome = path.join(home, ".codex");
    await mkdir(codexHome);
    await writeFile(
      path.join(codexHome, "config.toml"),
      [
        'model = "fake-model"',
        'model_provider = "fake"',
        "check_for_update_on_startup = false",
        "[analytics]\nenabled = false",
        "[features]\nplugins = false\nremote_plugin = false\napps = false\nshell_snapshot = false",
        `[model_providers.fake]\nname = "fake"\nbase_url = "${model.url}"\nwire_api = "responses"\nenv_key = "FAKE_MODEL_KEY"`,
      ].join("\n\n"),
    );
    try {
      const pending = promisify(execFile)(
        process.execPath,
        [
          CODEX,
          "exec",
          "--skip-git-repo-check",
          "--strict-config",
          "--ephemeral",
          "--dangerously-bypass-approvals-and-sandbox",
          "How many generation credits do I have?",
        ],
        {
          cwd: home,
          env: {
            PATH: `${bin}:${process.env["PATH"] ?? ""}`,
            HOME: home,
            CODEX_HOME: codexHome,
            FAKE_MODEL_KEY: "not-a-key",
            GENERATION_STATE_DIR: path.join(home, "state"),
          },
          timeout: 90_000,
        },
      );
      pending.child.stdin?.end();
      await pending;
    } finally {
      await model.close();
    }
    const { description } = await readProperties(SKILL);
    expect(model.seen.listed?.description).toBe(description);
    expect(model.seen.commands).toEqual([
      `cat ${path.join(home, ".agents/skills/generation-mcp/SKILL.md")}`,
      "generation-mcp credits --json --sandbox",
    ]);
    expect(model.seen.outputs[0]).toContain("name: generation-mcp");
    const answer = model.seen.outputs[1] ?? "";
    expect(answer).toContain("Process exited with code 0");
    expect(answer).toContain('"credits":10000');
    expect(answer).toMatch(/"id":"vendor-video-1-5-pro","kind":"video".*"usable":true/);
  }, 120_000);
});
