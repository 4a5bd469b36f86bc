import type { EarlyAnswer, FaultControl, FaultRoute, MalformedKind, SandboxRoute } from "./types.js";
import type { Store } from "./store.js";

export interface ForcedError {
  status: number;
  code: string;
  message: string;
}

export interface Malformed {
  kind: MalformedKind;
  status: number;
  bytes: number;
}

export interface Drip {
  chunkDelayMs: number;
  chunks: number;
}

export interface EarlyAnswerPlan {
  status: number;
  /** Unused by 2xx and HTML answers. */
  code: string;
  /** Undefined: a default naming the status and the bytes read, made when answering. */
  message: string | undefined;
  afterBytes: number;
  html: boolean;
}

export interface DataPatch {
  patch: Record<string, unknown>;
  remove: readonly string[];
}

/**
 * Codes of early answers when none is given: the service's own where the spec's table has the status,
 * otherwise what a proxy's status means. Any other status gets request_rejected (< 500) or internal_error.
 */
export const EARLY_ANSWER_CODES: Readonly<Record<number, string>> = {
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

interface Armed<T> {
  route: FaultRoute;
  remaining: number;
  value: T;
}

/** The "huge" body's default size: large enough to trip any sane client cap. */
export const DEFAULT_HUGE_BYTES = 16 * 1024 * 1024;

/**
 * Each knob is a FIFO of armed entries consumed one request at a time, so several can be queued for one
 * route and "*" entries apply to any route. Nothing is armed unless a test or caller asks for it.
 */
export class Faults implements FaultControl {
  private readonly latencies = new Map<FaultRoute, number>();
  private readonly errors: Armed<ForcedError>[] = [];
  private readonly malformed: Armed<Malformed>[] = [];
  private readonly drops: Armed<"before" | "after">[] = [];
  private readonly drips: Armed<Drip>[] = [];
  private readonly headers: Armed<Record<string, string>>[] = [];
  private readonly earlyAnswers: Armed<EarlyAnswerPlan>[] = [];
  private readonly resets: Armed<number>[] = [];
  private readonly patches: Armed<DataPatch>[] = [];

  constructor(private readonly store: Store) {}

  latency(route: FaultRoute, ms: number): void {
    if (!(ms >= 0) || !Number.isFinite(ms)) throw new RangeError("latency must be a finite number >= 0");
    if (ms === 0) this.latencies.delete(route);
    else this.latencies.set(route, ms);
  }

  failNext(
    route: FaultRoute,
    error: { status: number; code: string; message?: string; count?: number },
  ): void {
    checkStatus(error.status);
    this.errors.push(
      armed(route, error.count, {
        status: error.status,
        code: error.code,
        message: error.message ?? `Forced ${error.code} (sandbox fault)`,
      }),
    );
  }

  malformedNext(
    route: FaultRoute,
    kind: MalformedKind,
    options: { status?: number; count?: number; bytes?: number } = {},
  ): void {
    const status = options.status ?? 200;
    checkStatus(status);
    this.malformed.push(
      armed(route, options.count, { kind, status, bytes: options.bytes ?? DEFAULT_HUGE_BYTES }),
    );
  }

  dropNext(route: FaultRoute, options: { phase: "before" | "after"; count?: number }): void {
    this.drops.push(armed(route, options.count, options.phase));
  }

  dripBody(route: FaultRoute, options: { chunkDelayMs: number; chunks: number; count?: number }): void {
    if (!Number.isInteger(options.chunks) || options.chunks < 1)
      throw new RangeError("chunks must be an integer >= 1");
    this.drips.push(
      armed(route, options.count, { chunkDelayMs: options.chunkDelayMs, chunks: options.chunks }),
    );
  }

  headersNext(route: FaultRoute, headers: Record<string, string>, count?: number): void {
    this.headers.push(armed(route, count, { ...headers }));
  }

  earlyAnswer(route: FaultRoute, answer: EarlyAnswer): void {
    // 1xx is not an answer, and a client cannot be cut off with one.
    if (!Number.isInteger(answer.status) || answer.status < 200 || answer.status > 599)
      throw new RangeError(`invalid HTTP status ${answer.status} for an early answer (200..599)`);
    const afterBytes = answer.afterBytes ?? 0;
    checkByteCount("afterBytes", afterBytes);
    this.earlyAnswers.push(
      armed(route, answer.count, {
        status: answer.status,
        code:
          answer.code ??
          EARLY_ANSWER_CODES[answer.status] ??
          (answer.status < 500 ? "request_rejected" : "internal_error"),
        message: answer.message,
        afterBytes,
        html: answer.html ?? false,
      }),
    );
  }

  resetAfterBytes(route: FaultRoute, bytes: number, count?: number): void {
    checkByteCount("bytes", bytes);
    this.resets.push(armed(route, count, bytes));
  }

  patchNext(
    route: FaultRoute,
    patch: Record<string, unknown>,
    options: { remove?: string[]; count?: number } = {},
  ): void {
    this.patches.push(
      armed(route, options.count, { patch: { ...patch }, remove: [...(options.remove ?? [])] }),
    );
  }

  providerOutage(on: boolean): void {
    this.store.providerDown = on;
  }

  failTask(videoId: string, message = "The provider could not render this video (sandbox fault)"): boolean {
    return this.store.failTask(videoId, message);
  }

  failNextTask(message = "The provider could not render this video (sandbox fault)"): void {
    this.store.failNextTask(message);
  }

  clear(): void {
    this.latencies.clear();
    for (const list of [
      this.errors,
      this.malformed,
      this.drops,
      this.drips,
      this.headers,
      this.earlyAnswers,
      this.resets,
      this.patches,
    ])
      list.length = 0;
    this.store.clearFaults();
  }

  latencyFor(route: SandboxRoute): number {
    return this.latencies.get(route) ?? this.latencies.get("*") ?? 0;
  }

  takeDrop(route: SandboxRoute, phase: "before" | "after"): boolean {
    return take(this.drops, route, (value) => value === phase) !== undefined;
  }

  takeError(route: SandboxRoute): ForcedError | undefined {
    return take(this.errors, route);
  }

  takeMalformed(route: SandboxRoute): Malformed | undefined {
    return take(this.malformed, route);
  }

  takeDrip(route: SandboxRoute): Drip | undefined {
    return take(this.drips, route);
  }

  takeHeaders(route: SandboxRoute): Record<string, string> | undefined {
    return take(this.headers, route);
  }

  takeEarlyAnswer(route: SandboxRoute): EarlyAnswerPlan | undefined {
    return take(this.earlyAnswers, route);
  }

  /** The number of body bytes to read before resetting, or undefined when no reset is armed. */
  takeReset(route: SandboxRoute): number | undefined {
    return take(this.resets, route);
  }

  /** Called only for a success answer whose data is an object, so other answers leave the patch armed. */
  takePatch(route: SandboxRoute): DataPatch | undefined {
    return take(this.patches, route);
  }
}

function armed<T>(route: FaultRoute, count: number | undefined, value: T): Armed<T> {
  const remaining = count ?? 1;
  if (!Number.isInteger(remaining) || remaining < 1) throw new RangeError("count must be an integer >= 1");
  return { route, remaining, value };
}

function take<T>(
  list: Armed<T>[],
  route: SandboxRoute,
  accept: (value: T) => boolean = () => true,
): T | undefined {
  const index = list.findIndex(
    (entry) => (entry.route === route || entry.route === "*") && accept(entry.value),
  );
  const entry = list[index];
  if (!entry) return undefined;
  entry.remaining -= 1;
  if (entry.remaining === 0) list.splice(index, 1);
  return entry.value;
}

function checkByteCount(name: string, bytes: number): void {
  if (!Number.isSafeInteger(bytes) || bytes < 0) throw new RangeError(`${name} must be an integer >= 0`);
}

function checkStatus(status: number): void {
  if (!Number.isInteger(status) || status < 100 || status > 599)
    throw new RangeError(`invalid HTTP status ${status}`);
}
