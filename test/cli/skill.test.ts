/**
 * The agent skill (skills/generation-mcp) is valid by the reference validator (skills-ref: the Agent Skills
 * rules on the name, the description, the front matter and the folder), ships in the npm package, and says
 * only what the command line does: every command, flag and exit code it names exists.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { readProperties, validate } from "skills-ref";
import { describe, expect, it } from "vitest";
import { COMMANDS, COMMAND_FLAGS, FLAG_OPTIONS } from "../../src/config/index.js";
import { EXIT } from "../../src/cli/output.js";

const root = path.resolve(import.meta.dirname, "../..");
const skill = path.join(root, "skills/generation-mcp");
const text = ["SKILL.md", "references/commands.md"]
  .map((file) => readFileSync(path.join(skill, file), "utf8"))
  .join("\n");

describe("the agent skill", () => {
  it("passes the reference validator, and its description says when to use it", async () => {
    expect(await validate(skill)).toEqual([]);
    const properties = await readProperties(skill);
    expect(properties.name).toBe("generation-mcp");
    expect(properties.description).toMatch(/^Generate AI videos and images .* Use when /);
  });

  it("stays short: the body under 500 lines, the detail in references/ it links to", () => {
    const body = readFileSync(path.join(skill, "SKILL.md"), "utf8").split("\n---\n").slice(1).join("\n");
    expect(body.split("\n").length).toBeLessThan(500);
    expect(body).toContain("](references/commands.md)");
  });

  it("names only commands and flags the command line has, and every exit code it gives", () => {
    const flags = new Set([
      ...Object.keys(COMMAND_FLAGS),
      ...Object.keys(FLAG_OPTIONS ?? {}),
      "no-wait",
      "help",
    ]);
    for (const [, name] of text.matchAll(/(?<![\w-])--([a-z][a-z-]*)/g))
      expect(flags, `--${name}`).toContain(name);
    for (const [, command] of text.matchAll(/(?:^|`)generation-mcp ([a-z]+)/gm)) {
      expect(Object.keys(COMMANDS), command).toContain(command);
    }
    for (const code of [EXIT.done, EXIT.failed, EXIT.usage, EXIT.processing, EXIT.refused]) {
      expect(text).toMatch(new RegExp(`^\\| ${code} +\\|`, "m"));
    }
  });

  it("ships in the npm package", () => {
    const manifest = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { files: string[] };
    expect(manifest.files).toContain("skills");
  });
});
