#!/usr/bin/env node
/**
 * The Performance page's headline block (docs/performance.md; README links to it) is
 * bench/results/headline.md, pasted between the markers bench/chart.mjs writes (`<!-- bench:start … -->` …
 * `<!-- bench:end -->`), never edited by hand.
 *
 * Usage: node scripts/readme-bench.mjs           exit 1 (and say so) when the page's block differs
 *        node scripts/readme-bench.mjs --write   copy headline.md into the page (after `npm run bench`)
 * test/scripts/readme-bench.test.ts runs the check in `npm test`.
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { END, START } from "../bench/chart.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** The page that holds the block, relative to the repository's root. */
export const PAGE_PATH = path.join("docs", "performance.md");
export const PAGE = path.join(root, PAGE_PATH);
export const HEADLINE = path.join(root, "bench", "results", "headline.md");

/** The block between the markers, both included; undefined when the page lacks either. */
export function benchBlock(page) {
  const start = page.indexOf(START);
  const end = page.indexOf(END, start);
  if (start < 0 || end < 0) return undefined;
  return page.slice(start, end + END.length);
}

/** The page with its block replaced by `headline` (headline.md as bench/chart.mjs writes it). */
export function withBenchBlock(page, headline) {
  const block = benchBlock(page);
  if (block === undefined) throw new Error(`${PAGE_PATH} has no ${START} … ${END} block`);
  return page.replace(block, () => headline.trimEnd());
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const page = readFileSync(PAGE, "utf8");
  const updated = withBenchBlock(page, readFileSync(HEADLINE, "utf8"));
  if (process.argv.includes("--write")) {
    if (updated !== page) writeFileSync(PAGE, updated);
    process.stderr.write(
      `readme-bench: ${PAGE_PATH} ${updated === page ? "already up to date" : "updated"}\n`,
    );
  } else if (updated !== page) {
    process.stderr.write(
      `readme-bench: ${PAGE_PATH}'s Performance block differs from bench/results/headline.md: run node scripts/readme-bench.mjs --write\n`,
    );
    process.exitCode = 1;
  }
}
