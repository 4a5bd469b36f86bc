/**
 * GENERATION_METRICS and GENERATION_METRICS_TOKEN: bad values refused naming the variable, 404 when off, the
 * token enforced when set, stdio warned that metrics are an --http thing, and the shared-state readiness gauge
 * following a real redis-server down and up. Needs `npm run build`.
 */
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/index.js";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { tempRoot } from "../helpers/http-calls.js";
import { startHttpAgainst, type HttpServerProcess } from "../helpers/http.js";
import { startRedis, type RedisProcess } from "../helpers/redis.js";
import { CLI } from "../helpers/stdio.js";
import { metricsUrl, scrape } from "./scrape.js";

const TOKEN = "metrics-token-0123456789abcdef";

describe("the metrics settings", () => {
  const http = (env: Record<string, string>) =>
    loadConfig({ env, flags: { "--http": true, "--sandbox": true } }).http ?? { metrics: "no http" };

  it("reads on/off and the token", () => {
    expect(http({}).metrics).toBeUndefined();
    expect(http({ GENERATION_METRICS: "off" }).metrics).toBeUndefined();
    expect(http({ GENERATION_METRICS: "on" }).metrics).toEqual({ token: undefined });
    expect(http({ GENERATION_METRICS: "TRUE", GENERATION_METRICS_TOKEN: TOKEN }).metrics).toEqual({
      token: TOKEN,
    });
  });

  it("refuses bad values, naming the variable", () => {
    expect(() => http({ GENERATION_METRICS: "yes please" })).toThrow(
      /^GENERATION_METRICS: must be on or off/,
    );
    expect(() => http({ GENERATION_METRICS_TOKEN: TOKEN })).toThrow(
      /GENERATION_METRICS_TOKEN is set but GENERATION_METRICS is not on/,
    );
    expect(() => http({ GENERATION_METRICS: "on", GENERATION_METRICS_TOKEN: "short" })).toThrow(
      /^GENERATION_METRICS_TOKEN: must be at least 16 characters/,
    );
  });
});

describe("GET /metrics of the bin", () => {
  let sandbox: SandboxHandle;
  let root: { dir: string; remove: () => Promise<void> };
  const servers: HttpServerProcess[] = [];

  beforeAll(async () => {
    sandbox = await startSandbox({ timings: { queuedMs: 200, processingMs: 800 } });
    root = await tempRoot("metrics-settings-");
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
    await sandbox?.close();
    await root?.remove();
  });
  const start = async (env: Record<string, string>) => {
    const server = await startHttpAgainst(sandbox, root.dir, 200, env);
    servers.push(server);
    return server;
  };

  it("is not there when metrics are off", async () => {
    const server = await start({});
    const response = await fetch(metricsUrl(server.url));
    expect(response.status).toBe(404);
    expect(await response.text()).not.toMatch(/generation_mcp_/);
  });

  it("asks for the token when one is set, and never logs it", async () => {
    const server = await start({ GENERATION_METRICS: "on", GENERATION_METRICS_TOKEN: TOKEN });
    const url = metricsUrl(server.url);
    const missing = await fetch(url);
    expect(missing.status).toBe(401);
    expect(missing.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect((await fetch(url, { headers: { authorization: `Bearer ${TOKEN}x` } })).status).toBe(401);
    const metrics = await scrape(server.url, { authorization: `Bearer ${TOKEN}` });
    expect(metrics.value("generation_mcp_waits_in_flight")).toBe(0);
    expect(server.stderr()).toMatch(/Prometheus metrics at http:\/\/\S+\/metrics/);
    expect(server.stderr()).not.toContain(TOKEN);
  });

  it("warns on stdio that metrics apply to --http only", async () => {
    const child = spawn(process.execPath, [CLI, "--sandbox"], {
      env: { PATH: process.env["PATH"] ?? "", HOME: root.dir, GENERATION_METRICS: "on" },
      stdio: ["pipe", "ignore", "pipe"],
    });
    let stderr = "";
    await new Promise<void>((resolve) => {
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
        stderr += chunk;
        if (/ready on stdio/.test(stderr)) resolve();
      });
      child.once("exit", () => resolve());
    });
    child.stdin.end();
    await new Promise((resolve) => child.once("exit", resolve));
    expect(stderr).toMatch(/GENERATION_METRICS=on applies to --http only/);
  });
});

describe("the shared-state readiness gauge", () => {
  let redis: RedisProcess;
  let sandbox: SandboxHandle;
  let server: HttpServerProcess;
  let root: { dir: string; remove: () => Promise<void> };

  beforeAll(async () => {
    redis = await startRedis();
    sandbox = await startSandbox({ timings: { queuedMs: 200, processingMs: 800 } });
    root = await tempRoot("metrics-redis-");
    server = await startHttpAgainst(sandbox, root.dir, 200, {
      GENERATION_METRICS: "on",
      GENERATION_REDIS_URL: redis.url,
      GENERATION_REDIS_PREFIX: "metrics-test:",
    });
  });
  afterAll(async () => {
    await server?.stop();
    await redis?.stop();
    await sandbox?.close();
    await root?.remove();
  });

  /** Scrapes until the gauge reads `want` (Redis' outage is noticed by a probe), at most ~20 s. */
  async function readiness(want: number): Promise<number> {
    let value = -1;
    for (let attempt = 0; attempt < 200 && value !== want; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 100));
      value = (await scrape(server.url)).value("generation_mcp_shared_state_ready");
    }
    return value;
  }

  it("reads 1 with Redis up, 0 while it is down, 1 again once it is back", async () => {
    expect(await readiness(1)).toBe(1);
    await redis.stop();
    expect(await readiness(0)).toBe(0);
    await redis.restart();
    expect(await readiness(1)).toBe(1);
  }, 60_000);
});
