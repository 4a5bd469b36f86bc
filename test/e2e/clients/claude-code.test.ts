/**
 * A real agent CLI given the agent skill (skills/generation-mcp) finds it and runs a command from it, as
 * skill.test.ts does with Codex: here Claude Code in print mode (`claude -p`), with the skill installed where
 * Claude Code looks for a user's skills (`~/.claude/skills/`) and the `generation-mcp` command on its PATH.
 *
 * There is no real model: ANTHROPIC_BASE_URL points Claude Code at a scripted Messages API on 127.0.0.1. It
 * looks for the skill in the list of skills Claude Code gives the model (name and description), loads it with
 * Claude Code's Skill tool, runs the first command of the skill's example block with `--sandbox` through the
 * Bash tool (as the skill says, for no account), then ends. Claude Code runs everything itself: its skill
 * discovery, the skill's loading, its permission check (`--allowedTools`), its shell, the command's output.
 * With the variables below it sends nothing but those /v1/messages requests, three (checked with strace: no
 * other connect); without them it also looks up hosts in DNS and probes the base URL (HEAD /api/hello).
 *
 * Claude Code lives in test/interop/package.json, which `npm run test:clients` installs on first use. Its
 * postinstall, which only copies the platform's binary over bin/claude.exe, is denied there (allowScripts):
 * the test runs the platform package's binary itself.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import type { ServerResponse } from "node:http";
import path from "node:path";
import { promisify } from "node:util";
import { readProperties } from "skills-ref";
import { describe, expect, it } from "vitest";
import { serveModel } from "../../helpers/scripted-model.js";
import { agentHome, SKILL } from "../../helpers/agent-home.js";

const CLAUDE = path.resolve(
  import.meta.dirname,
  `../../interop/node_modules/@anthropic-ai/claude-code-${process.platform}-${process.arch}/claude`,
);

/** What the scripted model answers with: one content block. */
type Reply =
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> };
type Block = Reply | { type: "tool_result"; content: string | Array<{ text?: string }>; is_error?: boolean };

interface MessagesRequest {
  model: string;
  stream?: boolean;
  tools?: Array<{ name: string }>;
  messages: Array<{ role: string; content: string | Block[] }>;
}

interface Seen {
  /** The skill's description in the list of skills Claude Code gave the model. */
  listed?: string;
  /** What came back after the Skill tool loaded the skill. */
  loaded?: string;
  /** The commands the model had Claude Code run, and each Bash tool_result. */
  commands: string[];
  outputs: Array<{ text: string; isError: boolean }>;
}

