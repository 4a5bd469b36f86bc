/**
 * The Performance page's block (docs/performance.md) is bench/results/headline.md, as bench/chart.mjs wrote
 * it from the committed results (scripts/readme-bench.mjs pastes it): a figure edited by hand, or a bench
 * run not copied over, fails here.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
// @ts-expect-error -- plain ESM scripts (the page's copy and the bench's markers)
import { HEADLINE, PAGE, benchBlock, withBenchBlock } from "../../scripts/readme-bench.mjs";
// @ts-expect-error -- a plain ESM script
import { END, START } from "../../bench/chart.mjs";

describe("the Performance block of docs/performance.md", () => {
  it("is bench/results/headline.md, exactly (run: node scripts/readme-bench.mjs --write)", () => {
    const headline: string = readFileSync(HEADLINE, "utf8");
    expect(benchBlock(readFileSync(PAGE, "utf8"))).toBe(headline.trimEnd());
  });

  it("is introduced with how long a full run takes, as the committed results measured it", () => {
    const { elapsedSeconds } = JSON.parse(
      readFileSync(HEADLINE.replace(/headline\.md$/, "latest.json"), "utf8"),
    ) as {
      elapsedSeconds: number;
    };
    const minutes = Number(/A full run takes about (\d+) minutes/.exec(readFileSync(PAGE, "utf8"))?.[1]);
    expect(Math.abs(minutes * 60 - elapsedSeconds)).toBeLessThanOrEqual(elapsedSeconds * 0.25);
  });

  it("is replaced whole, and the text around it is kept", () => {
    const readme = `# t\n\n${START}\nold $& figures\n${END}\n\nafter\n`;
    const headline = `${START}\nnew $1 figures\n${END}\n`;
    expect(withBenchBlock(readme, headline)).toBe(`# t\n\n${START}\nnew $1 figures\n${END}\n\nafter\n`);
    expect(() => withBenchBlock("# no block\n", headline)).toThrow(/no <!-- bench:start/);
  });
});
