/**
 * The network and the service fail in every way they can; the tools must still answer sensibly. Each case
 * arms one of the sandbox's fault knobs, calls a tool through a real MCP client, and checks:
 * the expected code (or success), that the call ends within a bounded time, that a start charges at most
 * once, that every task the service created is named in the answer (no lost task id), that no raw HTML or
 * huge body is relayed, and that the next ordinary call still works.
 */
import { createServer } from "node:net";
import { afterAll, describe, expect, it, vi } from "vitest";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { startHarness, type Harness, type HarnessOptions, type ToolCall } from "../helpers/harness.js";

// Most cases wait out a deadline or a retry's pause, each on a harness of its own: more of them at once than
// vitest's default 5, but not so many that their own load (12 at once) pushes a case past its bound.
vi.setConfig({ maxConcurrency: 6 });

// Closed at the end, not after each test: the concurrent blocks share this list.
const open: Harness[] = [];
afterAll(async () => {
  await Promise.all(open.splice(0).map((harness) => harness.close()));
});

async function harness(options: HarnessOptions = {}): Promise<Harness> {
  const h = await startHarness({
    // 2 s an attempt: the deadline cases give their own (see perAttempt).
    client: { timeoutMs: 2000, maxRetries: 2 },
    ...options,
    // Faults of the service are the subject: no frame sheet or preview (their own tests) adds its decode
    // time to the bounds below.
    config: { previews: false, ...options.config },
    sandbox: { timings: { queuedMs: 40, processingMs: 160 }, ...options.sandbox },
  });
  open.push(h);
  return h;
}

/**
 * 400 ms an attempt is what the deadline cases test. Anywhere else it is a hazard on a loaded machine: an
 * attempt can end before the sandbox reads it, so a fault armed for the first attempt hits the retry (a reset
 * ridden out then reads as a network error, or the retry times out), and reading a huge body up to the
 * client's 4 MiB cap outlasts it. Those cases get the harness's usual 2 s an attempt.
 */
function perAttempt(name: string, client: { timeoutMs: number; maxRetries: number }) {
  return name.includes("deadline") ? client : { ...client, timeoutMs: 2000 };
}

const paid = (h: Harness) => h.sandbox.accounts.find((account) => account.name === "paid");

/** Every task the service holds for the key, read straight from the sandbox (not through the server). */
async function serviceTasks(sandbox: SandboxHandle): Promise<string[]> {
  const response = await fetch(`${sandbox.baseUrl}/videos?limit=50`, {
    headers: { authorization: `Bearer ${sandbox.keys.paid}` },
  });
  const body = (await response.json()) as {
    data: { items?: { video_id: string }[] } | { video_id: string }[];
  };
  const items = Array.isArray(body.data) ? body.data : (body.data.items ?? []);
  return items.map((item) => item.video_id);
}

interface Expectation {
  /** The code the text starts with, or "ok" for a success. */
  code: string;
  /** Credits charged by the call: exact. */
  charged?: number;
  /** Upper bound of the call's duration. */
  withinMs?: number;
  /** Text the answer must contain. */
  says?: RegExp;
  /** Whether every task the service holds must be named in the answer (default true). */
  namesTasks?: boolean;
}

async function check(h: Harness, run: () => Promise<ToolCall>, expected: Expectation): Promise<ToolCall> {
  const before = paid(h)?.credits ?? 0;
  const started = Date.now();
  const call = await run();
  const elapsed = Date.now() - started;
  const { result, text } = call;
  if (expected.code === "ok") {
    expect(result.isError, text).toBeFalsy();
  } else {
    expect(result.isError, text).toBe(true);
    expect(text.slice(0, expected.code.length + 2), text).toBe(`${expected.code}: `);
  }
  if (expected.says) expect(text).toMatch(expected.says);
  expect(elapsed, `took ${elapsed} ms`).toBeLessThan(expected.withinMs ?? 4000);
  // Never relay a raw page or a flood of text.
  expect(text).not.toMatch(/<html|<!DOCTYPE|<body/i);
  expect(text.length).toBeLessThan(2000);
  expect(before - (paid(h)?.credits ?? 0)).toBe(expected.charged ?? 0);
  if (expected.namesTasks !== false) {
    for (const id of await serviceTasks(h.sandbox)) expect(text, `task ${id} lost`).toContain(id);
  }

  h.sandbox.faults.clear();
  const next = await h.call("get_credits");
  expect(next.result.isError, next.text).toBeFalsy();
  return call;
}

