import type { FaultControl, FaultRoute, MalformedKind, SandboxRoute } from "./types.js";
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
    for (const list of [this.errors, this.malformed, this.drops, this.drips, this.headers]) list.length = 0;
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

function checkStatus(status: number): void {
  if (!Number.isInteger(status) || status < 100 || status > 599)
    throw new RangeError(`invalid HTTP status ${status}`);
}
