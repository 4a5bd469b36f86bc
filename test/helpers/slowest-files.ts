/**
 * A vitest reporter that ends the run with its slowest test files (import and run, wall clock), so whoever
 * makes the suite slower sees it, and whoever wants it faster knows where to start. vitest.config.ts adds it
 * after the default reporter; `--reporter` on the command line replaces both (.ci/run names it again).
 */
import path from "node:path";
import type { Reporter, TestModule } from "vitest/node";

const SHOWN = 12;

export default class SlowestFiles implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const rows = modules
      .map((module) => {
        const { collectDuration, duration } = module.diagnostic();
        return {
          file: path.relative(process.cwd(), module.moduleId),
          seconds: (collectDuration + duration) / 1000,
          tests: [...module.children.allTests()].length,
        };
      })
      .sort((a, b) => b.seconds - a.seconds);
    if (rows.length < 2) return;
    const total = rows.reduce((sum, row) => sum + row.seconds, 0);
    const lines = rows
      .slice(0, SHOWN)
      .map(
        (row) =>
          `${row.seconds.toFixed(1).padStart(7)} s  ${String(row.tests).padStart(3)} tests  ${row.file}`,
      );
    process.stdout.write(
      `\n Slowest test files (${total.toFixed(0)} s over ${rows.length} files):\n${lines.join("\n")}\n\n`,
    );
  }
}