const START = { prompt: "a lighthouse at dusk", duration: 1, wait: false } as const;
const COST = 5;

describe.concurrent("starting a video when the start request fails", () => {
  it("reset after the service charged: found in the history, one charge, a warning", async () => {
    const h = await harness();
    h.sandbox.faults.dropNext("generate", { phase: "after" });
    const { structured } = await check(h, () => h.call("generate_video", START), {
      code: "ok",
      charged: COST,
      says: /found in history/,
    });
    expect(structured?.["warning"]).toMatch(/adopted/);
  });

  it("reset after the service charged, while waiting for the result: the task still completes", async () => {
    const h = await harness();
    h.sandbox.faults.dropNext("generate", { phase: "after" });
    const { structured } = await check(h, () => h.call("generate_video", { ...START, wait: true }), {
      code: "ok",
      charged: COST,
    });
    expect(structured?.["status"]).toBe("completed");
  });

  describe.concurrent(
    "ambiguous failures with nothing processed: history checked, nothing charged, the risk said",
    () => {
      const CHARGE_POSSIBLE = /charge is possible/;
      it.each([
        [
          "reset before the service acted",
          "network_error",
          (h: Harness) => h.sandbox.faults.dropNext("generate", { phase: "before" }),
        ],
        [
          "500 internal_error",
          "internal_error",
          (h: Harness) => h.sandbox.faults.failNext("generate", { status: 500, code: "internal_error" }),
        ],
        [
          "502 upstream_error",
          "upstream_error",
          (h: Harness) => h.sandbox.faults.failNext("generate", { status: 502, code: "upstream_error" }),
        ],
        [
          "503 with an unknown code",
          "upstream_error",
          (h: Harness) => h.sandbox.faults.failNext("generate", { status: 503, code: "service_unavailable" }),
        ],
        [
          "an HTML 502 page",
          "upstream_error",
          (h: Harness) => h.sandbox.faults.malformedNext("generate", "html", { status: 502 }),
        ],
        [
          "200 with invalid JSON",
          "internal_error",
          (h: Harness) => h.sandbox.faults.malformedNext("generate", "invalid-json"),
        ],
        [
          "200 with an empty body",
          "internal_error",
          (h: Harness) => h.sandbox.faults.malformedNext("generate", "empty"),
        ],
        [
          "200 without data",
          "internal_error",
          (h: Harness) => h.sandbox.faults.malformedNext("generate", "no-data"),
        ],
        [
          "200 with a huge body",
          "internal_error",
          (h: Harness) => h.sandbox.faults.malformedNext("generate", "huge", { bytes: 5 * 1024 * 1024 }),
        ],
      ])("%s", async (name, code, arm) => {
        const h = await harness({ client: perAttempt(name, { timeoutMs: 400, maxRetries: 2 }) });
        arm(h);
        await check(h, () => h.call("generate_video", START), {
          code,
          charged: 0,
          says: CHARGE_POSSIBLE,
          withinMs: 6000,
        });
        // Reconciliation looked at the history; the start itself was sent exactly once.
        expect(h.sandbox.requests.filter((request) => request.route === "generate")).toHaveLength(1);
        expect(h.sandbox.requests.some((request) => request.route === "videos")).toBe(true);
      });

      // The sandbox gives up on a request whose client went away before its body was read: nothing is charged.
      it("no headers before the deadline", async () => {
        const h = await harness({ client: { timeoutMs: 300, maxRetries: 2 } });
        h.sandbox.faults.latency("generate", 700);
        await check(h, () => h.call("generate_video", START), {
          code: "timeout",
          charged: 0,
          says: CHARGE_POSSIBLE,
          withinMs: 6000,
        });
        expect(h.sandbox.requests.filter((request) => request.route === "generate")).toHaveLength(1);
      });

      it("a body that drips past the deadline: adopted from the history, one charge", async () => {
        const h = await harness({ client: { timeoutMs: 300, maxRetries: 2 } });
        h.sandbox.faults.dripBody("generate", { chunkDelayMs: 200, chunks: 5 });
        await check(h, () => h.call("generate_video", START), {
          code: "ok",
          charged: COST,
          says: /found in history/,
          withinMs: 6000,
        });
      });
    },
  );

  it("an image start reset after the service charged: one charge, the risk said", async () => {
    const h = await harness();
    h.sandbox.faults.dropNext("generate-image", { phase: "after" });
    await check(h, () => h.call("generate_image", { prompt: "a kite" }), {
      code: "network_error",
      charged: 5,
      says: /charge is possible.*get_credits/s,
    });
    expect(h.sandbox.requests.filter((request) => request.route === "generate-image")).toHaveLength(1);
  });

  it("a 429 twice on a start: retried once, then rate_limit_exceeded, nothing charged", async () => {
    const h = await harness();
    h.sandbox.faults.failNext("generate", { status: 429, code: "rate_limit_exceeded", count: 2 });
    h.sandbox.faults.headersNext("generate", { "X-RateLimit-Reset": "1" }, 2);
    await check(h, () => h.call("generate_video", START), { code: "rate_limit_exceeded", charged: 0 });
    expect(h.sandbox.requests.filter((request) => request.route === "generate")).toHaveLength(2);
  });

  it("connection refused: nothing was sent, so no charge is possible and no history is needed", async () => {
    const port = await closedPort();
    const h = await harness({ config: { baseUrl: `http://127.0.0.1:${port}/api/v1` } });
    const { result, text } = await h.call("generate_video", START);
    expect(result.isError).toBe(true);
    expect(text).toMatch(/^network_error: .*ECONNREFUSED/);
    expect(text).not.toMatch(/charge is possible/);
    const credits = await h.call("get_credits");
    expect(credits.text).toMatch(/^network_error: /);
    expect(h.sandbox.requests).toHaveLength(0);
  });

  it("a forced 401 is not retried and charges nothing", async () => {
    const h = await harness();
    h.sandbox.faults.failNext("generate", { status: 401, code: "unauthorized" });
    await check(h, () => h.call("generate_video", START), {
      code: "unauthorized",
      says: /GENERATION_API_KEY/,
    });
    expect(h.sandbox.requests.filter((request) => request.route === "generate")).toHaveLength(1);
  });
});

