/**
 * Where a bench run's results go. Only a recorded run (`npm run bench -- --record`, a full run at full
 * repetitions) replaces the committed results (bench/results/latest.json, latest.svg, headline.md) and
 * the Performance block of docs/performance.md, all four together so they never disagree. Every other run
 * (`npm run bench`, `npm run bench:quick`, BENCH_ONLY) leaves tracked files alone: its results go to
 * bench/results/local/ (git-ignored), and bench/run.mjs prints them.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { writeChart } from "./chart.mjs";
import { PAGE_PATH, withBenchBlock } from "../scripts/readme-bench.mjs";

export const RECORDED_DIR = path.join("bench", "results");
export const LOCAL_DIR = path.join("bench", "results", "local");

/**
 * Writes `output` (bench/run.mjs's results) under `root`; returns the files written. A partial run
 * (`output.only`) writes partial.json alone; a full run also draws its chart and headline.
 */
export function saveResults(output, { root, record }) {
  if (record && (output.only !== undefined || output.quick)) {
    throw new Error("only a full run at full repetitions is recorded (no BENCH_ONLY, no --quick)");
  }
  const dir = path.join(root, record ? RECORDED_DIR : LOCAL_DIR);
  mkdirSync(dir, { recursive: true });
  const json = `${JSON.stringify(output, null, 2)}\n`;
  const file = path.join(dir, output.only === undefined ? "latest.json" : "partial.json");
  writeFileSync(file, json);
  if (output.only !== undefined) return [file];
  const written = [file, ...writeChart(JSON.parse(json), dir)];
  if (record) {
    const page = path.join(root, PAGE_PATH);
    const before = readFileSync(page, "utf8");
    const after = withBenchBlock(before, readFileSync(path.join(dir, "headline.md"), "utf8"));
    if (after !== before) {
      writeFileSync(page, after);
      written.push(page);
    }
  }
  return written;
}
