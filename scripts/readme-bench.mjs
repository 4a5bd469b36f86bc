#!/usr/bin/env node
/**
 * README's Performance block is bench/results/headline.md, pasted between the markers bench/chart.mjs
 * writes (`<!-- bench:start … -->` … `<!-- bench:end -->`), never edited by hand.
 *
 * Usage: node scripts/readme-bench.mjs           exit 1 (and say so) when README's block differs
 *        node scripts/readme-bench.mjs --write   copy headline.md into README (after `npm run bench`)
 * test/scripts/readme-bench.test.ts runs the check in `npm test`.
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { END, START } from "../bench/chart.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const README = path.join(root, "README.md");
export const HEADLINE = path.join(root, "bench", "results", "headline.md");

/** The block between the markers, both included; undefined when README lacks either. */
export function benchBlock(readme) {
  const start = readme.indexOf(START);
  const end = readme.indexOf(END, start);
  if (start < 0 || end < 0) return undefined;
  return readme.slice(start, end + END.length);
}

/** README with its block replaced by `headline` (headline.md as bench/chart.mjs writes it). */
export function withBenchBlock(readme, headline) {
  const block = benchBlock(readme);
  if (block === undefined) throw new Error(`README.md has no ${START} … ${END} block`);
  return readme.replace(block, () => headline.trimEnd());
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const readme = readFileSync(README, "utf8");
  const updated = withBenchBlock(readme, readFileSync(HEADLINE, "utf8"));
  if (process.argv.includes("--write")) {
    if (updated !== readme) writeFileSync(README, updated);
    process.stderr.write(
      `readme-bench: README.md ${updated === readme ? "already up to date" : "updated"}\n`,
    );
  } else if (updated !== readme) {
    process.stderr.write(
      "readme-bench: README.md's Performance block differs from bench/results/headline.md: run node scripts/readme-bench.mjs --write\n",
    );
    process.exitCode = 1;
  }
}