describe.concurrent("status polls failing while a call waits", () => {
  it.each([
    ["500", { status: 500, code: "internal_error" }],
    ["502", { status: 502, code: "upstream_error" }],
    ["503", { status: 503, code: "service_unavailable" }],
  ])("a run of %s answers is ridden out", async (_name, error) => {
    const h = await harness();
    h.sandbox.faults.failNext("video-status", { ...error, count: 3 });
    const { structured } = await check(h, () => h.call("generate_video", { ...START, wait: true }), {
      code: "ok",
      charged: COST,
      withinMs: 8000,
    });
    expect(structured?.["status"]).toBe("completed");
  });

  it("a mixed sequence (HTML 502, reset, invalid JSON, 503) is ridden out", async () => {
    const h = await harness();
    const faults = h.sandbox.faults;
    faults.malformedNext("video-status", "html", { status: 502 });
    faults.dropNext("video-status", { phase: "before" });
    faults.malformedNext("video-status", "invalid-json");
    faults.failNext("video-status", { status: 503, code: "upstream_error" });
    const { structured } = await check(h, () => h.call("generate_video", { ...START, wait: true }), {
      code: "ok",
      charged: COST,
      withinMs: 8000,
    });
    expect(structured?.["status"]).toBe("completed");
  });

  it.each([
    [
      "a proxy's 404 HTML page",
      (h: Harness) => h.sandbox.faults.malformedNext("video-status", "html", { status: 404 }),
    ],
    [
      "a 404 not_found envelope",
      (h: Harness) => h.sandbox.faults.failNext("video-status", { status: 404, code: "not_found" }),
    ],
  ])("%s on a poll of a task just started: the answer keeps the video_id", async (_name, arm) => {
    const h = await harness();
    arm(h);
    await check(h, () => h.call("generate_video", { ...START, wait: true }), {
      code: "not_found",
      charged: COST,
      says: /get_status/,
    });
  });

  it("a provider outage that ends during the wait is ridden out", async () => {
    const h = await harness();
    h.sandbox.faults.providerOutage(true);
    setTimeout(() => h.sandbox.faults.providerOutage(false), 400);
    const { structured } = await check(h, () => h.call("generate_video", { ...START, wait: true }), {
      code: "ok",
      charged: COST,
    });
    expect(structured?.["status"]).toBe("completed");
  });

  it("a provider outage that outlasts the wait window: not an error, the video_id kept", async () => {
    const h = await harness();
    h.sandbox.faults.providerOutage(true);
    const { structured, text } = await check(
      h,
      () => h.call("generate_video", { ...START, wait: true, timeout_seconds: 0.5 }),
      { code: "ok", charged: COST },
    );
    expect(structured?.["video_id"]).toEqual(expect.any(String));
    expect(text).toMatch(/get_status/);
  });
});

