/**
 * The metrics of GET /metrics, on prom-client: the one place that names metrics and bounds their labels.
 * Loaded (with prom-client) only when GENERATION_METRICS=on; the hot paths report through metrics.ts.
 *
 * No label ever carries a key, token, subject, prompt or id: tools are the server's own names, routes are
 * templates ("GET /videos/:id"), outcomes and statuses come from fixed sets; anything else is "other".
 */
import type * as PromClient from "prom-client";
/*
 * prom-client's classes and the cheap ones of its default process metrics, each from its own file: its index
 * loads every default metric, and the CPU one pulls in @opentelemetry/api (for exemplars, never enabled here),
 * ~40 KiB of bundle whose minified code the bundle's import scan (scripts/bundle-imports.mjs) takes for a
 * require of "debug". prom-client types its index only; these are the same classes. The version is pinned
 * exact and test/metrics/ scrapes every one of them, so a moved file fails a test, not a user.
 */
// @ts-expect-error -- untyped file of prom-client (see above)
import RegistryClass from "prom-client/lib/registry.js";
// @ts-expect-error -- as above
import CounterClass from "prom-client/lib/counter.js";
// @ts-expect-error -- as above
import GaugeClass from "prom-client/lib/gauge.js";
// @ts-expect-error -- as above
import HistogramClass from "prom-client/lib/histogram.js";
// @ts-expect-error -- as above
import processStartTime from "prom-client/lib/metrics/processStartTime.js";
// @ts-expect-error -- as above
import osMemoryHeap from "prom-client/lib/metrics/osMemoryHeap.js";
// @ts-expect-error -- as above
import processOpenFileDescriptors from "prom-client/lib/metrics/processOpenFileDescriptors.js";
// @ts-expect-error -- as above
import eventLoopLag from "prom-client/lib/metrics/eventLoopLag.js";
// @ts-expect-error -- as above
import heapSizeAndUsed from "prom-client/lib/metrics/heapSizeAndUsed.js";
import { ERROR_CODES } from "./api/errors.js";
import type { MetricsEndpoint, MetricsOptions, MetricsRecorder } from "./metrics.js";

/** Error codes a tool result may start with (CONTRACT "Errors"), plus a cancellation; the rest are "other". */
export const CALL_OUTCOMES = ["ok", "task", "cancelled", ...ERROR_CODES] as const;
const OUTCOMES = new Set<string>(CALL_OUTCOMES);

/** The service's routes, as templates. */
const ROUTES: Readonly<Record<string, string>> = {
  "POST generate": "POST /generate",
  "POST generate-image": "POST /generate-image",
  "POST upload": "POST /upload",
  "GET videos": "GET /videos",
  "GET videos/:id": "GET /videos/:id",
  "GET credits": "GET /credits",
};

/** The route template of a request path relative to the base URL; "other" for anything unknown. */
export function routeOf(method: string, path: string): string {
  const parts = path.replace(/^\/+/, "").split("?")[0]?.split("/") ?? [];
  const shape = parts[0] === "videos" && parts.length === 2 ? "videos/:id" : parts.join("/");
  return ROUTES[`${method} ${shape}`] ?? "other";
}

/** Statuses counted one by one; any other becomes its class ("2xx", "4xx" ...); 0 (no answer) is "none". */
const STATUSES = new Set([
  200, 201, 202, 400, 401, 402, 403, 404, 405, 408, 409, 413, 422, 429, 500, 502, 503, 504,
]);

export function statusLabel(status: number): string {
  if (status === 0) return "none";
  if (STATUSES.has(status)) return String(status);
  return status >= 100 && status < 600 ? `${Math.floor(status / 100)}xx` : "other";
}

/**
 * A tools/call answer's outcome: "ok", "task" (answered with an MCP task), the error code its text starts
 * with ("validation_error: ..."), folded into "other" when it is not one of CALL_OUTCOMES, or
 * "protocol_error" when the call threw (undefined).
 */
export function outcomeOf(result: unknown): string {
  if (result === undefined) return "protocol_error";
  if (!isRecord(result)) return "other";
  if (isRecord(result["task"])) return "task";
  if (result["isError"] !== true) return "ok";
  const content = Array.isArray(result["content"]) ? (result["content"] as unknown[]) : [];
  const first = content.find((item) => isRecord(item) && item["type"] === "text");
  const text = isRecord(first) && typeof first["text"] === "string" ? first["text"] : "";
  const code = /^([a-z_]+):/.exec(text)?.[1];
  return code !== undefined && OUTCOMES.has(code) ? code : "other";
}

