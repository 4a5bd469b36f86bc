/**
 * A bench run changes no tracked file unless asked to record (bench/save.mjs): `npm run bench` writes to
 * bench/results/local/ (git-ignored); `npm run bench:record` replaces the committed results and the block of
 * docs/performance.md together, so test/scripts/readme-bench.test.ts passes after either.
 */
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
// @ts-expect-error -- plain ESM scripts (the bench's writer and the page's copy)
import { saveResults } from "../../bench/save.mjs";
// @ts-expect-error -- a plain ESM script
import { PAGE_PATH, benchBlock } from "../../scripts/readme-bench.mjs";
// @ts-expect-error -- a plain ESM script
import { END, START } from "../../bench/chart.mjs";

const repo = path.resolve(import.meta.dirname, "../..");
/** The committed results: a real full run's output, to write again. */
const committed = JSON.parse(readFileSync(path.join(repo, "bench/results/latest.json"), "utf8")) as Record<
  string,
  unknown
>;
const PAGE = `# t\n\n${START}\nold figures\n${END}\n\nafter\n`;

let root: string;
beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), "bench-save-"));
  mkdirSync(path.join(root, "bench", "results"), { recursive: true });
  mkdirSync(path.join(root, "docs"));
  writeFileSync(path.join(root, PAGE_PATH as string), PAGE);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const results = (...parts: string[]) => path.join(root, "bench", "results", ...parts);

describe("where a bench run's results go", () => {
  it("a plain run writes only to bench/results/local/ and leaves the Performance page alone", () => {
    const written = saveResults(committed, { root, record: false }) as string[];
    expect(written.map((file) => path.relative(root, file)).sort()).toEqual(
      ["latest.json", "latest.svg", "headline.md"]
        .map((name) => path.join("bench", "results", "local", name))
        .sort(),
    );
    expect(readdirSync(results())).toEqual(["local"]);
    expect(readFileSync(path.join(root, PAGE_PATH as string), "utf8")).toBe(PAGE);
  });

  it("a partial run writes its partial.json there too", () => {
    saveResults({ ...committed, only: ["oauth"] }, { root, record: false });
    expect(readdirSync(results("local"))).toEqual(["partial.json"]);
    expect(readdirSync(results())).toEqual(["local"]);
  });

  it("a recorded run replaces the committed files and the Performance page's block together", () => {
    saveResults(committed, { root, record: true });
    expect(readdirSync(results()).sort()).toEqual(["headline.md", "latest.json", "latest.svg"]);
    const headline = readFileSync(results("headline.md"), "utf8");
    const page = readFileSync(path.join(root, PAGE_PATH as string), "utf8");
    expect(benchBlock(page)).toBe(headline.trimEnd());
    expect(page.endsWith(`${END}\n\nafter\n`)).toBe(true);
  });

  it("refuses to record a quick or partial run, before measuring anything", () => {
    expect(() => saveResults({ ...committed, quick: true }, { root, record: true })).toThrow(/full run/);
    expect(() => saveResults({ ...committed, only: ["cold"] }, { root, record: true })).toThrow(/full run/);
    expect(existsSync(results("latest.json"))).toBe(false);
    for (const [args, env] of [
      [["--record", "--quick"], {}],
      [["--record"], { BENCH_ONLY: "oauth" }],
    ] as const) {
      const run = spawnSync(process.execPath, [path.join(repo, "bench/run.mjs"), ...args], {
        cwd: repo,
        env: { PATH: process.env["PATH"] ?? "", HOME: root, ...env },
        encoding: "utf8",
        timeout: 20_000,
      });
      expect(run.status).toBe(2);
      expect(run.stderr).toBe(
        "bench: --record keeps only a full run at full repetitions: drop --quick, BENCH_QUICK and BENCH_ONLY.\n",
      );
    }
  });
});
