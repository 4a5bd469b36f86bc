/** The public surface of the sandbox: options, handle, fault knobs and the request log. */
import type { Faults, SandboxRoute } from "./faults.js";

export type { EarlyAnswer, FaultRoute, MalformedKind, SandboxRoute } from "./faults.js";

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
  /** "nested": every success answer's `data` nests its fields (`task.status`, `result.video_url`, ...). */
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
  /** Body bytes read before an `earlyAnswer` or `resetAfterBytes` fault (may pass the count by a chunk). */
  bodyBytes?: number;
}

/** A live account: reading `credits` settles finished tasks first, so refunds show; assigning sets it. */
export type SandboxAccountView = Readonly<Pick<SandboxAccount, "key" | "name">> &
  Omit<SandboxAccount, "key" | "name">;

export interface SandboxHandle {
  /** "http://HOST:PORT/api/v1" */
  baseUrl: string;
  /** "http://HOST:PORT"; media is served under `${origin}/media/`. */
  origin: string;
  keys: { paid: string; free: string; poor: string };
  accounts: readonly SandboxAccountView[];
  /** The knobs; `take` and `latencyFor` are the server's side of them. */
  faults: Omit<Faults, "take" | "latencyFor">;
  /** Mutable: changes apply to the next answer. */
  shapes: SandboxShapes;
  /** Every request received, API and media alike, in arrival order. */
  requests: RequestRecord[];
  clearRequests(): void;
  /** Stops listening and closes every open connection, keep-alive ones included. */
  close(): Promise<void>;
}