const Registry = RegistryClass as typeof PromClient.Registry;
const Counter = CounterClass as typeof PromClient.Counter;
const Gauge = GaugeClass as typeof PromClient.Gauge;
const Histogram = HistogramClass as typeof PromClient.Histogram;
type Registry = PromClient.Registry;
const PROCESS_METRICS = [
  processStartTime,
  osMemoryHeap,
  processOpenFileDescriptors,
  eventLoopLag,
  heapSizeAndUsed,
] as ((registry: Registry) => void)[];

const PREFIX = "generation_mcp_";
const CALL_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const UPSTREAM_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The registry of the process's metrics and the recorder that feeds it. */
export function createRegistry(options: MetricsOptions): {
  recorder: MetricsRecorder;
  scrape: MetricsEndpoint["scrape"];
  clear(): void;
} {
  const registry = new Registry();
  const registers = [registry];
  const known = new Set(options.tools);
  const toolLabel = (tool: string) => (known.has(tool) ? tool : "unknown");

  const calls = new Counter({
    name: `${PREFIX}tool_calls_total`,
    help: "tools/call requests answered, by tool and outcome (ok, task, or the error code of the result).",
    labelNames: ["tool", "outcome"] as const,
    registers,
  });
  const callSeconds = new Histogram({
    name: `${PREFIX}tool_call_duration_seconds`,
    help: "Time to answer a tools/call, waits included, by tool.",
    labelNames: ["tool"] as const,
    buckets: CALL_BUCKETS,
    registers,
  });
  const credits = new Counter({
    name: `${PREFIX}credits_started_total`,
    help: "Estimated credits of the starts sent to the service (not refused, declined, dry runs or reused tasks), by tool.",
    labelNames: ["tool"] as const,
    registers,
  });
  const upstreamSeconds = new Histogram({
    name: `${PREFIX}upstream_request_duration_seconds`,
    help: "Time of one request to the generation service, until its answer was read, by route template.",
    labelNames: ["route"] as const,
    buckets: UPSTREAM_BUCKETS,
    registers,
  });
  const upstreamAnswers = new Counter({
    name: `${PREFIX}upstream_responses_total`,
    help: 'Requests to the generation service by route template and answer status ("none": no answer).',
    labelNames: ["route", "status"] as const,
    registers,
  });
  const rateLimited = new Counter({
    name: `${PREFIX}upstream_rate_limited_total`,
    help: "HTTP 429 answers received from the generation service, by route template.",
    labelNames: ["route"] as const,
    registers,
  });
  const waits = new Gauge({
    name: `${PREFIX}waits_in_flight`,
    help: "Waits for a video task running now (tool calls and MCP tasks).",
    registers,
  });
  const sharedReady = options.sharedStateReady;
  new Gauge({
    name: `${PREFIX}shared_state_ready`,
    help: "1 when the state shared with other replicas (Redis) is reachable, else 0; 1 without Redis.",
    registers,
    collect() {
      this.set(sharedReady === undefined || sharedReady() ? 1 : 0);
    },
  });
  // Series present from the first scrape, so a rate over them reads 0 rather than "no data".
  for (const route of [...Object.values(ROUTES), "other"]) rateLimited.inc({ route }, 0);
  if (options.processMetrics !== false) {
    for (const add of PROCESS_METRICS) add(registry);
    processCpu(registry);
  }

  const recorder: MetricsRecorder = {
    enabled: true,
    toolCall(tool, result, seconds) {
      const label = toolLabel(tool);
      calls.inc({ tool: label, outcome: outcomeOf(result) });
      callSeconds.observe({ tool: label }, seconds);
    },
    creditsStarted(tool, spent) {
      if (spent > 0) credits.inc({ tool: toolLabel(tool) }, spent);
    },
    upstreamRequest(method, path) {
      const route = routeOf(method, path);
      const started = performance.now();
      return (status) => {
        upstreamSeconds.observe({ route }, (performance.now() - started) / 1000);
        upstreamAnswers.inc({ route, status: statusLabel(status) });
        if (status === 429) rateLimited.inc({ route });
      };
    },
    waitStarted() {
      waits.inc();
      let ended = false;
      return () => {
        if (ended) return;
        ended = true;
        waits.dec();
      };
    },
  };
  return {
    recorder,
    scrape: async () => ({ contentType: registry.contentType, text: await registry.metrics() }),
    clear: () => registry.clear(),
  };
}

/** `process_cpu_seconds_total`, as prom-client's own (whose file loads OpenTelemetry) names it. */
function processCpu(registry: Registry): void {
  let last = process.cpuUsage();
  new Counter({
    name: "process_cpu_seconds_total",
    help: "Total user and system CPU time spent in seconds.",
    registers: [registry],
    collect() {
      const now = process.cpuUsage();
      this.inc((now.user - last.user + now.system - last.system) / 1e6);
      last = now;
    },
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
