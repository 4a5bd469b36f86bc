import { request } from "node:http";
import { describe, expect, it } from "vitest";
import { expectError, expectOk, useSandbox } from "./support.js";

async function timed<T>(run: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const start = performance.now();
  const value = await run();
  return { value, ms: performance.now() - start };
}

describe("latency", () => {
  it("delays one route until switched off, and '*' delays every route", async () => {
    const { api, sandbox } = await useSandbox();
    sandbox.faults.latency("credits", 300);
    expect((await timed(() => api("/credits"))).ms).toBeGreaterThanOrEqual(290);
    expect((await timed(() => api("/credits"))).ms).toBeGreaterThanOrEqual(290);
    expect((await timed(() => api("/videos"))).ms).toBeLessThan(250);
    sandbox.faults.latency("credits", 0);
    expect((await timed(() => api("/credits"))).ms).toBeLessThan(250);
    sandbox.faults.latency("*", 300);
    expect((await timed(() => api("/videos"))).ms).toBeGreaterThanOrEqual(290);
    expect((await timed(() => fetch(`${sandbox.origin}/media/videos/x.mp4`))).ms).toBeGreaterThanOrEqual(290);
  });

  it("does not hold close() up", async () => {
    const { api, sandbox } = await useSandbox();
    sandbox.faults.latency("credits", 60_000);
    const pending = api("/credits").catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const { ms } = await timed(() => sandbox.close());
    expect(ms).toBeLessThan(1000);
    expect(await pending).toBeInstanceOf(Error);
  });
});

describe("failNext", () => {
  it("answers the next N requests of the route with the given error, unprocessed", async () => {
    const { api, sandbox } = await useSandbox();
    sandbox.faults.failNext("generate", { status: 500, code: "internal_error", message: "boom", count: 2 });
    for (let i = 0; i < 2; i++) {
      const answer = await api("/generate", { json: { prompt: "p" } });
      expect(expectError(answer, 500, "internal_error").message).toBe("boom");
      expect(answer.headers.get("x-ratelimit-limit")).toBe("10000");
      expect(answer.headers.get("x-request-id")).toMatch(/^req_/);
    }
    expect(sandbox.accounts[0]?.credits).toBe(10_000);
    expectOk(await api("/credits"));
    expectOk(await api("/generate", { json: { prompt: "p" } }));
  });

  it("can force any row of spec section 7 on any route", async () => {
    const { api, sandbox } = await useSandbox();
    const rows: [number, string][] = [
      [401, "unauthorized"],
      [403, "insufficient_credits"],
      [403, "paid_access_required"],
      [400, "validation_error"],
      [429, "rate_limit_exceeded"],
      [500, "internal_error"],
      [502, "upstream_error"],
      [503, "service_unavailable"],
    ];
    for (const [status, code] of rows) {
      sandbox.faults.failNext("video-status", { status, code });
      expectError(await api("/videos/anything"), status, code);
    }
    sandbox.faults.failNext("*", { status: 500, code: "internal_error" });
    expectError(await api("/credits"), 500, "internal_error");
    expectOk(await api("/credits"));
  });

  it("applies to media too", async () => {
    const { sandbox } = await useSandbox();
    sandbox.faults.failNext("media", { status: 503, code: "service_unavailable" });
    const response = await fetch(`${sandbox.origin}/media/videos/x.mp4`);
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ data: null, error: { code: "service_unavailable" } });
  });

  it("still answers 401 to a bad key: the fault is for requests the service accepted", async () => {
    const { api, sandbox } = await useSandbox();
    sandbox.faults.failNext("credits", { status: 500, code: "internal_error" });
    expectError(await api("/credits", { key: null }), 401, "unauthorized");
    expectError(await api("/credits"), 500, "internal_error");
  });
});