/** One Messages API answer holding one content block: an event stream when the request asks for one. */
function answer(res: ServerResponse, request: MessagesRequest, id: string, block: Reply): void {
  const stopReason = block.type === "tool_use" ? "tool_use" : "end_turn";
  const usage = { input_tokens: 1, output_tokens: 1 };
  const message = { id, type: "message", role: "assistant", model: request.model, usage };
  if (request.stream !== true) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ ...message, content: [block], stop_reason: stopReason, stop_sequence: null }));
    return;
  }
  const [start, delta] =
    block.type === "tool_use"
      ? [
          { ...block, input: {} },
          { type: "input_json_delta", partial_json: JSON.stringify(block.input) },
        ]
      : [
          { ...block, text: "" },
          { type: "text_delta", text: block.text },
        ];
  const events: Array<[string, Record<string, unknown>]> = [
    ["message_start", { message: { ...message, content: [], stop_reason: null, stop_sequence: null } }],
    ["content_block_start", { index: 0, content_block: start }],
    ["content_block_delta", { index: 0, delta }],
    ["content_block_stop", { index: 0 }],
    [
      "message_delta",
      { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: 1 } },
    ],
    ["message_stop", {}],
  ];
  res.writeHead(200, { "content-type": "text/event-stream" });
  res.end(
    events.map(([type, data]) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`).join(""),
  );
}

const textOf = (content: string | Array<{ text?: string }>) =>
  typeof content === "string" ? content : content.map((part) => part.text ?? "").join("\n");

/** The scripted model: find the skill in the list, load it, run its first example with --sandbox, stop. */
async function startScriptedModel() {
  const seen: Seen = { commands: [], outputs: [] };
  let turn = 0;
  const server = await serveModel((req, body, res) => {
    if (req.url?.startsWith("/v1/messages/count_tokens") === true) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ input_tokens: 1 }));
      return;
    }
    if (req.method !== "POST" || req.url?.startsWith("/v1/messages") !== true) {
      res.writeHead(404).end();
      return;
    }
    const request = JSON.parse(body) as MessagesRequest;
    const blocks = request.messages.flatMap(({ content }) =>
      typeof content === "string" ? [{ type: "text", text: content } as const] : content,
    );
    const results = blocks.flatMap((block, at) => (block.type === "tool_result" ? [{ block, at }] : []));
    const use = (name: string, input: Record<string, unknown>): Reply => ({
      type: "tool_use",
      id: `toolu_${turn}`,
      name,
      input,
    });
    let block: Reply = { type: "text", text: "Done." };
    // Only the conversation offers the Skill tool; a side request (none here so far) gets "Done.".
    const main = request.tools?.some((tool) => tool.name === "Skill") === true;
    if (main && results.length === 0) {
      const context = blocks.map((part) => (part.type === "text" ? part.text : "")).join("\n");
      const listed = /^- generation-mcp: (.*)$/m.exec(context)?.[1];
      if (listed !== undefined) {
        seen.listed = listed;
        block = use("Skill", { skill: "generation-mcp" });
      }
    } else if (main && results.length === 1) {
      // The Skill tool's result only says it launched; the skill's text follows it in the same user turn.
      seen.loaded = blocks
        .slice((results[0]?.at ?? 0) + 1)
        .map((part) => (part.type === "text" ? part.text : ""))
        .join("\n");
      const example = /```sh\n(generation-mcp [^\n]+)/.exec(seen.loaded)?.[1];
      if (example !== undefined) {
        seen.commands.push(`${example} --sandbox`);
        block = use("Bash", { command: `${example} --sandbox` });
      }
    } else if (main && results[1] !== undefined) {
      const { content, is_error } = results[1].block;
      seen.outputs.push({ text: textOf(content), isError: is_error === true });
    }
    answer(res, request, `msg_${++turn}`, block);
  });
  return {
    seen,
    url: server.origin,
    close: server.close,
  };
}

describe("the agent skill in Claude Code", () => {
  it("is found in the list Claude Code gives the model, loaded, and a command from it runs", async () => {
    if (!existsSync(CLAUDE)) {
      throw new Error("test/interop is not installed: run `npm run test:clients`, which installs it first.");
    }
    const model = await startScriptedModel();
    // As `npx skills add` installs it for Claude Code: the skill's folder under ~/.claude/skills/.
    const { home, bin } = await agentHome(".claude/skills");
    // Claude Code keeps each session's task folders under $TMPDIR/claude-<uid>/: in the home removed after.
    const tmp = path.join(home, "tmp");
    await mkdir(tmp, { mode: 0o700 });
    try {
      const pending = promisify(execFile)(
        CLAUDE,
        ["-p", "How many generation credits do I have?", "--allowedTools", "Skill", "Bash(generation-mcp:*)"],
        {
          cwd: home,
          env: {
            PATH: `${bin}:${process.env["PATH"] ?? ""}`,
            HOME: home,
            ANTHROPIC_BASE_URL: model.url,
            ANTHROPIC_API_KEY: "sk-ant-test-not-a-key",
            // Nothing but the model's API: no update check, telemetry, error reports or connectivity probe.
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
            DISABLE_AUTOUPDATER: "1",
            DISABLE_TELEMETRY: "1",
            DISABLE_ERROR_REPORTING: "1",
            GENERATION_STATE_DIR: path.join(home, "state"),
            TMPDIR: tmp,
          },
          timeout: 60_000,
        },
      );
      // Print mode adds a piped stdin to the prompt, waiting 3 s for it when nothing comes: end it.
      pending.child.stdin?.end();
      const { stdout } = await pending;
      expect(stdout.trim()).toBe("Done.");
    } finally {
      await model.close();
    }
    const { description } = await readProperties(SKILL);
    expect(model.seen.listed).toBe(description);
    expect(model.seen.loaded).toContain(
      `Base directory for this skill: ${home}/.claude/skills/generation-mcp`,
    );
    expect(model.seen.loaded).toContain("# Generating videos and images with generation-mcp");
    expect(model.seen.commands).toEqual(["generation-mcp credits --json --sandbox"]);
    const [output] = model.seen.outputs;
    expect(output?.isError).toBe(false);
    expect(output?.text).toContain('"credits":10000');
    expect(output?.text).toMatch(/"id":"vendor-video-1-5-pro","kind":"video".*"usable":true/);
  }, 90_000);
});
