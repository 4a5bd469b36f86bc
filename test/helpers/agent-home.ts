/**
 * A fresh home folder for an agent CLI given the agent skill (test/e2e/clients/skill.test.ts for Codex,
 * claude-code.test.ts for Claude Code): skills/generation-mcp copied where that agent looks for a user's
 * skills, and the `generation-mcp` command in `bin`, as an install puts it on PATH.
 */
import { chmod, cp, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { onTestFinished } from "vitest";
import { CLI } from "./stdio.js";

/** The skill's folder in this repository: what `npx skills add` installs. */
export const SKILL = path.resolve(import.meta.dirname, "../../skills/generation-mcp");

/**
 * `skills` is the agent's folder of a user's skills, relative to the home (`.agents/skills`). Called in a
 * test: the home is removed when the test ends.
 */
export async function agentHome(skills: string): Promise<{ home: string; bin: string }> {
  const home = await mkdtemp(path.join(tmpdir(), "generation-mcp-skill-"));
  onTestFinished(() => rm(home, { recursive: true, force: true }));
  const bin = path.join(home, "bin");
  await mkdir(bin);
  await cp(SKILL, path.join(home, skills, "generation-mcp"), { recursive: true });
  // npm's bin shim runs the same file.
  const command = path.join(bin, "generation-mcp");
  await writeFile(command, `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`);
  await chmod(command, 0o755);
  return { home, bin };
}
