import { availableParallelism } from "node:os";
import { configDefaults, defineConfig } from "vitest/config";

/**
 * The tests that need test/interop's own package (third-party MCP clients, the conformance suite, mcp-remote's
 * sign-in): the project `clients`, run by `npm run test:clients`, which installs that package first. `npm test`
 * runs the project `main`, everything else, which needs nothing beyond `npm ci`.
 */
const CLIENTS = "test/e2e/clients/**/*.test.ts";

export default defineConfig({
  test: {
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Most test time is waiting: on real polls, timeouts and the child processes each file starts, so more
    // files run at once than there are cores (vitest's default, cores - 1, would run one file at a time on a
    // 2-core machine). A thread starts for less than a process.
    pool: "threads",
    maxWorkers: Math.max(5, availableParallelism() * 2),
    // The run ends with its slowest files (test/helpers/slowest-files.ts).
    reporters: ["default", "./test/helpers/slowest-files.ts"],
    projects: [
      {
        extends: true,
        test: {
          name: "main",
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, CLIENTS],
          // A worker runs file after file over one module graph instead of importing src/ afresh for each
          // (2 min 45 s against 3 min 12 s here, docs/development.md): no file mocks a module or leaves a
          // global changed (fake timers are put back after each case).
          isolate: false,
        },
      },
      {
        extends: true,
        // One file at a time, after `main` when a run has both (scripts/node-matrix.mjs): each file starts a
        // dozen servers and client processes at once, and the conformance suite's stream checks time out
        // when they share two cores with another such file.
        test: { name: "clients", include: [CLIENTS], maxWorkers: 1, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
