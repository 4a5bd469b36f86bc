import type { Account, RateLimiter } from "./auth.js";
import type { Faults } from "./faults.js";
import type { ImageCache, Store } from "./store.js";
import type { IdKind, RequestRecord, SandboxShapes } from "./types.js";

/** Everything a handler may touch; one per running sandbox. */
export interface SandboxContext {
  clock: () => number;
  newId: (kind: IdKind) => string;
  accounts: ReadonlyMap<string, Account>;
  limiter: RateLimiter;
  store: Store;
  faults: Faults;
  shapes: SandboxShapes;
  images: ImageCache;
  /** "http://host:port", known once the server listens; media URLs are built from it. */
  origin: string;
  requests: RequestRecord[];
  /** Aborted by close(): waits in progress end at once. */
  shutdown: AbortSignal;
}
