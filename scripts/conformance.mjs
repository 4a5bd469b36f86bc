#!/usr/bin/env node
/**
 * The MCP conformance suite (@modelcontextprotocol/conformance, server mode) against the built server in
 * `--http --sandbox` mode, judged against conformance/expected-failures.yml.
 *
 * The suite cannot send headers of its own, and the server refuses any MCP request without
 * `Authorization: Bearer <service key>`. So the suite talks to a small reverse proxy on 127.0.0.1 that adds
 * the sandbox's key to every request and streams the answer back (SSE included). Everything else passes
 * through untouched, Host and Origin above all: the dns-rebinding-protection scenario sends a hostile
 * Host/Origin and must be refused by the server, not by the proxy. The server is told that the proxy's
 * host:port is its public Host (and its origin an allowed Origin), as a deployment behind a proxy would be.
 *
 * Exit code: 0 when every scenario passes or fails as the baseline expects; 1 on an unexpected failure, on
 * a baseline entry that now passes (remove it), or on a baseline the runner cannot trust; 2 when it could
 * not run (no build, the server did not start).
 *
 * Usage: node scripts/conformance.mjs [--scenario NAME] [--suite all|active|pending]
 *          [--expected-failures FILE] [-o DIR] [--verbose]
 *        (npm run build first; the default is every server scenario, `--suite all`)
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { createServer, request } from "node:http";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { clearTimeout, setTimeout } from "node:timers";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const cli = path.join(root, "dist", "bundle", "cli.js");
const suiteCli = path.join(
  path.dirname(createRequire(import.meta.url).resolve("@modelcontextprotocol/conformance/package.json")),
  "dist",
  "index.js",
);
/** The sandbox's paid key: the sandbox is built into the server, so this key is public and spends nothing. */
const SANDBOX_KEY = "sk-sandbox-paid";
const SERVER_START_MS = 20_000;
/** The suite's own per-scenario waits are 10 s at most; this bounds a suite that hangs as a whole. */
const SUITE_LIMIT_MS = 5 * 60_000;
const say = (line) => process.stderr.write(`conformance: ${line}\n`);
/** The server and the suite while they run: stopping the runner stops them too. */
const children = new Set();

/**
 * Reads the baseline in the one shape this project writes it: `server:` and, per entry, a `# reason`
 * line then `- scenario`. The suite ignores a name that matches no scenario, so a typo would hide a
 * failure forever: such a name, or an entry without its reason, is refused here.
 */
export function readBaseline(text, knownScenarios) {
  const entries = [];
  const problems = [];
  let reason;
  let section;
  for (const [index, raw] of text.split("\n").entries()) {
    const line = raw.trimEnd();
    const where = `line ${index + 1}`;
    if (line.trim() === "") continue;
    if (/^\S/.test(line) && !line.startsWith("#")) {
      section = /^(\w+):(?:\s*\[\])?$/.exec(line)?.[1];
      if (section !== "server") problems.push(`${where}: only a "server:" list belongs here`);
      continue;
    }
    const comment = /^\s*#\s*(.*)$/.exec(line);
    if (comment) {
      if (section === "server") reason = comment[1];
      continue;
    }
    const entry = /^\s+-\s+([\w/-]+)\s*$/.exec(line);
    if (!entry || section !== "server") {
      problems.push(`${where}: expected "  - <scenario>" under "server:", got ${JSON.stringify(line)}`);
      continue;
    }
    const name = entry[1];
    if (!reason) problems.push(`${where}: ${name} has no "# reason" line above it`);
    if (!knownScenarios.includes(name)) problems.push(`${where}: ${name} is not a server scenario`);
    if (entries.some((known) => known.name === name)) problems.push(`${where}: ${name} is listed twice`);
    entries.push({ name, reason: reason ?? "" });
    reason = undefined;
  }
  return { entries, problems };
}

