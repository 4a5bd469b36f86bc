#!/usr/bin/env node
/**
 * Per-call latency of two builds of the server, interleaved call by call in one run against one sandbox:
 * tells a regression of ours from a slower machine.
 *
 * Usage: node bench/compare-bins.mjs <cli.js of build A> <cli.js of build B> [calls]
 * e.g.   git worktree add /tmp/prev <tag> && (cd /tmp/prev && npm ci && npm run build)
 *        node bench/compare-bins.mjs /tmp/prev/dist/bundle/cli.js dist/bundle/cli.js
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { pathToFileURL } from "node:url";
import { now, quantile } from "./lib.mjs";

const [first, second, count = "1500"] = process.argv.slice(2);
if (!first || !second) {
  process.stderr.write("usage: node bench/compare-bins.mjs <cli A> <cli B> [calls]\n");
  process.exit(2);
}
const calls = Number(count);
const warmup = Math.floor(calls / 5);
const { startSandbox } = await import(
  pathToFileURL(path.join(import.meta.dirname, "..", "dist", "sandbox", "index.js")).href
);
const sandbox = await startSandbox({ rateLimit: { limit: 1e9, windowMs: 60_000 } });
const home = mkdtempSync(path.join(tmpdir(), "generation-mcp-compare-"));

async function connect(cli) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [path.resolve(cli)],
    env: {
      PATH: process.env.PATH ?? "",
      HOME: home,
      GENERATION_API_KEY: sandbox.keys.paid,
      GENERATION_BASE_URL: sandbox.baseUrl,
      GENERATION_STATE_DIR: path.join(home, "state"),
    },
    stderr: "ignore",
  });
  const client = new Client({ name: "compare", version: "1" });
  await client.connect(transport);
  return client;
}

const builds = [
  { name: first, client: await connect(first), times: [] },
  { name: second, client: await connect(second), times: [] },
];
for (let i = 0; i < calls + warmup; i++) {
  for (const build of builds) {
    const started = now();
    await build.client.callTool({ name: "get_credits", arguments: {} });
    if (i >= warmup) build.times.push(now() - started);
  }
}
for (const build of builds) {
  const p50 = quantile(build.times, 0.5).toFixed(3);
  const p99 = quantile(build.times, 0.99).toFixed(3);
  process.stdout.write(`${build.name}: get_credits p50 ${p50} ms, p99 ${p99} ms (${calls} calls)\n`);
  await build.client.close();
}
await sandbox.close();
rmSync(home, { recursive: true, force: true });
