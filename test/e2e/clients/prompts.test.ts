/**
 * A third-party client lists and gets the server's prompts: the MCP Inspector's CLI
 * (`@modelcontextprotocol/inspector --cli`, pinned in test/interop/package.json) against the built bin in
 * sandbox mode over stdio. Installed by `npm run test:clients`.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI } from "../../helpers/stdio.js";

const MODULES = path.resolve(import.meta.dirname, "../../interop/node_modules");
const INSPECTOR = path.join(MODULES, "@modelcontextprotocol/inspector/clients/launcher/build/index.js");
const NODE22 = path.join(MODULES, "node22/bin/node");

let home = "";
beforeAll(async () => {
  home = await mkdtemp(path.join(tmpdir(), "generation-mcp-prompts-"));
});
afterAll(async () => {
  await rm(home, { recursive: true, force: true });
});

/** One Inspector run (`--format json` prints `{"result": ...}`); it needs Node 22.19 or later. */
async function inspect<T>(method: string[]): Promise<T> {
  if (!existsSync(INSPECTOR)) throw new Error("test/interop is not installed: run `npm run test:clients`.");
  const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
  const node = major > 22 || (major === 22 && minor >= 19) ? process.execPath : NODE22;
  const args = [INSPECTOR, "--cli", "--format", "json", process.execPath, CLI, "--sandbox", ...method];
  const { stdout } = await promisify(execFile)(node, args, {
    cwd: home,
    env: { PATH: process.env["PATH"] ?? "", HOME: home, GENERATION_STATE_DIR: path.join(home, "state") },
    timeout: 60_000,
  });
  return (JSON.parse(stdout) as { result: T }).result;
}

describe("MCP Inspector CLI and the prompts", () => {
  it("lists the prompts with their arguments and gets one with its steps", async () => {
    const [list, animate] = await Promise.all([
      inspect<{ prompts: Array<{ name: string; arguments?: Array<{ name: string }> }> }>([
        "--method",
        "prompts/list",
      ]),
      inspect<{ messages: Array<{ role: string; content: { text: string } }> }>([
        "--method",
        "prompts/get",
        "--prompt-name",
        "animate_picture",
        "--prompt-args",
        "image=/photos/harbour.jpg",
      ]),
    ]);
    expect(list.prompts.map((prompt) => prompt.name)).toEqual([
      "animate_picture",
      "storyboard",
      "product_shot",
    ]);
    expect(list.prompts[0]?.arguments?.map((argument) => argument.name)).toEqual(["image", "motion"]);
    expect(animate.messages[0]?.role).toBe("user");
    expect(animate.messages[0]?.content.text).toContain('animate the picture "/photos/harbour.jpg"');
    expect(animate.messages[0]?.content.text).toContain("dry_run: true");
  }, 90_000);
});