describe.concurrent("reads when the service misbehaves", () => {
  type Arm = (h: Harness) => void;
  const once = (arm: Arm): Arm => arm;
  const cases: [string, Arm, string][] = [
    [
      "500 once",
      once((h) => h.sandbox.faults.failNext("credits", { status: 500, code: "internal_error" })),
      "ok",
    ],
    ["502 once", (h) => h.sandbox.faults.failNext("credits", { status: 502, code: "upstream_error" }), "ok"],
    [
      "503 once",
      (h) => h.sandbox.faults.failNext("credits", { status: 503, code: "upstream_error", count: 1 }),
      "ok",
    ],
    [
      "500 on every attempt",
      (h) => h.sandbox.faults.failNext("credits", { status: 500, code: "internal_error", count: 2 }),
      "internal_error",
    ],
    ["HTML 502 once", (h) => h.sandbox.faults.malformedNext("credits", "html", { status: 502 }), "ok"],
    [
      "HTML 502 on every attempt",
      (h) => h.sandbox.faults.malformedNext("credits", "html", { status: 502, count: 2 }),
      "upstream_error",
    ],
    [
      "HTML 200 on every attempt",
      (h) => h.sandbox.faults.malformedNext("credits", "html", { count: 2 }),
      "internal_error",
    ],
    ["invalid JSON once", (h) => h.sandbox.faults.malformedNext("credits", "invalid-json"), "ok"],
    [
      "invalid JSON on every attempt",
      (h) => h.sandbox.faults.malformedNext("credits", "invalid-json", { count: 2 }),
      "internal_error",
    ],
    [
      "empty body on every attempt",
      (h) => h.sandbox.faults.malformedNext("credits", "empty", { count: 2 }),
      "internal_error",
    ],
    [
      "no data field on every attempt",
      (h) => h.sandbox.faults.malformedNext("credits", "no-data", { count: 2 }),
      "internal_error",
    ],
    [
      "huge body once",
      (h) => h.sandbox.faults.malformedNext("credits", "huge", { bytes: 5 * 1024 * 1024 }),
      "ok",
    ],
    [
      "huge body on every attempt",
      (h) => h.sandbox.faults.malformedNext("credits", "huge", { bytes: 5 * 1024 * 1024, count: 2 }),
      "internal_error",
    ],
    ["reset before an answer, once", (h) => h.sandbox.faults.dropNext("credits", { phase: "before" }), "ok"],
    [
      "reset after processing, every attempt",
      (h) => h.sandbox.faults.dropNext("credits", { phase: "after", count: 2 }),
      "network_error",
    ],
    ["no headers before the deadline, once", (h) => h.sandbox.faults.latency("credits", 700), "timeout"],
    [
      "a body that drips past the deadline, once",
      (h) => h.sandbox.faults.dripBody("credits", { chunkDelayMs: 200, chunks: 5 }),
      "ok",
    ],
    [
      "a body that drips past the deadline, every attempt",
      (h) => h.sandbox.faults.dripBody("credits", { chunkDelayMs: 200, chunks: 5, count: 2 }),
      "timeout",
    ],
  ];

  it("a redirect is not followed (the key would go along)", async () => {
    const h = await harness({ client: { timeoutMs: 400, maxRetries: 0 } });
    h.sandbox.faults.failNext("credits", { status: 302, code: "found" });
    h.sandbox.faults.headersNext("credits", { Location: "http://127.0.0.1:9/steal" });
    await check(h, () => h.call("get_credits"), { code: "internal_error", says: /HTTP 302|found/i });
  });

  // One retry is enough to show a transient fault is ridden out and a lasting one reported.
  it.each(cases)("get_credits, %s", async (name, arm, code) => {
    const h = await harness({ client: perAttempt(name, { timeoutMs: 400, maxRetries: 1 }) });
    arm(h);
    await check(h, () => h.call("get_credits"), { code, withinMs: 5000 });
  });

  it.each([
    [
      "HTML 502",
      (h: Harness) => h.sandbox.faults.malformedNext("videos", "html", { status: 502, count: 2 }),
      "upstream_error",
    ],
    [
      "empty body",
      (h: Harness) => h.sandbox.faults.malformedNext("videos", "empty", { count: 2 }),
      "internal_error",
    ],
    [
      "huge body",
      (h: Harness) => h.sandbox.faults.malformedNext("videos", "huge", { bytes: 5 * 1024 * 1024, count: 2 }),
      "internal_error",
    ],
  ])("list_videos, %s", async (name, arm, code) => {
    const h = await harness({ client: perAttempt(name, { timeoutMs: 400, maxRetries: 1 }) });
    arm(h);
    await check(h, () => h.call("list_videos"), { code });
  });

  it.each([
    [
      "HTML 502",
      (h: Harness) => h.sandbox.faults.malformedNext("video-status", "html", { status: 502, count: 2 }),
      "upstream_error",
    ],
    [
      "no data field",
      (h: Harness) => h.sandbox.faults.malformedNext("video-status", "no-data", { count: 2 }),
      "internal_error",
    ],
    [
      "invalid JSON",
      (h: Harness) => h.sandbox.faults.malformedNext("video-status", "invalid-json", { count: 2 }),
      "internal_error",
    ],
    // A proxy's 404 page is read as "no such task": the id came from the caller, so nothing is lost.
    [
      "a 404 HTML page",
      (h: Harness) => h.sandbox.faults.malformedNext("video-status", "html", { status: 404 }),
      "not_found",
    ],
  ])("get_status, %s", async (_name, arm, code) => {
    const h = await harness({ client: { timeoutMs: 400, maxRetries: 1 } });
    const started = await h.call("generate_video", START);
    const id = String(started.structured?.["video_id"]);
    arm(h);
    await check(h, () => h.call("get_status", { video_id: id }), { code, namesTasks: false });
    const after = await h.call("get_status", { video_id: id });
    expect(after.structured?.["video_id"]).toBe(id);
  });

  it.each([
    [
      "HTML 502",
      (h: Harness) => h.sandbox.faults.malformedNext("video-status", "html", { status: 502, count: 2 }),
    ],
    [
      "no data field",
      (h: Harness) => h.sandbox.faults.malformedNext("video-status", "no-data", { count: 2 }),
    ],
  ])("get_status with wait, %s: ridden out", async (_name, arm) => {
    const h = await harness();
    const started = await h.call("generate_video", START);
    const id = String(started.structured?.["video_id"]);
    arm(h);
    const { structured } = await check(h, () => h.call("get_status", { video_id: id, wait: true }), {
      code: "ok",
      withinMs: 8000,
    });
    expect(structured).toMatchObject({ video_id: id, status: "completed" });
  });
});

