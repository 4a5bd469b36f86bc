/** The public surface of the sandbox: options, handle, fault knobs and the request log. */

export interface SandboxAccount {
  /** The Bearer token of the account. */
  key: string;
  name: string;
  credits: number;
  paidAccess: boolean;
  /** Plan name, or null when the account has no subscription. */
  subscription: string | null;
}

/** Shapes the spec leaves open; tests switch them at runtime through `handle.shapes`. */
export interface SandboxShapes {
  /** Field of the upload answer that carries the hosted URL. */
  uploadUrlField: string;
  /** "array": GET /videos answers `data` as a bare array of items, without totals. */
  listShape: "object" | "array";
  /** Status values a running task walks through, in order, before `completed` or `failed`. */
  inProgressStatuses: string[];
  /** How an unknown video_id is answered: 404 not_found or 400 validation_error. */
  notFoundStatus: 404 | 400;
  /** "task": POST /generate-image answers `{ image_id, status: "processing" }` without URLs. */
  imageShape: "urls" | "task";
  /**
   * "nested": every success answer's `data` nests its fields (`task.state`, `result.output[0].url`, ...) in
   * the forms documented in routes.ts, so a client's "find it at any depth" code meets every endpoint.
   */
  nesting: "flat" | "nested";
}

export interface SandboxTimings {
  /** Time a task spends in its first in-progress status. */
  queuedMs: number;
  /** Time from the end of the queue to the final status; the other in-progress statuses share it evenly. */
  processingMs: number;
}

export interface SandboxRateLimit {
  limit: number;
  windowMs: number;
}

export type IdKind = "video" | "image" | "upload" | "request";

export interface SandboxOptions {
  /** Default "127.0.0.1". */
  host?: string;
  /** Default 0: an ephemeral port. */
  port?: number;
  /** Default: the paid, free and poor accounts of DEFAULT_ACCOUNTS. */
  accounts?: SandboxAccount[];
  /** Default 60 requests per 60,000 ms, a fixed window per key. */
  rateLimit?: SandboxRateLimit;
  /** Default 2000 / 10000 ms, suited to a demo; tests pass small values or drive the clock. */
  timings?: SandboxTimings;
  /** Epoch milliseconds. Task states are derived from it at each call, so tests need no timers. */
  clock?: () => number;
  idGenerator?: (kind: IdKind) => string;
  shapes?: Partial<SandboxShapes>;
}

/** Names the fault knobs use; "*" matches every route. */
export type SandboxRoute =
  "generate" | "generate-image" | "videos" | "video-status" | "upload" | "credits" | "media";
export type FaultRoute = SandboxRoute | "*";

export interface RequestRecord {
  method: string;
  /** Path without the query string, as received. */
  path: string;
  query: Record<string, string>;
  /** "unknown" for paths that match no route. */
  route: SandboxRoute | "unknown";
  /** The Bearer token as presented, valid or not; undefined when there was none. */
  key: string | undefined;
  /** HTTP status of the answer; 0 when the connection was dropped without one (or is still open). */
  status: number;
  /** Clock time (epoch ms) at which the request was received. */
  at: number;
  /** The X-Request-Id of the answer (API routes only). */
  requestId: string | undefined;
  /**
   * Request body bytes the sandbox had read when an `earlyAnswer` or `resetAfterBytes` fault answered or
   * reset the connection (reads come in chunks, so it can pass the armed count by up to one chunk). Absent
   * for every other request.
   */
  bodyBytes?: number;
}

export type MalformedKind = "invalid-json" | "html" | "empty" | "no-data" | "huge";

/** See `FaultControl.earlyAnswer`. */
export interface EarlyAnswer {
  status: number;
  /** Default by status: EARLY_ANSWER_CODES in faults.ts (400 validation_error, 413 request_too_large...). */
  code?: string;
  message?: string;
  /** Body bytes to read before answering; default 0 (answer before reading any). */
  afterBytes?: number;
  count?: number;
  /** Answer with an nginx-style HTML page and none of the service's headers, as a proxy would. */
  html?: boolean;
}

export interface FaultControl {
  /** Delays the answer's headers by `ms` for every request of the route until set to 0. */
  latency(route: FaultRoute, ms: number): void;
  /** The next `count` (default 1) requests get this envelope error and are not processed. */
  failNext(
    route: FaultRoute,
    error: { status: number; code: string; message?: string; count?: number },
  ): void;
  /** The next `count` requests get an unusable body (status 200 unless given) and are not processed. */
  malformedNext(
    route: FaultRoute,
    kind: MalformedKind,
    options?: { status?: number; count?: number; bytes?: number },
  ): void;
  /**
   * The next `count` requests lose their connection without an answer. "before": nothing was processed;
   * "after": the request was processed (task created, credits charged) and the answer was lost.
   */
  dropNext(route: FaultRoute, options: { phase: "before" | "after"; count?: number }): void;
  /** Headers go out at once, then the body trickles in `chunks` pieces `chunkDelayMs` apart. */
  dripBody(route: FaultRoute, options: { chunkDelayMs: number; chunks: number; count?: number }): void;
  /** Adds or overrides headers of the next `count` answers; an empty value removes the header. */
  headersNext(route: FaultRoute, headers: Record<string, string>, count?: number): void;
  /**
   * For the next `count` requests: read `afterBytes` of the body, answer at once and close the connection
   * without the lingering close (like a proxy refusing a large upload: the client, usually still sending,
   * sees its write fail or a reset). Non-2xx: an envelope error (or HTML page with `html`); 2xx: a success
   * envelope as the route would answer, for ids never stored (body-less routes run their handler). Nothing
   * is stored, nothing charged.
   */
  earlyAnswer(route: FaultRoute, answer: EarlyAnswer): void;
  /** For the next `count` requests: read `bytes` of the body, then reset the TCP connection (no answer). */
  resetAfterBytes(route: FaultRoute, bytes: number, count?: number): void;
  /**
   * The next `count` success answers whose `data` is an object get `patch` shallow-merged into it and the
   * `remove` keys deleted (an array `data` is left alone and does not use up the patch). Only the answer
   * changes, never the store.
   */
  patchNext(
    route: FaultRoute,
    patch: Record<string, unknown>,
    options?: { remove?: string[]; count?: number },
  ): void;
  /** While on, status calls of tasks that are not final answer 502 upstream_error and no task progresses. */
  providerOutage(on: boolean): void;
  /** Ends a running task as `failed` (credits refunded). Returns false when the task is unknown or final. */
  failTask(videoId: string, message?: string): boolean;
  /** The next video task started will end `failed` instead of `completed`. */
  failNextTask(message?: string): void;
  /** Turns every knob off. */
  clear(): void;
}

/** A live account: reading `credits` settles finished tasks first; assigning it sets the balance. */
export interface SandboxAccountView {
  readonly key: string;
  readonly name: string;
  credits: number;
  paidAccess: boolean;
  subscription: string | null;
}

export interface SandboxHandle {
  /** "http://HOST:PORT/api/v1" */
  baseUrl: string;
  /** "http://HOST:PORT"; media is served under `${origin}/media/`. */
  origin: string;
  keys: { paid: string; free: string; poor: string };
  accounts: readonly SandboxAccountView[];
  faults: FaultControl;
  /** Mutable: changes apply to the next answer. */
  shapes: SandboxShapes;
  /** Every request received, API and media alike, in arrival order. */
  requests: RequestRecord[];
  clearRequests(): void;
  /** Stops listening and closes every open connection, keep-alive ones included. */
  close(): Promise<void>;
}
