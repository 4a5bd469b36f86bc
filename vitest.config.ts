import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Most test time is waiting: on real polls, timeouts and the child processes each file starts (the
    // CPU sits at about a third of one core), so more files run at once than there are cores; vitest's
    // default (cores - 1) would run one file at a time on a 2-core machine.
    maxWorkers: Math.max(3, availableParallelism()),
  },
});
