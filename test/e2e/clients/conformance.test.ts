/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance 0.2.0-alpha, server mode, on the
 * Node 22 of test/interop) against the built server in `--http --sandbox` mode, at both revisions it speaks
 * (2026-07-28 with the tasks extension's scenarios, and 2025-11-25), through scripts/conformance.mjs, which
 * `npm run test:clients`, hence CI, runs here; and the runner's own judgement: an unexpected failure, a stale
 * baseline entry, a baseline it cannot trust and a missing suite or Node 22 each fail the run.
 * Needs the build and test/interop, both of which `npm run test:clients` sees to. Everything stays on 127.0.0.1.
 */
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error -- a plain ESM script, run by node and imported here for its judgement
import * as untypedRunner from "../../../scripts/conformance.mjs";

interface Entry {
  name: string;
  scenario: string;
  check: string | undefined;
  reason: string;
}
interface ReportedCheck {
  id: string;
  status: string;
  errorMessage?: string | undefined;
}
interface Scenarios {
  timeline: string[];
  extensions: string[];
}
const { judge, parseScenarioList, readBaseline, scenariosOf, worstPerCheck } = untypedRunner as {
  judge(run: { ran: string[]; results: Map<string, ReportedCheck[]>; entries: Entry[] }): {
    lines: string[];
    problems: string[];
    totals: Record<string, number>;
  };
  parseScenarioList(text: string): Map<string, string[]>;
  readBaseline(
    text: string,
    where: { knownScenarios: string[]; runScenarios: string[]; revision: string },
  ): { entries: Entry[]; problems: string[] };
  scenariosOf(scenarios: Map<string, string[]>, revision: string): Scenarios;
  worstPerCheck(checks: ReportedCheck[]): ReportedCheck[];
};

const RUNNER = path.resolve(import.meta.dirname, "../../../scripts/conformance.mjs");
/** Both revisions take about 10 s; a single scenario about 2 s. */
const RUN_LIMIT_MS = 100_000;
const work = mkdtempSync(path.join(tmpdir(), "conformance-test-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

interface Run {
  code: number | null;
  output: string;
}

function runRunner(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [RUNNER, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    // The runner stops its server and the suite on SIGTERM: nothing outlives a run that hangs.
    const timer = setTimeout(() => child.kill("SIGTERM"), RUN_LIMIT_MS);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

function file(name: string, body: string): string {
  const where = path.join(work, name);
  writeFileSync(where, body);
  return where;
}

interface Check {
  id: string;
  status: string;
  errorMessage?: string;
  details?: { statusCode?: number; body?: { message?: string; result?: { serverInfo?: { name?: string } } } };
}

function checksOf(dir: string, scenario: string): Check[] {
  const found = readdirSync(dir).find((name) => new RegExp(`^server-${scenario}-\\d{4}-`).test(name));
  if (found === undefined) throw new Error(`no results for ${scenario} in ${dir}`);
  return JSON.parse(readFileSync(path.join(dir, found, "checks.json"), "utf8")) as Check[];
}

/** One revision's part of the runner's report. */
function section(output: string, revision: string): string {
  const start = output.indexOf(`=== generation-mcp conformance at ${revision} `);
  if (start < 0) throw new Error(`no report for ${revision}:\n${output}`);
  const end = output.indexOf("=== generation-mcp conformance at ", start + 1);
  return output.slice(start, end < 0 ? undefined : end);
}

const verdict = (report: string, scenario: string) =>
  new RegExp(`^(\\S+(?: \\S+)*) +${scenario} \\(`, "m").exec(report)?.[1];

describe("MCP conformance suite, server mode, against --http --sandbox", () => {
  it("passes every check outside each revision's baseline and fails every one inside it", async () => {
    const results = path.join(work, "all");
    const run = await runRunner(["-o", results]);

    expect(run.code, run.output).toBe(0);
    expect(run.output).toContain("conformance: baseline holds at 2026-07-28 and 2025-11-25");
    const modern = section(run.output, "2026-07-28");
    const legacy = section(run.output, "2025-11-25");
    expect(modern).toMatch(/^2026-07-28: \d+ scenarios .*; baseline holds$/m);
    expect(legacy).toMatch(/^2025-11-25: \d+ scenarios .*; baseline holds$/m);

    // Every check of these passes (wire-schema-valid included): they need no fixture of the suite's.
    for (const scenario of [
      "tools-list",
      "tools-call-error",
      "server-sse-multiple-streams",
      "resources-list",
      "sep-2164-resource-not-found",
      "dns-rebinding-protection",
      "http-header-validation",
      "input-required-result-unsupported-methods",
      "input-required-result-ignore-extra-params",
      // prompts/list and its cache hints: this server offers prompts (animate_picture, storyboard, product_shot).
      "caching",
      "prompts-list",
    ]) {
      expect(verdict(modern, scenario), `${scenario} at 2026-07-28`).toBe("pass");
    }
    for (const scenario of [
      "server-initialize",
      "server-session-lifecycle",
      "logging-set-level",
      "ping",
      "tools-list",
      "tools-call-error",
      "server-sse-multiple-streams",
      "resources-list",
      "prompts-list",
      "dns-rebinding-protection",
    ]) {
      expect(verdict(legacy, scenario), `${scenario} at 2025-11-25`).toBe("pass");
    }
    // These pass but for checks that call a fixture tool, listed one by one in the baseline.
    for (const scenario of ["server-stateless", "tasks-capability-negotiation", "tasks-lifecycle"]) {
      expect(verdict(modern, scenario), scenario).toBe("expected failures");
    }
    // The tasks extension's scenarios ran (at the 2026-07-28 wire), and not at 2025-11-25.
    expect(modern).toMatch(/^\S.* tasks-dispatch-and-envelope \(/m);
    expect(legacy).not.toContain("tasks-");

    const stateless = new Map(
      checksOf(path.join(results, "2026-07-28"), "server-stateless").map((c) => [c.id, c]),
    );
    // A request without the envelope, or without its protocol version, is -32602 with its own id.
    for (const id of [
      "sep-2575-request-meta-invalid-missing-meta",
      "sep-2575-request-meta-invalid-missing-protocol-version",
      "sep-2575-http-server-meta-invalid-400",
      "sep-2575-http-server-error-jsonrpc-id",
      "sep-2575-server-implements-discover",
    ]) {
      expect(stateless.get(id)?.status, id).toBe("SUCCESS");
    }
    const tasks = new Map(
      checksOf(path.join(results, "2026-07-28"), "tasks-capability-negotiation").map((c) => [c.id, c]),
    );
    expect(tasks.get("tasks-extension-advertised")?.status).toBe("SUCCESS");
    expect(tasks.get("sep-2663-tasks-methods-non-declaring")?.status).toBe("SUCCESS");

    // The proxy passed Host and Origin through: the refusal is the server's own, and so is the welcome.
    for (const revision of ["2026-07-28", "2025-11-25"]) {
      const dns = new Map(
        checksOf(path.join(results, revision), "dns-rebinding-protection").map((c) => [c.id, c]),
      );
      const refused = dns.get("localhost-host-rebinding-rejected");
      expect(refused?.status, revision).toBe("SUCCESS");
      expect(refused?.details?.statusCode, revision).toBe(403);
      expect(refused?.details?.body?.message, revision).toBe("This Host is not served here.");
      expect(dns.get("localhost-host-valid-accepted")?.status, revision).toBe("SUCCESS");
    }
  }, 120_000);

  it("fails the run on a failing check the baseline does not name, on a stale entry and on an unknown check", async () => {
    // tools-call-image needs the suite's fixture tool test_image_content, which the server will never have.
    const baseline = file(
      "image.yml",
      "server:\n  # passes, so stale\n  - tools-call-image:wire-schema-valid\n  # a typo\n  - tools-call-image:tools-call-imagee\n",
    );
    const run = await runRunner([
      "--revision",
      "2025-11-25",
      "--scenario",
      "tools-call-image",
      "--expected-failures",
      baseline,
    ]);

    expect(run.code, run.output).toBe(1);
    expect(run.output).toMatch(/^UNEXPECTED FAILURE +tools-call-image \(/m);
    expect(run.output).toContain("✗ tools-call-image FAILURE: No image content found");
    expect(run.output).toContain(
      "! tools-call-image:tools-call-imagee: tools-call-image reported no check tools-call-imagee",
    );
    expect(run.output).toContain(
      "! tools-call-image:wire-schema-valid: listed as failing but is SUCCESS now: remove it from the baseline",
    );
    expect(run.output).toMatch(/^2025-11-25: 1 scenarios .*BASELINE BROKEN \(3 problems\)$/m);
    expect(run.output).toContain("conformance: BASELINE BROKEN at 2025-11-25");
  }, 60_000);

  it("fails the run when a scenario listed whole as failing passes, so the entry gets removed", async () => {
    const baseline = file("stale.yml", "server:\n  # a reason\n  - ping\n");
    const run = await runRunner([
      "--revision",
      "2025-11-25",
      "--scenario",
      "ping",
      "--expected-failures",
      baseline,
    ]);

    expect(run.code, run.output).toBe(1);
    expect(run.output).toMatch(
      /^STALE BASELINE +ping \(2 passed, 0 failed\): passes now, remove the entry$/m,
    );
  }, 60_000);

  it("refuses a baseline whose entries the suite would silently ignore or that lack a reason, before running", async () => {
    const baseline = file("typo.yml", "server:\n  # a reason\n  - pnig\n  # another\n  - server-stateless\n");
    const run = await runRunner(["--revision", "2025-11-25", "--expected-failures", baseline]);

    expect(run.code, run.output).toBe(1);
    expect(run.output).toContain("line 3: pnig is not a server scenario");
    expect(run.output).toContain(
      "line 5: server-stateless does not run at 2025-11-25, so this entry would never be judged",
    );
    // Refused before anything started.
    expect(run.output).not.toContain("suite pointed at");
  }, 60_000);

  it("fails, naming what to install, when the Node 22 it needs is not there", async () => {
    const missing = await runRunner(["--node", path.join(work, "no-such-node")]);
    expect(missing.code, missing.output).toBe(2);
    expect(missing.output).toContain("no-such-node: no such file");

    const old = file("node20", "#!/bin/sh\necho v20.18.1\n");
    chmodSync(old, 0o755);
    const tooOld = await runRunner(["--node", old]);
    expect(tooOld.code, tooOld.output).toBe(2);
    expect(tooOld.output).toContain("is not Node >= 22 (v20.18.1); the suite needs 22.");
  }, 30_000);
});

describe("the runner's judgement", () => {
  const scenarios = parseScenarioList(
    "Server scenarios (test against a server):\n" +
      "  - ping [2025-06-18,2025-11-25]\n" +
      "  - server-stateless [2026-07-28]\n" +
      "  - tools-list [2025-06-18,2025-11-25,2026-07-28]\n" +
      "  - tasks-lifecycle [extension]\n",
  );
  const knownScenarios = [...scenarios.keys()];
  const runAt = (revision: string) => {
    const { timeline, extensions } = scenariosOf(scenarios, revision);
    return [...timeline, ...extensions];
  };

  it("runs each revision's scenarios, and the extensions' at 2026-07-28 only", () => {
    expect(scenariosOf(scenarios, "2026-07-28")).toEqual({
      timeline: ["server-stateless", "tools-list"],
      extensions: ["tasks-lifecycle"],
    });
    expect(scenariosOf(scenarios, "2025-11-25")).toEqual({
      timeline: ["ping", "tools-list"],
      extensions: [],
    });
  });

  it("reads whole-scenario and per-check entries, each under its reason", () => {
    const good = readBaseline(
      "# header\nserver:\n  # why ping fails\n  - ping\n  # why this check fails\n  - tools-list:tools-list-name-format\n",
      { knownScenarios, runScenarios: runAt("2025-11-25"), revision: "2025-11-25" },
    );
    expect(good).toEqual({
      entries: [
        { name: "ping", scenario: "ping", check: undefined, reason: "why ping fails" },
        {
          name: "tools-list:tools-list-name-format",
          scenario: "tools-list",
          check: "tools-list-name-format",
          reason: "why this check fails",
        },
      ],
      problems: [],
    });
  });

  it("refuses what the suite would ignore: unknown names, other revisions, doubles, no reason", () => {
    const bad = readBaseline(
      [
        "server:",
        "  - ping",
        "  # typo",
        "  - tools-lst",
        "  # again",
        "  - ping",
        "  # a 2026-07-28 scenario in the 2025-11-25 baseline",
        "  - server-stateless:sep-2575-server-implements-discover",
        "  # an extension, run at 2026-07-28 only",
        "  - tasks-lifecycle",
        "  # whole",
        "  - tools-list",
        "  # and per check",
        "  - tools-list:tools-list",
        "  # a space after the colon is YAML for a map",
        "  - tools-list: tools-list",
        "client:",
        "  - initialize",
        "",
      ].join("\n"),
      { knownScenarios, runScenarios: runAt("2025-11-25"), revision: "2025-11-25" },
    );
    expect(bad.problems).toEqual([
      'line 2: ping has no "# reason" line above it',
      "line 4: tools-lst is not a server scenario",
      "line 6: ping is listed twice",
      "line 8: server-stateless does not run at 2025-11-25, so this entry would never be judged",
      "line 10: tasks-lifecycle does not run at 2025-11-25, so this entry would never be judged",
      "line 14: tools-list is listed both as a whole and per check; keep one",
      'line 16: expected "  - <scenario>" or "  - <scenario>:<check-id>" under "server:", got "  - tools-list: tools-list"',
      'line 17: only a "server:" list belongs here',
      'line 18: expected "  - <scenario>" or "  - <scenario>:<check-id>" under "server:", got "  - initialize"',
    ]);
  });

  it("judges each check on its worst report, warnings failing as failures do", () => {
    const check = (id: string, status: string, errorMessage?: string) => ({ id, status, errorMessage });
    expect(
      worstPerCheck([
        check("a", "SUCCESS"),
        check("a", "FAILURE"),
        check("a", "SUCCESS"),
        check("b", "INFO"),
      ]),
    ).toEqual([check("a", "FAILURE")]);

    const entry = (scenario: string, id?: string) => ({
      name: id === undefined ? scenario : `${scenario}:${id}`,
      scenario,
      check: id,
      reason: `why ${id ?? scenario}`,
    });
    const results = new Map([
      ["ping", [check("ping", "SUCCESS"), check("wire-schema-valid", "SUCCESS")]],
      ["tools-list", [check("tools-list", "WARNING", "order"), check("x", "FAILURE", "no fixture")]],
      ["server-stateless", [check("s1", "FAILURE", "fixture"), check("s2", "SKIPPED")]],
    ]);
    const verdict = judge({
      ran: ["ping", "tools-list", "server-stateless", "tasks-lifecycle"],
      results,
      entries: [entry("tools-list", "x"), entry("server-stateless", "s1"), entry("server-stateless", "s2")],
    });
    expect(verdict.problems).toEqual([
      "tools-list: unexpected tools-list WARNING: order",
      "server-stateless:s2: listed as failing but is SKIPPED now: remove it from the baseline",
      "tasks-lifecycle: no result (the scenario did not run to the end)",
    ]);
    expect(verdict.lines[0]).toMatch(/^pass +ping \(2 passed, 0 failed\)$/);
    expect(verdict.lines).toContain("                     ~ x -- why x");
    expect(verdict.totals).toEqual({
      scenarios: 4,
      passed: 2,
      failed: 2,
      warnings: 1,
      skipped: 1,
      expected: 2,
      clean: 1,
    });
  });
});
