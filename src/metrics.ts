/**
 * Prometheus metrics (`--http` only): the one place that names metrics. Hot paths report to `metrics()`, a
 * no-op until `startMetrics` loads prom-client; labels come from fixed sets (else "other"), never an id.
 */
import type { CallToolResult } from "@modelcontextprotocol/server";
import { ERROR_CODES } from "./api/errors.js";

export interface MetricsRecorder {
  /** A tools/call answered with `result` (undefined: it threw) after `seconds`. */
  toolCall(tool: string, result: unknown, seconds: number): void;
  /** A start was sent to the service (not refused before it, not a dry run, not a reused task). */
  creditsStarted(tool: string, credits: number): void;
  /** One request to the service is about to be sent; the returned function is told its answer's status (0: none). */
  upstreamRequest(method: string, path: string): (status: number) => void;
  /** A wait for a video began; the returned function ends it. */
  waitStarted(): () => void;
}

/** The installed metrics: what `GET /metrics` answers. */
export type MetricsEndpoint = Awaited<ReturnType<typeof startMetrics>>;

const ignore = () => undefined;
const NO_METRICS: MetricsRecorder = {
  toolCall: ignore,
  creditsStarted: ignore,
  upstreamRequest: () => ignore,
  waitStarted: () => ignore,
};
let current = NO_METRICS;

export const metrics = (): MetricsRecorder => current;

/** Runs one tools/call and reports it (a call that throws, as such, and the error goes on). */
export async function observeToolCall<T>(tool: string, run: () => Promise<T>): Promise<T> {
  const started = performance.now();
  let result: T | undefined;
  try {
    return (result = await run());
  } finally {
    current.toolCall(tool, result, (performance.now() - started) / 1000);
  }
}

const HELP = {
  tool_calls_total: "tools/call answers by tool and outcome (ok, task, or the error code of the result).",
  tool_call_duration_seconds: "Time to answer a tools/call, waits included, by tool.",
  credits_started_total: "Estimated credits of starts sent to the service (not dry runs or reused tasks).",
  upstream_request_duration_seconds: "Time of one request to the generation service, by route template.",
  upstream_responses_total: 'Answers of the generation service by route and status ("none": no answer).',
  upstream_rate_limited_total: "HTTP 429 answers received from the generation service, by route template.",
  waits_in_flight: "Waits for a video task running now (tool calls and MCP tasks).",
  shared_state_ready: "1 while the state shared with other replicas (Redis) is reachable, else 0.",
};
const OUTCOMES = new Set<string>(["ok", "task", "cancelled", ...ERROR_CODES]);
const ROUTES = ["POST /generate", "POST /generate-image", "POST /upload"];
ROUTES.push("GET /videos", "GET /videos/:id", "GET /credits");
const STATUSES = [200, 201, 202, 400, 401, 402, 403, 404, 405, 408, 409, 413, 422, 429, 500, 502, 503, 504];

/** The route template of a request path relative to the base URL; "other" for anything unknown. */
function routeOf(method: string, path: string): string {
  const shape = path.replace(/^\/+|\?.*$/g, "").replace(/^videos\/[^/]*$/, "videos/:id");
  const route = `${method} /${shape}`;
  return ROUTES.includes(route) ? route : "other";
}

/** Known statuses one by one, any other as its class ("4xx"), 0 (no answer) as "none". */
function statusLabel(status: number): string {
  if (status === 0) return "none";
  if (STATUSES.includes(status)) return String(status);
  return status >= 100 && status < 600 ? `${Math.floor(status / 100)}xx` : "other";
}

/** "ok", "task", the error code the result's text starts with (else "other"), "protocol_error" if it threw. */
function outcomeOf(result: unknown): string {
  if (result === undefined) return "protocol_error";
  if (typeof result !== "object" || result === null) return "other";
  const { task, isError, content } = result as Partial<CallToolResult>;
  if (typeof task === "object" && task !== null) return "task";
  if (isError !== true) return "ok";
  const first = Array.isArray(content) ? content.find((item) => item?.type === "text") : undefined;
  const code = first?.type === "text" ? /^([a-z_]+):/.exec(first.text)?.[1] : undefined;
  return code !== undefined && OUTCOMES.has(code) ? code : "other";
}

/** Loads prom-client, makes the process's registry, and installs its recorder. */
export async function startMetrics(options: {
  /** The server's tool names: any other name is counted as "unknown". */
  tools: readonly string[];
  /** False while the state shared with other replicas (Redis) is unreachable; absent: in-process state. */
  sharedStateReady?: (() => boolean) | undefined;
}) {
  const { Registry, Counter, Gauge, Histogram, collectDefaultMetrics } = (await import("prom-client"))
    .default;
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // The series must stay fixed: these grow with what the process happens to do (handle types, GC kinds).
  for (const kind of ["handles", "requests", "resources"])
    registry.removeSingleMetric(`nodejs_active_${kind}`);
  registry.removeSingleMetric("nodejs_gc_duration_seconds");
  const meta = <L extends string>(name: keyof typeof HELP, ...labelNames: L[]) => ({
    name: `generation_mcp_${name}`,
    help: HELP[name],
    labelNames,
    registers: [registry],
  });
  const calls = new Counter(meta("tool_calls_total", "tool", "outcome"));
  const callBuckets = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
  const callSeconds = new Histogram({ ...meta("tool_call_duration_seconds", "tool"), buckets: callBuckets });
  const credits = new Counter(meta("credits_started_total", "tool"));
  const upstreamBuckets = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
  const upstreamSeconds = new Histogram({
    ...meta("upstream_request_duration_seconds", "route"),
    buckets: upstreamBuckets,
  });
  const upstreamAnswers = new Counter(meta("upstream_responses_total", "route", "status"));
  const rateLimited = new Counter(meta("upstream_rate_limited_total", "route"));
  const waits = new Gauge(meta("waits_in_flight"));
  new Gauge({
    ...meta("shared_state_ready"),
    collect() {
      this.set((options.sharedStateReady?.() ?? true) ? 1 : 0);
    },
  });
  // Series present from the first scrape, so a rate over them reads 0 rather than "no data".
  for (const route of [...ROUTES, "other"]) rateLimited.inc({ route }, 0);
  const known = new Set(options.tools);
  const toolLabel = (tool: string) => (known.has(tool) ? tool : "unknown");

  const recorder: MetricsRecorder = {
    toolCall(tool, result, seconds) {
      calls.inc({ tool: toolLabel(tool), outcome: outcomeOf(result) });
      callSeconds.observe({ tool: toolLabel(tool) }, seconds);
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
      return () => waits.dec();
    },
  };
  current = recorder;
  return {
    scrape: async () => ({ contentType: registry.contentType, text: await registry.metrics() }),
    /** Removes the recorder again (tests, shutdown); the hot paths go back to the no-op. */
    stop() {
      if (current === recorder) current = NO_METRICS;
      registry.clear();
    },
  };
}
