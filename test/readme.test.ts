/** README's tool table is generated from the code; this fails when they drift apart. */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error -- a plain ESM script shared with the docs command
import { END, START, renderToolTable } from "../scripts/tool-table.mjs";
import { describeTools } from "../src/mcp/tool-list.js";
import { loadConfig } from "../src/config.js";
import { DEMO_TIMINGS } from "../src/sandbox/index.js";

describe("README", () => {
  const readme = readFileSync(path.resolve(import.meta.dirname, "../README.md"), "utf8");

  it("shows the tool table generated from the schemas (run: node scripts/tool-table.mjs --write)", () => {
    const block = readme.slice(readme.indexOf(START), readme.indexOf(END) + String(END).length);
    expect(block).toBe(renderToolTable(describeTools()));
  });

  it("documents every tool, environment variable and the test command", () => {
    for (const tool of describeTools()) expect(readme).toContain(`### ${tool.name}`);
    for (const variable of [
      "GENERATION_API_KEY",
      "GENERATION_BASE_URL",
      "GENERATION_SANDBOX",
      "GENERATION_POLL_INTERVAL_MS",
      "GENERATION_WAIT_TIMEOUT_S",
      "GENERATION_OUTPUT_DIR",
      "GENERATION_ALLOWED_DIRS",
      "GENERATION_STATE_DIR",
      "GENERATION_PREVIEWS",
      "GENERATION_PREVIEW_MAX_SIDE",
      "GENERATION_RESOURCE_LINKS",
      "GENERATION_REDIS_URL",
      "GENERATION_REDIS_PREFIX",
    ]) {
      expect(readme).toContain(variable);
    }
    expect(readme).toContain("npm test");
  });

  /** README as prose: whitespace runs and shell comment continuations ("\n# ") read as one space. */
  const prose = readme.replace(/\n# /g, "\n").replace(/\s+/g, " ");
  const states = (text: string) => expect(prose.includes(text), `README states "${text}"`).toBe(true);

  it("names the Node versions scripts/node-matrix.mjs runs, wherever it lists them", () => {
    const matrix = readFileSync(path.resolve(import.meta.dirname, "../scripts/node-matrix.mjs"), "utf8");
    const versions = [...(/const NODE_VERSIONS = \[([^\]]*)\]/.exec(matrix)?.[1] ?? "").matchAll(/\d+/g)].map(
      ([version]) => version,
    );
    expect(versions.length).toBeGreaterThan(1);
    const matrixList = versions.join();
    const listed = `Node ${versions.slice(0, -1).join(", ")} and ${versions.at(-1)}`;
    states(listed);
    // Every "Node 22 and 24"-style list is the matrix, after the lowest Node `engines` allows (CI's own).
    const { engines } = JSON.parse(
      readFileSync(path.resolve(import.meta.dirname, "../package.json"), "utf8"),
    ) as { engines: { node: string } };
    const lowest = /\d+/.exec(engines.node)?.[0];
    const stale = [...prose.matchAll(/Node (\d+(?:, \d+)* and \d+)\b/g)]
      .map(([list, numbers]) => ({ list, versions: (numbers ?? "").split(/, | and /) }))
      .filter(({ versions }) => versions.filter((version) => version !== lowest).join() !== matrixList)
      .map(({ list }) => list);
    expect(stale).toEqual([]);
  });

  it("states the sandbox's task time, and the time the server sees it at its default poll interval", () => {
    const sandboxS = (DEMO_TIMINGS.queuedMs + DEMO_TIMINGS.processingMs) / 1000;
    const pollS = loadConfig({ env: { GENERATION_SANDBOX: "1" } }).pollIntervalMs / 1000;
    // A waiting server learns of the end at its first poll after it.
    const seenS = Math.ceil(sandboxS / pollS) * pollS;
    states(`5. Poll until completed (about ${sandboxS} s)`);
    states(`then the result (about ${seenS} s)`);
    states(
      `completes after about ${seenS} s (the sandbox's ${sandboxS} s, seen at the server's next ${pollS} s poll)`,
    );
    // A walk-through waits by asking, never by a fixed sleep that a slow machine outlasts.
    expect(readme.match(/^sleep \d+.*$/gm) ?? []).toEqual([]);
  });
});
