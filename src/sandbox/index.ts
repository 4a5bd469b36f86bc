/**
 * The sandbox: a faithful local implementation of the generation service's REST interface
 * (spec/generation-service-rest.md), for tests, benchmarks and users trying the tools without an account.
 * It is the other end of the wire: it shares service facts with the client through src/models.ts only.
 */
import type { AddressInfo } from "node:net";
import { AccountRegistry, DEFAULT_ACCOUNTS } from "./auth.js";
import type { Account } from "./auth.js";
import type { SandboxContext } from "./context.js";
import { Faults } from "./faults.js";
import { defaultIdGenerator } from "./ids.js";
import { ImageCache } from "./media/images.js";
import { RateLimiter } from "./rate-limit.js";
import { createSandboxServer } from "./server.js";
import { Store } from "./store.js";
import { DEFAULT_RATE_LIMIT_PER_MINUTE } from "../models.js";
import type {
  RequestRecord,
  SandboxAccountView,
  SandboxHandle,
  SandboxOptions,
  SandboxShapes,
  SandboxTimings,
} from "./types.js";

export type * from "./types.js";
export { DEFAULT_ACCOUNTS } from "./auth.js";
export { sequentialIdGenerator } from "./ids.js";
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

export async function startSandbox(options: SandboxOptions = {}): Promise<SandboxHandle> {
  const clock = options.clock ?? Date.now;
  const timings = { ...DEMO_TIMINGS, ...options.timings };
  if (!(timings.queuedMs >= 0) || !(timings.processingMs >= 0)) throw new RangeError("timings must be >= 0");
  const shapes: SandboxShapes = { ...DEFAULT_SHAPES, ...options.shapes };
  shapes.inProgressStatuses = [...shapes.inProgressStatuses];
  const accounts = new AccountRegistry(options.accounts ?? DEFAULT_ACCOUNTS);
  if (accounts.list.length === 0) throw new RangeError("the sandbox needs at least one account");
  const store = new Store(clock, timings, () => shapes.inProgressStatuses);
  const ctx: SandboxContext = {
    clock,
    newId: options.idGenerator ?? defaultIdGenerator,
    accounts,
    limiter: new RateLimiter(
      options.rateLimit ?? { limit: DEFAULT_RATE_LIMIT_PER_MINUTE, windowMs: 60_000 },
      clock,
    ),
    store,
    faults: new Faults(store),
    shapes,
    images: new ImageCache(),
    origin: "",
  };
  const requests: RequestRecord[] = [];
  const shutdown = new AbortController();
  const server = createSandboxServer(ctx, requests, shutdown.signal);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  ctx.origin = `http://${host}:${address.port}`;

  let closing: Promise<void> | undefined;
  return {
    baseUrl: `${ctx.origin}/api/v1`,
    origin: ctx.origin,
    keys: pickKeys(accounts.list),
    accounts: accounts.list.map((account) => accountView(account, store)),
    faults: ctx.faults,
    shapes,
    requests,
    clearRequests: () => {
      requests.length = 0;
    },
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        shutdown.abort();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

/** Keys by the default names, else the first three accounts in order. */
function pickKeys(list: readonly Account[]): SandboxHandle["keys"] {
  const byName = (name: string, index: number): string =>
    list.find((account) => account.name === name)?.key ?? list[index]?.key ?? list[0]?.key ?? "";
  return { paid: byName("paid", 0), free: byName("free", 1), poor: byName("poor", 2) };
}

function accountView(account: Account, store: Store): SandboxAccountView {
  return {
    key: account.key,
    name: account.name,
    get credits() {
      store.settleOwner(account);
      return account.credits;
    },
    set credits(value: number) {
      account.credits = value;
    },
    get paidAccess() {
      return account.paidAccess;
    },
    set paidAccess(value: boolean) {
      account.paidAccess = value;
    },
    get subscription() {
      return account.subscription;
    },
    set subscription(value: string | null) {
      account.subscription = value;
    },
  };
}