describe.concurrent("rate-limit headers in every odd form", () => {
  const nowS = () => Math.floor(Date.now() / 1000);
  const forms: [string, () => Record<string, string>][] = [
    ["X-RateLimit-Reset as epoch seconds", () => ({ "X-RateLimit-Reset": String(nowS() + 1) })],
    ["X-RateLimit-Reset as relative seconds", () => ({ "X-RateLimit-Reset": "1" })],
    ["X-RateLimit-Reset as epoch milliseconds", () => ({ "X-RateLimit-Reset": String(Date.now() + 1000) })],
    [
      "X-RateLimit-Reset as an HTTP-date",
      () => ({ "X-RateLimit-Reset": new Date(Date.now() + 1000).toUTCString() }),
    ],
    ["X-RateLimit-Reset 0", () => ({ "X-RateLimit-Reset": "0" })],
    ["X-RateLimit-Reset negative", () => ({ "X-RateLimit-Reset": "-5" })],
    ["X-RateLimit-Reset 1e12", () => ({ "X-RateLimit-Reset": "1e12" })],
    ["X-RateLimit-Reset 1000000000000", () => ({ "X-RateLimit-Reset": "1000000000000" })],
    ["X-RateLimit-Reset abc", () => ({ "X-RateLimit-Reset": "abc" })],
    ["X-RateLimit-Reset absent", () => ({ "X-RateLimit-Reset": "" })],
    ["Retry-After seconds", () => ({ "Retry-After": "1", "X-RateLimit-Reset": "" })],
    [
      "Retry-After as an HTTP-date",
      () => ({ "Retry-After": new Date(Date.now() + 1000).toUTCString(), "X-RateLimit-Reset": "" }),
    ],
    [
      "Retry-After as a past HTTP-date",
      () => ({ "Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT", "X-RateLimit-Reset": "" }),
    ],
    ["Retry-After as epoch seconds", () => ({ "Retry-After": String(nowS() + 1), "X-RateLimit-Reset": "" })],
    ["Retry-After 0", () => ({ "Retry-After": "0", "X-RateLimit-Reset": "" })],
    ["Retry-After negative", () => ({ "Retry-After": "-1", "X-RateLimit-Reset": "" })],
    ["Retry-After 1e12", () => ({ "Retry-After": "1e12", "X-RateLimit-Reset": "" })],
    ["Retry-After abc", () => ({ "Retry-After": "abc", "X-RateLimit-Reset": "" })],
  ];

  describe.concurrent("a 429 on a start is retried once, charging once, in bounded time", () => {
    it.each(forms)("%s", async (_name, headers) => {
      const h = await harness();
      h.sandbox.faults.failNext("generate", { status: 429, code: "rate_limit_exceeded" });
      h.sandbox.faults.headersNext("generate", headers());
      await check(h, () => h.call("generate_video", START), { code: "ok", charged: COST, withinMs: 4000 });
      expect(h.sandbox.requests.filter((request) => request.route === "generate")).toHaveLength(2);
    });
  });

  describe.concurrent("a 429 on a read is retried in bounded time", () => {
    it.each(forms)("%s", async (_name, headers) => {
      const h = await harness();
      h.sandbox.faults.failNext("credits", { status: 429, code: "rate_limit_exceeded" });
      h.sandbox.faults.headersNext("credits", headers());
      await check(h, () => h.call("get_credits"), { code: "ok", withinMs: 4000 });
    });
  });
});

