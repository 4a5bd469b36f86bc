/**
 * The next step fits the cause, not only the code: a wrong base URL is the user's to fix (not "no task has
 * that id"); a failure before any byte reached the service never says a charge is possible and answers at
 * once; configuration faults tell the assistant to ask the user; a refusal by the service does not claim
 * that nothing was sent.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { startHarness, tinyPng, type Harness, type HarnessOptions } from "../helpers/harness.js";

const open: { close(): Promise<void> }[] = [];
afterAll(async () => {
  await Promise.all(open.splice(0).map((item) => item.close()));
});

let sandbox: SandboxHandle;
async function sharedSandbox(): Promise<SandboxHandle> {
  if (!sandbox) {
    sandbox = await startSandbox({ timings: { queuedMs: 40, processingMs: 160 } });
    open.push(sandbox);
  }
  return sandbox;
}

async function harness(options: HarnessOptions): Promise<Harness> {
  const h = await startHarness({ reuseSandbox: await sharedSandbox(), ...options });
  open.push(h);
  return h;
}

/** A web server that answers every path with an HTML 404 page, like a site that is not the API. */
async function htmlSite(): Promise<string> {
  const server: Server = createServer((_request, response) => {
    response.writeHead(404, { "content-type": "text/html" });
    response.end("<!doctype html><title>Not Found</title><h1>Not Found</h1>");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  open.push({ close: () => new Promise((resolve) => server.close(() => resolve())) });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const ASK_USER = /Ask the user to/;

describe.concurrent("advice a model can follow", () => {
  it("a base URL that reaches the service's host but not its API is a configuration problem", async () => {
    const service = await sharedSandbox();
    const h = await harness({ config: { baseUrl: `${service.origin}/v2/api/v1` } });
    for (const [tool, args] of [
      ["get_credits", {}],
      ["list_videos", {}],
      ["generate_video", { prompt: "a boat", wait: false }],
    ] as const) {
      const call = await h.call(tool, args);
      expect(call.result.isError, call.text).toBe(true);
      expect(call.text).toMatch(/^not_found: /);
      expect(call.text).toMatch(ASK_USER);
      expect(call.text).toContain("GENERATION_BASE_URL");
      expect(call.text).not.toMatch(/No task has that video_id/);
      expect(call.text).not.toMatch(/charge is possible/i);
    }
  });

  it("an HTML 404 page is a wrong base URL; for one id it says both possibilities", async () => {
    const site = await htmlSite();
    const h = await harness({ config: { baseUrl: `${site}/api/v1` } });
    const credits = await h.call("get_credits", {});
    expect(credits.text).toMatch(/^not_found: The service answered HTTP 404 with an HTML page/);
    expect(credits.text).toMatch(ASK_USER);
    expect(credits.text).toContain("GENERATION_BASE_URL");
    const status = await h.call("get_status", { video_id: "vid_123" });
    expect(status.text).toMatch(/^not_found: /);
    expect(status.text).toContain("list_videos");
    expect(status.text).toContain("GENERATION_BASE_URL");
  });

  it("connection refused: no charge is possible, and it answers at once", async () => {
    const port = await closedPort();
    const h = await harness({ config: { baseUrl: `http://127.0.0.1:${port}/api/v1` } });
    const started = Date.now();
    const call = await h.call("generate_video", { prompt: "a boat", wait: false });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(call.text).toMatch(/^network_error: Could not connect/);
    expect(call.text).toMatch(/nothing was charged/);
    expect(call.text).not.toMatch(/charge is possible/i);
  });

  it("https against a plain-http port fails fast, sends nothing and names the likely fix", async () => {
    const service = await sharedSandbox();
    const before = service.requests.length;
    const h = await harness({ config: { baseUrl: service.baseUrl.replace("http://", "https://") } });
    for (const [tool, args] of [
      ["generate_video", { prompt: "tls mistake", wait: false }],
      ["get_credits", {}],
    ] as const) {
      const started = Date.now();
      const call = await h.call(tool, args);
      // Today's bound is generous; the point is that nothing is retried or reconciled (it took 11.5 s).
      expect(Date.now() - started).toBeLessThan(3000);
      expect(call.text).toMatch(/^network_error: The TLS handshake/);
      expect(call.text).toMatch(/no request was sent, so nothing was charged/);
      expect(call.text).not.toMatch(/charge is possible/i);
      expect(call.text).toMatch(ASK_USER);
      expect(call.text).toContain("http://");
    }
    expect(service.requests.slice(before).filter((request) => request.path.includes("tls"))).toEqual([]);
  });

  it("a refused key asks the user to fix GENERATION_API_KEY", async () => {
    const h = await harness({ config: { apiKey: "sk-not-a-real-key" } });
    const call = await h.call("get_credits", {});
    expect(call.text).toMatch(/^unauthorized: /);
    expect(call.text).toMatch(/Ask the user to check GENERATION_API_KEY/);
    expect(call.text).toMatch(/cannot change it yourself/);
  });

  it("a 400 or 413 from the service does not claim that nothing was sent", async () => {
    const service = await sharedSandbox();
    const h = await harness({});
    service.faults.failNext("generate", {
      status: 400,
      code: "validation_error",
      message: "prompt: too odd",
    });
    const refused = await h.call("generate_video", { prompt: "refused by the service", wait: false });
    expect(refused.text).toMatch(/^validation_error: The service answered HTTP 400: "prompt: too odd"/);
    expect(refused.text).not.toMatch(/nothing was sent/);
    expect(refused.text).toMatch(/nothing was charged/);

    service.faults.failNext("upload", { status: 413, code: "payload_too_large", message: "too big" });
    const upload = await h.call("upload_image", {
      data_base64: tinyPng().toString("base64"),
      filename: "x.png",
    });
    expect(upload.text).toMatch(/^validation_error: /);
    expect(upload.text).toContain("HTTP 413");
    expect(upload.text).not.toMatch(/nothing was sent/);
  });
});
