#!/usr/bin/env node
/**
 * `npm run test:clients`: what `npm test` leaves out because it needs test/interop's own package: the
 * third-party MCP clients, the MCP conformance suite and mcp-remote's sign-in (vitest's project `clients`,
 * test/e2e/clients/), then the end-to-end tests again on Node 22, 24 and 26 (scripts/node-matrix.mjs).
 *
 * test/interop is installed first when its node_modules is missing or older than its lock: `npm ci`, quiet
 * (the clients declare newer Node versions than 20, so a plain install prints dozens of EBADENGINE warnings).
 * It is a one-time download of about 1 GB, most of it the three Node binaries and Claude Code.
 *
 * Usage: node scripts/test-clients.mjs [--reports DIR]
 *   --reports D  vitest's JSON reports: D/clients.json, and D/node<V>.json from the matrix
 * Exit code: 0 when everything passed; 1 when a test failed; 2 when it could not run.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { missingPackages } from "./system-packages.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const interop = path.join(root, "test", "interop");
const say = (line) => console.error(`test:clients: ${line}`);
const node = (args) => spawnSync(process.execPath, args, { cwd: root, stdio: "inherit" }).status;

/** node_modules/.package-lock.json is what npm last installed; older than the lock means the lock moved on. */
function interopIsCurrent() {
  const installed = path.join(interop, "node_modules", ".package-lock.json");
  if (!existsSync(installed)) return false;
  return statSync(installed).mtimeMs >= statSync(path.join(interop, "package-lock.json")).mtimeMs;
}

function main() {
  const { values } = parseArgs({ options: { reports: { type: "string" } } });
  const reports = values.reports === undefined ? undefined : path.resolve(values.reports);
  if (reports !== undefined) mkdirSync(reports, { recursive: true });

  const missing = missingPackages();
  if (missing.length > 0) {
    say(`needs the Debian packages ${missing.join(", ")}: sudo apt-get install -y ${missing.join(" ")}`);
    return 2;
  }
  if (!interopIsCurrent()) {
    say("installing test/interop (the clients, the conformance suite, Node 22/24/26; once, about 1 GB)");
    const npm = spawnSync("npm", ["ci", "--prefix", interop, "--no-audit", "--no-fund", "--loglevel=error"], {
      cwd: root,
      stdio: "inherit",
    });
    if (npm.status !== 0) {
      say(`\`npm ci --prefix test/interop\` failed (${npm.error?.message ?? `exit ${npm.status}`})`);
      return 2;
    }
  }
  if (node([path.join(root, "scripts", "build.mjs"), "--if-stale"]) !== 0) return 2;

  const report =
    reports === undefined ? [] : ["--reporter=json", `--outputFile=${path.join(reports, "clients.json")}`];
  const clients = node([
    path.join(root, "node_modules", "vitest", "vitest.mjs"),
    "run",
    "--project",
    "clients",
    "--reporter=default",
    ...report,
  ]);
  const matrix = node([
    path.join(root, "scripts", "node-matrix.mjs"),
    ...(reports === undefined ? [] : ["--reports", reports]),
  ]);
  if (clients === 0 && matrix === 0) return 0;
  return matrix === 2 ? 2 : 1;
}

process.exitCode = main();
