/**
 * One snapshot per tool of what tools/list sends (name, title, description, annotations, input and output
 * schemas, and the task and viewer fields where a tool has them), so a change to what models see is a
 * one-file diff in review. A snapshot missing, stale or left over from a tool that is gone fails; after a
 * change that is meant, `UPDATE_TOOLSNAPS=1 npx vitest run test/tools/toolsnaps.test.ts` writes them again.
 */
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { describeTools } from "../../src/mcp/tool-list.js";

const FOLDER = path.join(import.meta.dirname, "__toolsnaps__");
const UPDATE = process.env["UPDATE_TOOLSNAPS"] !== undefined && process.env["UPDATE_TOOLSNAPS"] !== "0";
const HOW = "if the change is meant, run: UPDATE_TOOLSNAPS=1 npx vitest run test/tools/toolsnaps.test.ts";

const tools = describeTools();
/** The fields in the order a reviewer reads them, then whatever else the list carries. */
const snapshotOf = ({
  name,
  title,
  description,
  annotations,
  inputSchema,
  outputSchema,
  ...rest
}: (typeof tools)[0]) =>
  JSON.stringify({ name, title, description, annotations, inputSchema, outputSchema, ...rest }, null, 2) +
  "\n";
const fileOf = (name: string) => path.join(FOLDER, `${name}.json`);
const stored = (name: string): string | undefined => {
  try {
    return readFileSync(fileOf(name), "utf8");
  } catch {
    return undefined;
  }
};
const storedNames = () =>
  readdirSync(FOLDER, { withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".json"))
    .map((entry) => entry.name.slice(0, -".json".length));

if (UPDATE) {
  mkdirSync(FOLDER, { recursive: true });
  for (const name of storedNames()) rmSync(fileOf(name));
  for (const tool of tools) writeFileSync(fileOf(tool.name), snapshotOf(tool));
}

describe("tool snapshots (test/tools/__toolsnaps__/)", () => {
  it.each(tools.map((tool) => [tool.name, tool] as const))("%s matches its snapshot", (name, tool) => {
    const snapshot = stored(name);
    expect(snapshot, `${path.relative(process.cwd(), fileOf(name))} is missing; ${HOW}`).toBeDefined();
    expect(snapshot, `the snapshot of ${name} is stale; ${HOW}`).toBe(snapshotOf(tool));
  });

  it("has no snapshot of a tool that is not listed", () => {
    const listed = new Set(tools.map((tool) => tool.name));
    expect(
      storedNames().filter((name) => !listed.has(name)),
      `snapshots of tools that are gone; ${HOW}`,
    ).toEqual([]);
  });
});
