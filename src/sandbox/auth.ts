/** Who may call: accounts and their credits, the Bearer header, and the per-key rate limit (spec 5 and 8). */
import type { SandboxAccount, SandboxRateLimit } from "./types.js";

/** Demo accounts: one of each standing the tools must handle. The keys are printed, never built into the client. */
export const DEFAULT_ACCOUNTS: readonly SandboxAccount[] = [
  { key: "sk-sandbox-paid", name: "paid", credits: 10_000, paidAccess: true, subscription: "pro" },
  { key: "sk-sandbox-free", name: "free", credits: 100, paidAccess: false, subscription: null },
  { key: "sk-sandbox-poor", name: "poor", credits: 3, paidAccess: true, subscription: "pro" },
];

/** Balances in hundredths of a credit: 7.5 credits/s times fractional durations must add up without drift. */
export class Account {
  readonly key: string;
  readonly name: string;
  paidAccess: boolean;
  subscription: string | null;
  private hundredths: number;

  constructor(init: SandboxAccount) {
    ({ key: this.key, name: this.name, paidAccess: this.paidAccess, subscription: this.subscription } = init);
    this.hundredths = toHundredths(init.credits);
  }

  get credits(): number {
    return this.hundredths / 100;
  }

  set credits(value: number) {
    this.hundredths = toHundredths(value);
  }

  tryCharge(amount: number): boolean {
    const cost = toHundredths(amount);
    if (cost > this.hundredths) return false;
    this.hundredths -= cost;
    return true;
  }

  refund(amount: number): void {
    this.hundredths += toHundredths(amount);
  }
}

function toHundredths(credits: number): number {
  if (!Number.isFinite(credits) || credits < 0)
    throw new RangeError(`credits must be a finite number >= 0, got ${credits}`);
  return Math.round(credits * 100);
}

export function createAccounts(inits: readonly SandboxAccount[]): Map<string, Account> {
  if (inits.length === 0) throw new RangeError("the sandbox needs at least one account");
  const byKey = new Map<string, Account>();
  for (const init of inits) {
    if (init.key === "" || /\s/.test(init.key))
      throw new Error(`account "${init.name}": key must be non-empty without spaces`);
    if (byKey.has(init.key)) throw new Error(`account "${init.name}": duplicate key`);
    byKey.set(init.key, new Account(init));
  }
  return byKey;
}

type BearerResult =
  { kind: "missing" } | { kind: "malformed"; token: string | undefined } | { kind: "token"; token: string };

/** RFC 7235: the scheme is case-insensitive; a token68 credential follows one or more spaces. */
export function parseBearer(header: string | undefined): BearerResult {
  if (header === undefined || header.trim() === "") return { kind: "missing" };
  const match = /^([A-Za-z]+) +(\S+) *$/.exec(header);
  if (match?.[1]?.toLowerCase() === "bearer" && match[2] !== undefined)
    return { kind: "token", token: match[2] };
  return { kind: "malformed", token: match?.[2] };
}

export const UNAUTHORIZED: Readonly<Record<BearerResult["kind"], string>> = {
  missing: "Missing API key: send the header 'Authorization: Bearer <API key>'",
  malformed: "Malformed Authorization header: expected 'Bearer <API key>'",
  token: "Invalid API key",
};

export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Unix seconds at which the window ends (rounded up, so a client waiting until then is never early). */
  resetS: number;
  /** Whole seconds until the reset, at least 1: the Retry-After of a 429. */
  retryAfterS: number;
}

/** Fixed windows opened by a bucket's first counted request, like most API gateways; stale ones are swept. */
export class RateLimiter {
  private readonly windows = new Map<string, { startMs: number; used: number }>();
  private lastSweepMs = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly config: SandboxRateLimit,
    private readonly clock: () => number,
  ) {
    if (!Number.isInteger(config.limit) || config.limit < 1)
      throw new RangeError("rateLimit.limit must be an integer >= 1");
    if (!(config.windowMs > 0)) throw new RangeError("rateLimit.windowMs must be > 0");
  }

  consume(bucket: string): RateLimitState & { allowed: boolean } {
    return this.state(bucket, true);
  }

  /** The state without counting: for answers that never reach the limiter (404, 405). */
  peek(bucket: string): RateLimitState {
    return this.state(bucket, false);
  }

  private state(bucket: string, count: boolean): RateLimitState & { allowed: boolean } {
    const now = this.clock();
    const { limit, windowMs } = this.config;
    if (count && now - this.lastSweepMs >= windowMs) {
      this.lastSweepMs = now;
      for (const [key, { startMs }] of this.windows) if (now >= startMs + windowMs) this.windows.delete(key);
    }
    const existing = this.windows.get(bucket);
    const window = existing && now < existing.startMs + windowMs ? existing : { startMs: now, used: 0 };
    const allowed = window.used < limit;
    if (count) this.windows.set(bucket, window);
    if (count && allowed) window.used += 1;
    const endMs = window.startMs + windowMs;
    return {
      allowed,
      limit,
      remaining: Math.max(0, limit - window.used),
      resetS: Math.ceil(endMs / 1000),
      retryAfterS: Math.max(1, Math.ceil((endMs - now) / 1000)),
    };
  }
}