/** Forwards every request to `upstream()` with the key added; nothing else is changed. */
function startProxy(upstream) {
  const hopByHop = new Set([
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
  ]);
  const forwardable = (headers) =>
    Object.fromEntries(Object.entries(headers).filter(([name]) => !hopByHop.has(name)));
  const proxy = createServer((req, res) => {
    const target = upstream();
    const outgoing = request(
      {
        host: target.host,
        port: target.port,
        method: req.method,
        path: req.url,
        // Host and Origin exactly as the suite sent them: the server judges them.
        headers: { ...forwardable(req.headers), authorization: `Bearer ${SANDBOX_KEY}` },
        agent: false,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, forwardable(answer.headers));
        // Piping without buffering keeps an SSE stream a stream: each event reaches the suite as sent.
        answer.pipe(res);
        answer.once("error", () => res.destroy());
      },
    );
    outgoing.once("error", (error) => {
      if (res.headersSent) return void res.destroy();
      res.writeHead(502, { "content-type": "text/plain" });
      res.end(`conformance proxy: the server did not answer (${error.message})\n`);
    });
    // The suite gave up (or closed a stream): so does the request to the server.
    res.once("close", () => outgoing.destroy());
    req.pipe(outgoing);
  });
  return new Promise((resolve, reject) => {
    proxy.once("error", reject);
    proxy.listen(0, "127.0.0.1", () => resolve(proxy));
  });
}

/** Starts the built server on a free port; resolves with its child process and its port. */
function startServer(publicHost, verbose) {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith("GENERATION_")),
  );
  Object.assign(env, {
    GENERATION_HTTP_ALLOWED_HOSTS: publicHost,
    GENERATION_HTTP_ALLOWED_ORIGINS: `http://${publicHost}`,
  });
  const child = spawn(process.execPath, [cli, "--http", "--sandbox", "--port", "0"], {
    env,
    stdio: ["ignore", "ignore", "pipe"],
  });
  children.add(child);
  child.once("exit", () => children.delete(child));
  let log = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(`did not start within ${SERVER_START_MS / 1000} s`), SERVER_START_MS);
    const fail = (why) => {
      clearTimeout(timer);
      child.kill();
      reject(new Error(`the server ${why}:\n${log}`));
    };
    child.once("exit", (code, signal) => fail(`exited (${signal ?? code})`));
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      log += chunk;
      const port = /serving MCP at http:\/\/[^\s/]+:(\d+)\/mcp/.exec(log)?.[1];
      if (port === undefined) return;
      clearTimeout(timer);
      child.removeAllListeners("exit");
      // Keep draining stderr so the server never blocks on a full pipe; show it only when asked.
      child.stderr.removeAllListeners("data");
      child.stderr.on("data", (more) => verbose && process.stderr.write(more));
      resolve({ child, port: Number(port) });
    });
  });
}

function runNode(args, { capture }) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, {
      stdio: ["ignore", capture ? "pipe" : "inherit", "inherit"],
    });
    children.add(child);
    let out = "";
    child.stdout?.setEncoding("utf8").on("data", (chunk) => (out += chunk));
    const timer = setTimeout(() => {
      say(`the suite did not finish within ${SUITE_LIMIT_MS / 60_000} min; stopping it`);
      child.kill();
    }, SUITE_LIMIT_MS);
    child.once("exit", (code, signal) => {
      children.delete(child);
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 1 : 0), out });
    });
  });
}

/** Per scenario, from the suite's checks.json files: counts and the suite's own verdict rule. */
function readResults(dir) {
  const results = new Map();
  // Oldest first, so a reused output directory ends with this run's result for each scenario.
  for (const name of readdirSync(dir).sort()) {
    const scenario = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(name)?.[1];
    if (scenario === undefined) continue;
    const checks = JSON.parse(readFileSync(path.join(dir, name, "checks.json"), "utf8"));
    const count = (status) => checks.filter((check) => check.status === status).length;
    // As the suite judges a baseline: a WARNING fails the scenario as a FAILURE does.
    const messages = checks
      .filter((check) => check.status === "FAILURE" || check.status === "WARNING")
      .map((check) => `${check.id}: ${check.errorMessage ?? check.details?.message ?? check.description}`);
    results.set(scenario, {
      passed: count("SUCCESS"),
      failed: count("FAILURE"),
      warnings: count("WARNING"),
      messages,
    });
  }
  return results;
}