describe.concurrent("the MCP call's cancellation", () => {
  it("ends a read stuck before the per-attempt deadline at once; the next call works", async () => {
    const h = await harness({ client: { timeoutMs: 10_000, maxRetries: 2 } });
    h.sandbox.faults.latency("credits", 5000);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const started = Date.now();
    await expect(h.call("get_credits", {}, { signal: controller.signal })).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(1000);
    h.sandbox.faults.latency("credits", 0);
    const next = await h.call("get_credits");
    expect(next.result.isError, next.text).toBeFalsy();
  });

  it("ends a wait at once, keeping the task", async () => {
    const h = await harness({ sandbox: { timings: { queuedMs: 5000, processingMs: 5000 } } });
    const controller = new AbortController();
    const call = h.call("generate_video", { ...START, wait: true }, { signal: controller.signal });
    // Cut once the start has reached the service (not after a fixed time a loaded machine may not start it in).
    await vi.waitFor(() => expect(h.sandbox.requests.some(({ route }) => route === "generate")).toBe(true));
    await new Promise((resolve) => setTimeout(resolve, 200));
    controller.abort();
    const cut = Date.now();
    await expect(call).rejects.toThrow();
    expect(Date.now() - cut).toBeLessThan(1000);
    const [id] = await serviceTasks(h.sandbox);
    expect(id).toEqual(expect.any(String));
    const again = await h.call("generate_video", { ...START, wait: false });
    // The identical request within the window returns the same task instead of paying again.
    expect(again.structured).toMatchObject({ video_id: id, reused: true });
    expect(h.sandbox.requests.filter((request) => request.route === "generate")).toHaveLength(1);
  });
});

describe.concurrent("a 429 that asks for a long wait", () => {
  // Waiting out an hour would outlast any tool call: the start answers rate_limit_exceeded at once instead.
  it.each([
    ["Retry-After an hour", { "Retry-After": "3600", "X-RateLimit-Reset": "" }],
    ["X-RateLimit-Reset an hour away", { "X-RateLimit-Reset": String(Math.floor(Date.now() / 1000) + 3600) }],
  ])("%s: the start answers rate_limit_exceeded at once, nothing charged", async (_name, headers) => {
    const h = await harness();
    const before = paid(h)?.credits;
    h.sandbox.faults.failNext("generate", { status: 429, code: "rate_limit_exceeded" });
    h.sandbox.faults.headersNext("generate", headers);
    const started = Date.now();
    const { result, text } = await h.call("generate_video", START);
    expect(Date.now() - started).toBeLessThan(1500);
    expect(result.isError).toBe(true);
    expect(text).toMatch(/^rate_limit_exceeded: .*Nothing was charged/s);
    expect(paid(h)?.credits).toBe(before);
    expect(h.sandbox.requests.filter((request) => request.route === "generate")).toHaveLength(1);
  });
});

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
