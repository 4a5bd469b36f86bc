/** README's tool table is generated from the code; this fails when they drift apart. */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error -- a plain ESM script shared with the docs command
import { END, START, renderToolTable } from "../scripts/tool-table.mjs";
import { describeTools } from "../src/mcp/tool-list.js";

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
});