describe("malformedNext", () => {
  it("answers invalid JSON, HTML, empty and data-less bodies, unprocessed", async () => {
    const { api, sandbox } = await useSandbox();
    sandbox.faults.malformedNext("generate", "invalid-json");
    const invalid = await api("/generate", { json: { prompt: "p" } });
    expect(invalid.status).toBe(200);
    expect(invalid.headers.get("content-type")).toMatch(/^application\/json/);
    expect(() => JSON.parse(invalid.text) as unknown).toThrow();

    sandbox.faults.malformedNext("generate", "html", { status: 502 });
    const html = await api("/generate", { json: { prompt: "p" } });
    expect(html.status).toBe(502);
    expect(html.headers.get("content-type")).toMatch(/^text\/html/);
    expect(html.text).toContain("<h1>502 Bad Gateway</h1>");

    sandbox.faults.malformedNext("generate", "empty");
    const empty = await api("/generate", { json: { prompt: "p" } });
    expect(empty).toMatchObject({ status: 200, text: "" });

    sandbox.faults.malformedNext("generate", "no-data", { count: 2 });
    for (let i = 0; i < 2; i++)
      expect((await api("/generate", { json: { prompt: "p" } })).text).toBe('{"ok":true}');

    expect(sandbox.accounts[0]?.credits).toBe(10_000);
    expectOk(await api("/generate", { json: { prompt: "p" } }));
  });

  it("answers a huge valid-looking body of the given size", async () => {
    const { api, sandbox } = await useSandbox();
    sandbox.faults.malformedNext("credits", "huge", { bytes: 3 * 1024 * 1024 });
    const huge = await api("/credits");
    expect(huge.status).toBe(200);
    expect(huge.headers.get("content-length")).toBe(String(3 * 1024 * 1024));
    expect(huge.text).toHaveLength(3 * 1024 * 1024);
    expect(huge.body).toMatchObject({ error: null, data: { padding: expect.any(String) } });
  });

  it("stops streaming a huge body when the client gives up", async () => {
    const { api, sandbox } = await useSandbox();
    sandbox.faults.malformedNext("credits", "huge", { bytes: 2 * 1024 * 1024 * 1024 });
    const controller = new AbortController();
    const response = await fetch(`${sandbox.baseUrl}/credits`, {
      headers: { Authorization: `Bearer ${sandbox.keys.paid}` },
      signal: controller.signal,
    });
    await response.body?.getReader().read();
    controller.abort();
    expectOk(await api("/credits"));
  });
});

describe("dropNext", () => {
  it("'before' drops the connection and processes nothing", async () => {
    const { api, sandbox } = await useSandbox();
    sandbox.faults.dropNext("generate", { phase: "before" });
    await expect(api("/generate", { json: { prompt: "p" } })).rejects.toThrow();
    expect(sandbox.accounts[0]?.credits).toBe(10_000);
    expect((await api("/videos")).data.total).toBe(0);
    expect(sandbox.requests[0]).toMatchObject({ route: "generate", status: 0 });
  });

  it("'after' processes the request (task created, credits charged) then drops the answer", async () => {
    const { api, sandbox } = await useSandbox();
    sandbox.faults.dropNext("generate", { phase: "after", count: 2 });
    await expect(api("/generate", { json: { prompt: "p" } })).rejects.toThrow();
    await expect(api("/generate", { json: { prompt: "p" } })).rejects.toThrow();
    expect(sandbox.accounts[0]?.credits).toBe(9_950);
    expect((await api("/videos")).data.total).toBe(2);
    expect(sandbox.requests.filter((r) => r.route === "generate").map((r) => r.status)).toEqual([0, 0]);
    expectOk(await api("/generate", { json: { prompt: "p" } }));
  });

  it("drops media requests too", async () => {
    const { sandbox } = await useSandbox();
    sandbox.faults.dropNext("media", { phase: "before" });
    await expect(fetch(`${sandbox.origin}/media/images/x.png`)).rejects.toThrow();
  });
});

