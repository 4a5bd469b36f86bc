import type { AccountRegistry } from "./auth.js";
import type { Faults } from "./faults.js";
import type { ImageCache } from "./media/images.js";
import type { RateLimiter } from "./rate-limit.js";
import type { Store } from "./store.js";
import type { IdKind, SandboxShapes } from "./types.js";

/** Everything a handler may touch; one per running sandbox. */
export interface SandboxContext {
  clock: () => number;
  newId: (kind: IdKind) => string;
  accounts: AccountRegistry;
  limiter: RateLimiter;
  store: Store;
  faults: Faults;
  shapes: SandboxShapes;
  images: ImageCache;
  /** "http://host:port", known once the server listens; media URLs are built from it. */
  origin: string;
}
