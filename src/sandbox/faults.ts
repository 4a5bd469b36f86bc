/** The fault knobs tests turn through `handle.faults`; server.ts applies them, fault-answers.ts words them. */

/** Names the fault knobs use; "*" matches every route. */
export type SandboxRoute =
  "generate" | "generate-image" | "videos" | "video-status" | "upload" | "credits" | "media";
export type FaultRoute = SandboxRoute | "*";
export type MalformedKind = "invalid-json" | "html" | "empty" | "no-data" | "huge";

export interface EarlyAnswer {
  status: number;
  /** Default by status: 400 validation_error, 413 request_too_large, ... (EARLY_CODES). */
  code?: string;
  message?: string;
  /** Body bytes to read before answering; default 0. */
  afterBytes?: number;
  count?: number;
  /** Answer with an nginx-style HTML page and none of the service's headers, as a proxy would. */
  html?: boolean;
}

export interface Plans {
  error: { status: number; code: string; message: string };
  malformed: { kind: MalformedKind; status: number; bytes: number };
  "drop-before": true;
  "drop-after": true;
  drip: { chunkDelayMs: number; chunks: number };
  headers: Record<string, string>;
  /** `message` undefined: a default naming the status and the bytes read, made when answering. */
  early: { status: number; code: string; message: string | undefined; afterBytes: number; html: boolean };
  reset: number;
  patch: { patch: Record<string, unknown>; remove: readonly string[] };
}

/** The service's own code where spec section 7 has the status, otherwise what a proxy's status means. */
const EARLY_CODES: Readonly<Record<number, string>> = {
  400: "validation_error",
  401: "unauthorized",
  403: "forbidden",
  408: "request_timeout",
  411: "length_required",
  413: "request_too_large",
  429: "rate_limit_exceeded",
  500: "internal_error",
  502: "upstream_error",
  503: "service_unavailable",
  504: "gateway_timeout",
};

/** The part of the store the task knobs reach. */
interface TaskFaults {
  providerDown: boolean;
  failTask(videoId: string, message: string): boolean;
  failNextTask(message: string): void;
  clearFaults(): void;
}

const FAILED_TASK = "The provider could not render this video (sandbox fault)";

/** Each knob but latency arms the next `count` (default 1) requests of a route, in order; "*" any route. */
export class Faults {
  private readonly latencies = new Map<FaultRoute, number>();
  private readonly armed: { knob: keyof Plans; route: FaultRoute; remaining: number; value: unknown }[] = [];

  constructor(private readonly tasks: TaskFaults) {}

  /** Delays the answer's headers by `ms` for every request of the route until set to 0. */
  latency(route: FaultRoute, ms: number): void {
    if (!(ms >= 0) || !Number.isFinite(ms)) throw new RangeError("latency must be a finite number >= 0");
    if (ms === 0) this.latencies.delete(route);
    else this.latencies.set(route, ms);
  }

  /** Answers this envelope error; the request is not processed. */
  failNext(
    route: FaultRoute,
    error: { status: number; code: string; message?: string; count?: number },
  ): void {
    const { status, code, message = `Forced ${code} (sandbox fault)` } = error;
    this.arm("error", route, error.count, { status: checkStatus(status, 100), code, message });
  }

  /** Answers an unusable body (status 200 unless given); the request is not processed. */
  malformedNext(
    route: FaultRoute,
    kind: MalformedKind,
    options: { status?: number; count?: number; bytes?: number } = {},
  ): void {
    const { status = 200, bytes = 16 * 1024 * 1024 } = options;
    this.arm("malformed", route, options.count, { kind, status: checkStatus(status, 100), bytes });
  }

  /** Drops the connection without an answer, "before" processing or "after" it (task created, charged). */
  dropNext(route: FaultRoute, options: { phase: "before" | "after"; count?: number }): void {
    this.arm(`drop-${options.phase}`, route, options.count, true);
  }

