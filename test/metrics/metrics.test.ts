/**
 * `GET /metrics` (GENERATION_METRICS=on) of the built bin in `--http` mode against a separately started
 * sandbox, scraped and read with a real Prometheus text parser: the values match the calls made through the
 * SDK client and what the sandbox's request log saw, labels never carry a key, prompt or id, and the number
 * of series stays fixed however many prompts and ids go by. Needs `npm run build`.
 */
import { randomUUID } from "node:crypto";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { callTool, tempRoot } from "../helpers/http-calls.js";
import { connectHttp, startHttpAgainst, type HttpServerProcess } from "../helpers/http.js";
import { modernCall } from "../spend/spend-helpers.js";
import { metricsUrl, scrape } from "./scrape.js";

const CALLS = "generation_mcp_tool_calls_total";
const CREDITS = "generation_mcp_credits_started_total";
const UPSTREAM = "generation_mcp_upstream_responses_total";
const RATE_LIMITED = "generation_mcp_upstream_rate_limited_total";
const WAITS = "generation_mcp_waits_in_flight";

let sandbox: SandboxHandle;
let server: HttpServerProcess;
let client: Client;
let root: { dir: string; remove: () => Promise<void> };
/** Prompts and ids that went by: none may appear in the metrics. */
const seen: string[] = [];

beforeAll(async () => {
  // Tasks stay in progress for a minute: a wait can be watched while it runs.
  sandbox = await startSandbox({ timings: { queuedMs: 500, processingMs: 60_000 } });
  root = await tempRoot("metrics-e2e-");
  server = await startHttpAgainst(sandbox, root.dir, 200, {
    GENERATION_METRICS: "on",
    // Only the 75-credit video of the declined-confirmation case is above it.
    GENERATION_CONFIRM_ABOVE_CREDITS: "60",
  });
  client = await connectHttp(server.url, sandbox.keys.paid);
});

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await server?.stop();
  await sandbox?.close();
  await root?.remove();
});

/** Sandbox requests of one route and status. */
const logged = (route: string, status: number) =>
  sandbox.requests.filter((request) => request.route === route && request.status === status).length;

