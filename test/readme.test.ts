/**
 * README and docs/ stay true: the tool and configuration tables are generated from the code, every link and
 * file path they name exists, and what they state about versions, timings and figures matches the sources.
 */
import { existsSync, readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error -- a plain ESM script shared with the docs command
import { END, START, renderToolTable } from "../scripts/tool-table.mjs";
// @ts-expect-error -- a plain ESM script shared with the docs command
import * as configTable from "../scripts/config-table.mjs";
// @ts-expect-error -- a plain ESM script (the Performance page's copy of the bench block)
import { PAGE, benchBlock } from "../scripts/readme-bench.mjs";
import { describeTools } from "../src/mcp/tool-list.js";
import { loadConfig } from "../src/config/index.js";
import { COMMAND_FLAGS, SETTINGS } from "../src/config/schema.js";
// @ts-expect-error -- a plain ESM script (the viewer's build, as scripts/bundle.mjs runs it)
import { buildViewerHtml } from "../scripts/viewer.mjs";
import { DEMO_TIMINGS } from "../src/sandbox/index.js";

const root = path.resolve(import.meta.dirname, "..");
const readme = readFileSync(path.join(root, "README.md"), "utf8");
const pages = readdirSync(path.join(root, "docs"))
  .filter((name) => name.endsWith(".md"))
  .map((name) => ({ file: `docs/${name}`, text: readFileSync(path.join(root, "docs", name), "utf8") }));
const documents = [{ file: "README.md", text: readme }, ...pages];
/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchor = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
const anchorsOf = (text: string) =>
  new Set(
    text
      .replace(/^```[\s\S]*?^```/gm, "")
      .split("\n")
      .filter((line) => /^#{1,6} /.test(line))
      .map((line) => anchor(line.replace(/^#+ /, ""))),
  );
const block = (text: string, start: string, end: string) =>
  text.slice(text.indexOf(start), text.indexOf(end) + end.length);

/** Git-ignored folders a command fills on first use: bench runs, the peers' install, test/interop's. */
const MADE_ON_FIRST_USE = ["bench/results/local", "bench/.peers", "test/interop/node_modules"];

describe("README", () => {
  it("shows the tool table generated from the schemas (run: node scripts/tool-table.mjs --write)", () => {
    expect(block(readme, START, END)).toBe(renderToolTable(describeTools()));
  });

  it("shows the configuration table generated from src/config/schema.ts (run: node scripts/config-table.mjs --write)", () => {
    expect(block(readme, configTable.START, configTable.END)).toBe(configTable.renderConfigTable(SETTINGS));
  });

  it("documents every tool, every environment variable and the test commands", () => {
    for (const tool of describeTools()) expect(readme).toContain(`### ${tool.name}`);
    for (const variable of Object.keys(SETTINGS)) expect(readme).toContain(`\`${variable}\``);
    for (const command of ["npm ci && npm run demo", "npm test", "npm run test:clients"]) {
      expect(readme).toContain(command);
    }
  });

  it("shows docs/cli.md's table of the commands' flags generated from src/config/schema.ts (run: node scripts/config-table.mjs --write)", () => {
    const page = readFileSync(path.join(root, "docs/cli.md"), "utf8");
    expect(block(page, configTable.CLI_START, configTable.CLI_END)).toBe(
      configTable.renderCommandFlags(COMMAND_FLAGS),
    );
  });

  it("opens with the way to try it, and names the quick bench", () => {
    const opening = readme.slice(0, readme.indexOf("## Install"));
    expect(opening).toContain("npm ci && npm run demo");
    expect(opening).toMatch(/node dist\/bundle\/cli\.js video .* --sandbox/);
    expect(readme).toContain("npm run bench:quick");
  });

  it("reads in ten minutes: at most 450 lines, linking every page of docs/", () => {
    expect(readme.split("\n").length).toBeLessThanOrEqual(450);
    for (const page of pages) expect(readme, page.file).toContain(`](${page.file})`);
  });

  it("gives the headline figures of the recorded bench run, as the Performance page has them", () => {
    const section = readme.slice(readme.indexOf("## Performance"), readme.indexOf("## More documentation"));
    const figures = [...section.matchAll(/\*\*([^*]+)\*\*/g)].map(([, figure]) => figure);
    expect(figures.length).toBeGreaterThan(4);
    const recorded = benchBlock(readFileSync(PAGE, "utf8")) as string;
    for (const figure of figures) expect(recorded, figure).toContain(`**${figure}**`);
  });
});

describe("README and docs/", () => {
  it("link only to files and headings that exist, and name only files that exist", () => {
    const missing: string[] = [];
    for (const { file, text } of documents) {
      const here = path.dirname(path.join(root, file));
      for (const [, target = "", hash] of text.matchAll(/\]\(([^)#\s]*)(?:#([^)\s]*))?\)/g)) {
        if (/^[a-z]+:/.test(target)) continue;
        const linked = path.resolve(here, target === "" ? path.basename(file) : target);
        if (!existsSync(linked)) missing.push(`${file}: link ${target}`);
        else if (hash !== undefined && !anchorsOf(readFileSync(linked, "utf8")).has(hash)) {
          missing.push(`${file}: link ${target}#${hash}`);
        }
      }
      for (const [, named] of text.matchAll(
        /`((?:src|test|scripts|bench|docs|conformance|schemas|mcpb)\/[\w./*-]*)`/g,
      )) {
        const plain = (named ?? "").replace(/\/$/, "");
        // A glob names files that exist when at least one matches; what a command makes on first use (run
        // outputs, installs: git-ignored) is not there on a fresh clone.
        if (plain.includes("*") || MADE_ON_FIRST_USE.some((folder) => plain.startsWith(folder))) continue;
        if (!existsSync(path.join(root, plain))) missing.push(`${file}: ${plain}`);
      }
    }
    expect(missing).toEqual([]);
  });

  /** As prose: whitespace runs and shell comment continuations ("\n# ") read as one space. */
  const prose = documents.map(({ text }) => text.replace(/\n# /g, "\n").replace(/\s+/g, " ")).join(" ");
  const states = (text: string) => expect(prose.includes(text), `the docs state "${text}"`).toBe(true);

  it("name the Node versions scripts/node-matrix.mjs runs, wherever they list them", () => {
    const matrix = readFileSync(path.join(root, "scripts/node-matrix.mjs"), "utf8");
    const versions = [...(/const NODE_VERSIONS = \[([^\]]*)\]/.exec(matrix)?.[1] ?? "").matchAll(/\d+/g)].map(
      ([version]) => version,
    );
    expect(versions.length).toBeGreaterThan(1);
    const matrixList = versions.join();
    states(`Node ${versions.slice(0, -1).join(", ")} and ${versions.at(-1)}`);
    // Every "Node 22 and 24"-style list is the matrix, after the lowest Node `engines` allows (CI's own).
    const { engines } = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as {
      engines: { node: string };
    };
    const lowest = /\d+/.exec(engines.node)?.[0];
    const stale = [...prose.matchAll(/Node (\d+(?:, \d+)* and \d+)\b/g)]
      .map(([list, numbers]) => ({ list, versions: (numbers ?? "").split(/, | and /) }))
      .filter(({ versions }) => versions.filter((version) => version !== lowest).join() !== matrixList)
      .map(({ list }) => list);
    expect(stale).toEqual([]);
  });

  it("show get_credits answers with the models the tool adds, and the viewer page's size as built", async () => {
    // The answer of get_credits as the server writes it: the fields its schema names first.
    const samples = prose.match(/"text":"Credits: .*?"structuredContent":\{"[a-z_]+"/g) ?? [];
    expect(samples.length).toBeGreaterThan(1);
    for (const sample of samples) expect(sample).toMatch(/"structuredContent":\{"models"$/);
    const kilobytes = (Buffer.byteLength((await buildViewerHtml()) as string) / 1000).toFixed(1);
    states(`One self-contained HTML page of about ${kilobytes} KB`);
  });

  it("state the sandbox's task time, and the time the server sees it at its default poll interval", () => {
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
    for (const { text } of documents) expect(text.match(/^sleep \d+.*$/gm) ?? []).toEqual([]);
  });
});