  /** Headers go out at once, then the body trickles in `chunks` pieces `chunkDelayMs` apart. */
  dripBody(route: FaultRoute, { chunkDelayMs, chunks, count }: Plans["drip"] & { count?: number }): void {
    if (!Number.isInteger(chunks) || chunks < 1) throw new RangeError("chunks must be an integer >= 1");
    this.arm("drip", route, count, { chunkDelayMs, chunks });
  }

  /** Adds or overrides headers of the answer; an empty value removes the header. */
  headersNext(route: FaultRoute, headers: Record<string, string>, count?: number): void {
    this.arm("headers", route, count, { ...headers });
  }

  /**
   * Reads `afterBytes` of the body, answers at once and closes without lingering, like a proxy refusing an
   * upload. 2xx: the route's success answer for ids never stored (body-less routes run their handler).
   */
  earlyAnswer(route: FaultRoute, answer: EarlyAnswer): void {
    // 1xx is not an answer, and a client cannot be cut off with one.
    const status = checkStatus(answer.status, 200);
    const code = answer.code ?? EARLY_CODES[status] ?? (status < 500 ? "request_rejected" : "internal_error");
    const { message, html = false } = answer;
    const afterBytes = checkBytes("afterBytes", answer.afterBytes ?? 0);
    this.arm("early", route, answer.count, { status, code, message, afterBytes, html });
  }

  /** Reads `bytes` of the body, then resets the TCP connection (no answer). */
  resetAfterBytes(route: FaultRoute, bytes: number, count?: number): void {
    this.arm("reset", route, count, checkBytes("bytes", bytes));
  }

  /** Shallow-merges `patch` into the next success answers with an object `data` (others leave it armed). */
  patchNext(
    route: FaultRoute,
    patch: Record<string, unknown>,
    options: { remove?: string[]; count?: number } = {},
  ): void {
    this.arm("patch", route, options.count, { patch: { ...patch }, remove: [...(options.remove ?? [])] });
  }

  /** While on, status calls of tasks that are not final answer 502 upstream_error and no task progresses. */
  providerOutage(on: boolean): void {
    this.tasks.providerDown = on;
  }

  /** Ends a running task as `failed` (credits refunded). Returns false when the task is unknown or final. */
  failTask(videoId: string, message = FAILED_TASK): boolean {
    return this.tasks.failTask(videoId, message);
  }

  /** The next video task started will end `failed` instead of `completed`. */
  failNextTask(message = FAILED_TASK): void {
    this.tasks.failNextTask(message);
  }

  clear(): void {
    this.latencies.clear();
    this.armed.length = 0;
    this.tasks.clearFaults();
  }

  latencyFor(route: SandboxRoute): number {
    return this.latencies.get(route) ?? this.latencies.get("*") ?? 0;
  }

  /** Uses up one request of the first entry of `knob` armed for `route`, and returns its plan. */
  take<K extends keyof Plans>(knob: K, route: SandboxRoute): Plans[K] | undefined {
    const index = this.armed.findIndex(
      (entry) => entry.knob === knob && (entry.route === route || entry.route === "*"),
    );
    const entry = this.armed[index];
    if (entry && --entry.remaining === 0) this.armed.splice(index, 1);
    return entry?.value as Plans[K] | undefined;
  }

  private arm<K extends keyof Plans>(knob: K, route: FaultRoute, count = 1, value: Plans[K]): void {
    if (!Number.isInteger(count) || count < 1) throw new RangeError("count must be an integer >= 1");
    this.armed.push({ knob, route, remaining: count, value });
  }
}

function checkStatus(status: number, min: number): number {
  if (!Number.isInteger(status) || status < min || status > 599)
    throw new RangeError(`invalid HTTP status ${status}`);
  return status;
}

function checkBytes(name: string, bytes: number): number {
  if (!Number.isSafeInteger(bytes) || bytes < 0) throw new RangeError(`${name} must be an integer >= 0`);
  return bytes;
}