/** Scrapes until `check` passes (a gauge settles after the answer is out), at most ~10 s. */
async function scrapeUntil(check: (value: (name: string) => number) => boolean) {
  for (let attempt = 0; ; attempt++) {
    const scraped = await scrape(server.url);
    if (check((name) => scraped.value(name)) || attempt >= 100) return scraped;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe("GET /metrics", () => {
  it("counts calls by tool and outcome, and their latency", async () => {
    for (let i = 0; i < 3; i++) expect((await callTool(client, "get_credits")).result.isError).toBeFalsy();
    const refused = await callTool(client, "generate_video", { prompt: "a cat", duration: -5 });
    expect(refused.text).toMatch(/^validation_error:/);
    const unknown = await callTool(client, `no_such_tool_${randomUUID()}`);
    expect(unknown.result.isError).toBe(true);

    const metrics = await scrape(server.url);
    expect(metrics.value(CALLS, { tool: "get_credits", outcome: "ok" })).toBe(3);
    expect(metrics.value(CALLS, { tool: "generate_video", outcome: "validation_error" })).toBe(1);
    expect(metrics.value(CALLS, { tool: "unknown", outcome: "validation_error" })).toBe(1);
    expect(metrics.count("generation_mcp_tool_call_duration_seconds", { tool: "get_credits" })).toBe(3);
    expect(metrics.histograms).toContain("generation_mcp_tool_call_duration_seconds");
    // Every answer of the service the server read, by route template and status, as the sandbox logged it.
    expect(metrics.value(UPSTREAM, { route: "GET /credits", status: "200" })).toBe(logged("credits", 200));
    expect(metrics.count("generation_mcp_upstream_request_duration_seconds", { route: "GET /credits" })).toBe(
      sandbox.requests.filter((request) => request.route === "credits").length,
    );
  });

  it("adds the estimated credits of a real start only: not a dry run, not a reused task", async () => {
    const prompt = `a lighthouse in a storm ${randomUUID()}`;
    seen.push(prompt);
    const before = (await scrape(server.url)).value(CREDITS, { tool: "generate_video" });
    const dry = await callTool(client, "generate_video", { prompt, dry_run: true });
    expect(dry.structured["dry_run"]).toBe(true);
    const started = await callTool(client, "generate_video", { prompt, wait: false });
    expect(started.result.isError).toBeFalsy();
    expect(started.structured["reused"]).toBeUndefined();
    seen.push(String(started.structured["video_id"]));
    const again = await callTool(client, "generate_video", { prompt, wait: false });
    expect(again.structured["reused"]).toBe(true);

    const metrics = await scrape(server.url);
    const estimate = Number(started.structured["estimated_credits"]);
    expect(estimate).toBeGreaterThan(0);
    expect(metrics.value(CREDITS, { tool: "generate_video" }) - before).toBe(estimate);
    expect(metrics.value(CALLS, { tool: "generate_video", outcome: "ok" })).toBe(3);
    expect(metrics.value(UPSTREAM, { route: "POST /generate", status: "200" })).toBe(logged("generate", 200));
  });

  it("adds nothing for a start the user declined: only starts sent count", async () => {
    const before = (await scrape(server.url)).value(CREDITS, { tool: "generate_video" });
    const starts = sandbox.requests.filter((request) => request.route === "generate").length;
    const params = {
      name: "generate_video",
      arguments: { prompt: "a long drive", duration: 15, wait: false },
    };
    const asked = await modernCall(server.url, sandbox.keys.paid, "tools/call", params, {
      elicitation: true,
    });
    expect(asked?.["resultType"]).toBe("input_required");
    const declined = await modernCall(
      server.url,
      sandbox.keys.paid,
      "tools/call",
      {
        ...params,
        inputResponses: { confirm_cost: { action: "decline" } },
        requestState: asked?.["requestState"],
      },
      { elicitation: true },
    );
    expect(declined?.["structuredContent"]).toMatchObject({ declined: true, estimated_credits: 75 });
    expect(sandbox.requests.filter((request) => request.route === "generate").length).toBe(starts);
    expect((await scrape(server.url)).value(CREDITS, { tool: "generate_video" })).toBe(before);
  });

  it("counts 429s from the service", async () => {
    sandbox.faults.failNext("credits", { status: 429, code: "rate_limit_exceeded", count: 2 });
    await callTool(client, "get_credits");
    await callTool(client, "get_credits");
    const received = logged("credits", 429);
    expect(received).toBeGreaterThanOrEqual(1);
    const metrics = await scrape(server.url);
    expect(metrics.value(RATE_LIMITED, { route: "GET /credits" })).toBe(received);
    expect(metrics.value(UPSTREAM, { route: "GET /credits", status: "429" })).toBe(received);
    expect(metrics.value(RATE_LIMITED, { route: "POST /generate" })).toBe(0);
  });

  it("shows a wait while it runs, and not after it ended", async () => {
    const prompt = `slow waves ${randomUUID()}`;
    seen.push(prompt);
    const started = await callTool(client, "generate_video", { prompt, wait: false });
    const videoId = String(started.structured["video_id"]);
    seen.push(videoId);
    const cancel = new AbortController();
    const waiting = client
      .callTool(
        { name: "get_status", arguments: { video_id: videoId, wait: true, timeout_seconds: 50 } },
        undefined,
        { signal: cancel.signal, timeout: 60_000 },
      )
      .catch(() => undefined);
    const during = await scrapeUntil((value) => value(WAITS) === 1);
    expect(during.value(WAITS)).toBe(1);
    cancel.abort();
    await waiting;
    const after = await scrapeUntil((value) => value(WAITS) === 0);
    expect(after.value(WAITS)).toBe(0);
    expect(after.value(UPSTREAM, { route: "GET /videos/:id", status: "200" })).toBeGreaterThanOrEqual(1);
  });

  it("keeps the number of series fixed whatever prompts and ids go by, and shows none of them", async () => {
    const round = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const prompt = `prompt ${i} ${randomUUID()}`;
        const id = `vid_${randomUUID()}`;
        seen.push(prompt, id);
        await callTool(client, "generate_video", { prompt, dry_run: true });
        await callTool(client, "get_status", { video_id: id });
        await callTool(client, "generate_image", { prompt, dry_run: true });
      }
      return (await scrape(server.url)).series();
    };
    const first = await round(3);
    const second = await round(15);
    expect(second).toEqual(first);
    const text = (await scrape(server.url)).text;
    for (const secret of [sandbox.keys.paid, ...seen]) expect(text).not.toContain(secret);
    // Only the server's own route templates, never a raw path.
    expect(text).not.toMatch(/route="[^"]*vid_/);
    expect(text).toContain('route="GET /videos/:id"');
    // The process metrics of prom-client are there too.
    expect(text).toMatch(/^process_cpu_seconds_total /m);
    expect(text).toMatch(/^process_resident_memory_bytes /m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds /m);
  });

  it("answers only GET and HEAD, and only for a Host this server serves", async () => {
    const url = metricsUrl(server.url);
    expect((await fetch(url, { method: "HEAD" })).status).toBe(200);
    const post = await fetch(url, { method: "POST", body: "" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    // DNS rebinding: a page of another name reaching the loopback port is refused, as on /mcp.
    const { request } = await import("node:http");
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(url, { headers: { host: "evil.example" } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.once("error", reject);
      req.end();
    });
    expect(status).toBe(403);
    expect((await scrape(server.url)).value("generation_mcp_shared_state_ready")).toBe(1);
  });
});