describe("dripBody", () => {
  it("sends headers at once and the body in delayed chunks", async () => {
    const { sandbox } = await useSandbox();
    // Delays long beside a loaded machine's scheduling, so "at once" and "delayed" cannot be confused.
    sandbox.faults.dripBody("credits", { chunkDelayMs: 400, chunks: 4 });
    const started = performance.now();
    const result = await new Promise<{ headersMs: number; totalMs: number; chunks: number; body: string }>(
      (resolve, reject) => {
        const req = request(
          `${sandbox.baseUrl}/credits`,
          { headers: { Authorization: `Bearer ${sandbox.keys.paid}` } },
          (res) => {
            const headersMs = performance.now() - started;
            let body = "";
            let chunks = 0;
            res.setEncoding("utf8");
            res.on("data", (chunk: string) => {
              chunks += 1;
              body += chunk;
            });
            res.on("end", () => resolve({ headersMs, totalMs: performance.now() - started, chunks, body }));
          },
        );
        req.on("error", reject);
        req.end();
      },
    );
    expect(result.headersMs).toBeLessThan(300);
    expect(result.totalMs).toBeGreaterThanOrEqual(1190);
    expect(result.chunks).toBe(4);
    expect(JSON.parse(result.body)).toMatchObject({ data: { credits: 10_000 }, error: null });
  });
});

describe("headersNext", () => {
  it("overrides, adds and removes headers of the next answers", async () => {
    const { api, sandbox } = await useSandbox();
    sandbox.faults.headersNext(
      "credits",
      { "X-RateLimit-Reset": "Thu, 01 Jan 2026 00:01:00 GMT", "Retry-After": "7", "X-Request-Id": "" },
      2,
    );
    for (let i = 0; i < 2; i++) {
      const answer = await api("/credits");
      expect(answer.headers.get("x-ratelimit-reset")).toBe("Thu, 01 Jan 2026 00:01:00 GMT");
      expect(answer.headers.get("retry-after")).toBe("7");
      expect(answer.headers.get("x-request-id")).toBeNull();
    }
    const normal = await api("/credits");
    expect(normal.headers.get("retry-after")).toBeNull();
    expect(normal.headers.get("x-request-id")).toMatch(/^req_/);
  });
});

describe("providerOutage", () => {
  it("makes the status call of a running task answer 502 upstream_error", async () => {
    const { api, sandbox } = await useSandbox();
    await api("/generate", { json: { prompt: "p" } });
    sandbox.faults.providerOutage(true);
    expectError(await api("/videos/vid_1"), 502, "upstream_error");
    expectOk(await api("/videos"));
    expectOk(await api("/credits"));
    sandbox.faults.providerOutage(false);
    expectOk(await api("/videos/vid_1"));
  });
});

describe("clear", () => {
  it("switches every knob off", async () => {
    const { api, advance, sandbox } = await useSandbox();
    const { faults } = sandbox;
    faults.latency("*", 500);
    faults.failNext("*", { status: 500, code: "internal_error" });
    faults.malformedNext("*", "html");
    faults.dropNext("*", { phase: "before" });
    faults.dripBody("*", { chunkDelayMs: 500, chunks: 3 });
    faults.headersNext("*", { "X-Odd": "1" });
    faults.providerOutage(true);
    faults.failNextTask();
    faults.clear();
    const { value, ms } = await timed(() => api("/generate", { json: { prompt: "p" } }));
    expectOk(value);
    expect(ms).toBeLessThan(400);
    expect(value.headers.get("x-odd")).toBeNull();
    advance(10_000);
    expect((await api("/videos/vid_1")).data.status).toBe("completed");
  });

  it("refuses nonsense settings", async () => {
    const { sandbox } = await useSandbox();
    expect(() => sandbox.faults.latency("credits", -1)).toThrow(RangeError);
    expect(() => sandbox.faults.failNext("credits", { status: 99, code: "x" })).toThrow(RangeError);
    expect(() => sandbox.faults.dropNext("credits", { phase: "before", count: 0 })).toThrow(RangeError);
    expect(() => sandbox.faults.dripBody("credits", { chunkDelayMs: 1, chunks: 0 })).toThrow(RangeError);
  });
});
