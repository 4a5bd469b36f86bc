/**
 * The generation service's REST interface (spec/generation-service-rest.md) on loopback, for tests,
 * benchmarks and trying the tools without an account; it shares service facts with the client via models.ts.
 */
import { randomBytes } from "node:crypto";
import { once, setMaxListeners } from "node:events";
import type { AddressInfo } from "node:net";
import { DEFAULT_RATE_LIMIT_PER_MINUTE } from "../models.js";
import { DEFAULT_ACCOUNTS, RateLimiter, createAccounts } from "./auth.js";
import type { SandboxContext } from "./context.js";
import { Faults } from "./faults.js";
import { createSandboxServer } from "./server.js";
import { ImageCache, Store } from "./store.js";
import type { IdKind, SandboxHandle, SandboxOptions, SandboxShapes, SandboxTimings } from "./types.js";

export type * from "./types.js";
export { DEFAULT_ACCOUNTS } from "./auth.js";
export { MAX_JSON_BODY_BYTES } from "./body.js";

export const DEFAULT_SHAPES: Readonly<SandboxShapes> = {
  uploadUrlField: "url",
  listShape: "object",
  inProgressStatuses: ["queued", "processing"],
  notFoundStatus: 404,
  imageShape: "urls",
  nesting: "flat",
};

/** Long enough to watch a demo wait and report progress, short enough not to bore. */
export const DEMO_TIMINGS: Readonly<SandboxTimings> = { queuedMs: 2000, processingMs: 10_000 };

const PREFIX = { video: "vid", image: "img", upload: "upl", request: "req" } as const;

const randomId = (kind: IdKind): string => `${PREFIX[kind]}_${randomBytes(9).toString("base64url")}`;

/** Deterministic ids for tests: vid_1, vid_2, img_1 ... */
export function sequentialIdGenerator(): (kind: IdKind) => string {
  const counters = { video: 0, image: 0, upload: 0, request: 0 };
  return (kind) => `${PREFIX[kind]}_${++counters[kind]}`;
}

export async function startSandbox(options: SandboxOptions = {}): Promise<SandboxHandle> {
  const clock = options.clock ?? Date.now;
  const timings = { ...DEMO_TIMINGS, ...options.timings };
  if (!(timings.queuedMs >= 0) || !(timings.processingMs >= 0)) throw new RangeError("timings must be >= 0");
  const shapes: SandboxShapes = { ...DEFAULT_SHAPES, ...options.shapes };
  shapes.inProgressStatuses = [...shapes.inProgressStatuses];
  const accounts = createAccounts(options.accounts ?? DEFAULT_ACCOUNTS);
  const store = new Store(clock, timings, () => shapes.inProgressStatuses);
  const shutdown = new AbortController();
  // Every request waiting out a latency or drip fault listens to it.
  setMaxListeners(0, shutdown.signal);
  const rateLimit = options.rateLimit ?? { limit: DEFAULT_RATE_LIMIT_PER_MINUTE, windowMs: 60_000 };
  const ctx: SandboxContext = {
    clock,
    newId: options.idGenerator ?? randomId,
    accounts,
    limiter: new RateLimiter(rateLimit, clock),
    store,
    faults: new Faults(store),
    shapes,
    images: new ImageCache(),
    origin: "",
    requests: [],
    shutdown: shutdown.signal,
  };
  const server = createSandboxServer(ctx);
  // once() rejects with the server's "error" if listening fails.
  await once(server.listen(options.port ?? 0, options.host ?? "127.0.0.1"), "listening");
  const { address, family, port } = server.address() as AddressInfo;
  ctx.origin = `http://${family === "IPv6" ? `[${address}]` : address}:${port}`;
  const list = [...accounts.values()];
  // Keys by the default names, else the first three accounts in order.
  const keyOf = (name: string, index: number): string =>
    (list.find((account) => account.name === name) ?? list[index] ?? list[0])?.key ?? "";
  let closing: Promise<void> | undefined;
  return {
    baseUrl: `${ctx.origin}/api/v1`,
    origin: ctx.origin,
    keys: { paid: keyOf("paid", 0), free: keyOf("free", 1), poor: keyOf("poor", 2) },
    accounts: list.map(
      (account) =>
        new Proxy(account, {
          get: (target, name) => {
            if (name === "credits") store.settleOwner(target);
            return Reflect.get(target, name);
          },
        }),
    ),
    faults: ctx.faults,
    shapes,
    requests: ctx.requests,
    clearRequests: () => void ctx.requests.splice(0),
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        shutdown.abort();
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}