async function main() {
  const { values: options } = parseArgs({
    options: {
      scenario: { type: "string" },
      suite: { type: "string", default: "all" },
      "expected-failures": {
        type: "string",
        default: path.join(root, "conformance", "expected-failures.yml"),
      },
      "output-dir": { type: "string", short: "o" },
      verbose: { type: "boolean", default: false },
    },
  });
  if (!existsSync(cli)) {
    say("dist/bundle/cli.js is missing: run `npm run build` first.");
    return 2;
  }
  const listed = await runNode([suiteCli, "list", "--server"], { capture: true });
  const knownScenarios = [...listed.out.matchAll(/^\s+- (\S+)$/gm)].map((match) => match[1]);
  if (listed.code !== 0 || knownScenarios.length === 0) {
    say("could not list the suite's server scenarios.");
    return 2;
  }
  const baselineFile = path.resolve(options["expected-failures"]);
  const baseline = readBaseline(readFileSync(baselineFile, "utf8"), knownScenarios);
  if (baseline.problems.length > 0) {
    for (const problem of baseline.problems) say(`${path.relative(root, baselineFile)}: ${problem}`);
    return 1;
  }

  let serverPort;
  const proxy = await startProxy(() => ({ host: "127.0.0.1", port: serverPort }));
  const publicHost = `127.0.0.1:${proxy.address().port}`;
  let server;
  try {
    server = await startServer(publicHost, options.verbose);
  } catch (error) {
    proxy.close();
    say(error.message);
    return 2;
  }
  serverPort = server.port;
  const outputDir = options["output-dir"] ?? mkdtempSync(path.join(tmpdir(), "generation-mcp-conformance-"));
  // Stopped from outside (Ctrl+C, a test's timeout): nothing it started outlives it.
  for (const signal of ["SIGINT", "SIGTERM"]) {
    process.once(signal, () => {
      for (const child of children) child.kill("SIGTERM");
      if (options["output-dir"] === undefined) rmSync(outputDir, { recursive: true, force: true });
      process.exit(130);
    });
  }
  try {
    const args = [
      suiteCli,
      "server",
      "--url",
      `http://${publicHost}/mcp`,
      "--expected-failures",
      baselineFile,
    ];
    args.push(...(options.scenario ? ["--scenario", options.scenario] : ["--suite", options.suite]));
    args.push("-o", outputDir, ...(options.verbose ? ["--verbose"] : []));
    say(`server on 127.0.0.1:${serverPort}, suite pointed at the key-adding proxy http://${publicHost}/mcp`);
    const suite = await runNode(args, { capture: false });

    const results = readResults(outputDir);
    const expected = new Map(baseline.entries.map((entry) => [entry.name, entry.reason]));
    const ran = options.scenario
      ? [options.scenario]
      : options.suite === "all"
        ? knownScenarios
        : [...results.keys()];
    let problems = 0;
    process.stdout.write("\n=== generation-mcp conformance ===\n");
    for (const scenario of ran) {
      const result = results.get(scenario);
      const failed = result === undefined || result.failed + result.warnings > 0;
      const verdict = failed
        ? expected.has(scenario)
          ? "expected failure"
          : "UNEXPECTED FAILURE"
        : expected.has(scenario)
          ? "STALE BASELINE ENTRY (passes now: remove it)"
          : "pass";
      if (verdict !== "pass" && verdict !== "expected failure") problems += 1;
      const counts = result
        ? `${result.passed} passed, ${result.failed} failed, ${result.warnings} warnings`
        : "no result (the scenario did not run to the end)";
      const why = verdict === "expected failure" ? ` -- ${expected.get(scenario)}` : "";
      process.stdout.write(`${verdict.padEnd(18)} ${scenario} (${counts})${why}\n`);
      if (verdict === "UNEXPECTED FAILURE") {
        for (const message of result?.messages ?? []) process.stdout.write(`${"".padEnd(18)}   ${message}\n`);
      }
    }
    const passing = ran.filter((scenario) => !expected.has(scenario)).length;
    process.stdout.write(
      `${ran.length} scenarios: ${passing} must pass, ${ran.length - passing} expected to fail; ` +
        `${problems === 0 && suite.code === 0 ? "baseline holds" : "BASELINE BROKEN"}\n`,
    );
    // The suite applies the same baseline rule; either one saying no is a no.
    return suite.code !== 0 || problems > 0 ? 1 : 0;
  } finally {
    server.child.kill("SIGTERM");
    proxy.close();
    proxy.closeAllConnections();
    if (options["output-dir"] === undefined) rmSync(outputDir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.exitCode = await main();
}
