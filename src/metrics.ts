/**
 * Prometheus metrics (`GENERATION_METRICS=on`, `--http` only), the side the hot paths see: a tool call, a
 * request to the service and a wait report to `metrics()`, a no-op until `startMetrics` installs the
 * process's recorder. The metrics, their names and their bounded labels are in metrics-registry.ts, loaded
 * with prom-client only then (a lazy chunk of the bundle): a stdio session neither loads nor pays for them.
 */

/** What the hot paths report. Each method of the recorder in use when metrics are off does nothing. */
export interface MetricsRecorder {
  readonly enabled: boolean;
  /** A tools/call answered with `result` (undefined: it threw) after `seconds`. */
  toolCall(tool: string, result: unknown, seconds: number): void;
  /** A start was sent to the service (not refused before it, not a dry run, not a reused task). */
  creditsStarted(tool: string, credits: number): void;
  /** One request to the service is about to be sent; the returned function is told its answer's status (0: none). */
  upstreamRequest(method: string, path: string): (status: number) => void;
  /** A wait for a video began; the returned function ends it. */
  waitStarted(): () => void;
}

const ignore = () => undefined;

/** The recorder while metrics are off: nothing is measured, nothing allocated. */
export const NO_METRICS: MetricsRecorder = {
  enabled: false,
  toolCall: ignore,
  creditsStarted: ignore,
  upstreamRequest: () => ignore,
  waitStarted: () => ignore,
};

let current: MetricsRecorder = NO_METRICS;

/** The process's recorder: `NO_METRICS` unless `startMetrics` installed one. */
export function metrics(): MetricsRecorder {
  return current;
}

/** Runs one tools/call and reports it (a call that throws, as such, and the error goes on). */
export async function observeToolCall<T>(tool: string, run: () => Promise<T>): Promise<T> {
  const recorder = current;
  if (!recorder.enabled) return run();
  const started = performance.now();
  let result: T | undefined;
  try {
    result = await run();
    return result;
  } finally {
    recorder.toolCall(tool, result, (performance.now() - started) / 1000);
  }
}

export interface MetricsOptions {
  /** The server's tool names: any other name is counted as "unknown". */
  tools: readonly string[];
  /** False while the state shared with other replicas (Redis) is unreachable; absent: in-process state. */
  sharedStateReady?: (() => boolean) | undefined;
  /** Node.js process metrics (CPU, memory, event loop lag, GC) beside ours; default true. */
  processMetrics?: boolean;
}

/** The installed metrics: what `GET /metrics` answers. */
export interface MetricsEndpoint {
  scrape(): Promise<{ contentType: string; text: string }>;
  /** Removes the recorder again (tests, shutdown); the hot paths go back to the no-op. */
  stop(): void;
}

/** Loads prom-client and the metrics (metrics-registry.ts), and installs their recorder as the process's. */
export async function startMetrics(options: MetricsOptions): Promise<MetricsEndpoint> {
  const { createRegistry } = await import("./metrics-registry.js");
  const { recorder, scrape, clear } = createRegistry(options);
  current = recorder;
  return {
    scrape,
    stop() {
      if (current === recorder) current = NO_METRICS;
      clear();
    },
  };
}
