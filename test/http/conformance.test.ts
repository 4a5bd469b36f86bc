/**
 * The MCP conformance suite against the built server in `--http --sandbox` mode, through
 * scripts/conformance.mjs (which `npm test`, hence CI, runs here), and the runner's own judgement: an
 * unexpected failure, a stale baseline entry and a baseline it cannot trust each fail the run.
 * Needs `npm run build` (`npm test` does it). Everything stays on 127.0.0.1.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error -- a plain ESM script, run by node and imported here for its baseline reader
import { readBaseline } from "../../scripts/conformance.mjs";

const RUNNER = path.resolve(import.meta.dirname, "../../scripts/conformance.mjs");
const RUN_LIMIT_MS = 50_000;
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
    // The runner stops its server on SIGTERM: nothing outlives a run that hangs.
    const timer = setTimeout(() => child.kill("SIGTERM"), RUN_LIMIT_MS);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

function baselineFile(name: string, body: string): string {
  const file = path.join(work, name);
  writeFileSync(file, body);
  return file;
}

interface Check {
  id: string;
  status: string;
  details?: { statusCode?: number; body?: { message?: string; result?: { serverInfo?: { name?: string } } } };
}

function checksOf(dir: string, scenario: string): Check[] {
  const found = readdirSync(dir).find((name) => name.startsWith(`server-${scenario}-2`));
  if (found === undefined) throw new Error(`no results for ${scenario} in ${dir}`);
  return JSON.parse(readFileSync(path.join(dir, found, "checks.json"), "utf8")) as Check[];
}

describe("MCP conformance suite, server mode, against --http --sandbox", () => {
  it("passes every scenario outside conformance/expected-failures.yml and fails every one inside it", async () => {
    const results = path.join(work, "all");
    const run = await runRunner(["-o", results]);

    expect(run.code, run.output).toBe(0);
    expect(run.output).toMatch(/\d+ scenarios: \d+ must pass, \d+ expected to fail; baseline holds/);
    for (const scenario of [
      "server-initialize",
      "ping",
      "logging-set-level",
      "tools-list",
      "tools-call-error",
      "dns-rebinding-protection",
    ]) {
      expect(run.output).toMatch(new RegExp(`^pass +${scenario} `, "m"));
    }

    // The proxy passed Host and Origin through: the refusal is the server's own, and so is the welcome.
    const dns = new Map(checksOf(results, "dns-rebinding-protection").map((check) => [check.id, check]));
    const refused = dns.get("localhost-host-rebinding-rejected");
    expect(refused?.status).toBe("SUCCESS");
    expect(refused?.details?.statusCode).toBe(403);
    expect(refused?.details?.body?.message).toBe("This Host is not served here.");
    const accepted = dns.get("localhost-host-valid-accepted");
    expect(accepted?.status).toBe("SUCCESS");
    expect(accepted?.details?.body?.result?.serverInfo?.name).toBe("generation-mcp");
  }, 60_000);

  it("fails the run on a failure the baseline does not expect, and says which check failed", async () => {
    // tools-call-image needs the suite's fixture tool test_image_content, which the server will never have.
    const file = baselineFile("not-image.yml", "server:\n  # a reason\n  - tools-call-audio\n");
    const run = await runRunner(["--scenario", "tools-call-image", "--expected-failures", file]);

    expect(run.code, run.output).toBe(1);
    expect(run.output).toMatch(/^UNEXPECTED FAILURE tools-call-image /m);
    expect(run.output).toContain("tools-call-image: No image content found");
    expect(run.output).toContain("BASELINE BROKEN");
  }, 60_000);

  it("fails the run when a scenario listed as failing passes, so the entry gets removed", async () => {
    const file = baselineFile("stale.yml", "server:\n  # a reason\n  - ping\n");
    const run = await runRunner(["--scenario", "ping", "--expected-failures", file]);

    expect(run.code, run.output).toBe(1);
    expect(run.output).toMatch(/^STALE BASELINE ENTRY \(passes now: remove it\) ping /m);
  }, 60_000);

  it("refuses a baseline whose entries the suite would silently ignore or that lack a reason", async () => {
    const known = ["ping", "tools-list"];
    const good = readBaseline("server:\n  # why ping fails\n  - ping\n", known) as {
      entries: { name: string; reason: string }[];
      problems: string[];
    };
    expect(good).toEqual({ entries: [{ name: "ping", reason: "why ping fails" }], problems: [] });

    const bad = readBaseline(
      "server:\n  - ping\n  # typo\n  - tools-lst\n  # again\n  - ping\nclient:\n  - initialize\n",
      known,
    ) as { problems: string[] };
    expect(bad.problems).toEqual([
      'line 2: ping has no "# reason" line above it',
      "line 4: tools-lst is not a server scenario",
      "line 6: ping is listed twice",
      'line 7: only a "server:" list belongs here',
      'line 8: expected "  - <scenario>" under "server:", got "  - initialize"',
    ]);

    const file = baselineFile("typo.yml", "server:\n  # a reason\n  - pnig\n");
    const run = await runRunner(["--scenario", "ping", "--expected-failures", file]);
    expect(run.code, run.output).toBe(1);
    expect(run.output).toContain("pnig is not a server scenario");
  }, 60_000);
});
