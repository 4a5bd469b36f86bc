import type { SandboxAccount } from "./types.js";

/** Demo accounts: one of each standing the tools must handle. The keys are printed, never built into the client. */
export const DEFAULT_ACCOUNTS: readonly SandboxAccount[] = [
  { key: "sk-sandbox-paid", name: "paid", credits: 10_000, paidAccess: true, subscription: "pro" },
  { key: "sk-sandbox-free", name: "free", credits: 100, paidAccess: false, subscription: null },
  { key: "sk-sandbox-poor", name: "poor", credits: 3, paidAccess: true, subscription: "pro" },
];

/**
 * Balances are kept in hundredths of a credit: 7.5 credits/s times fractional durations must add and refund
 * without drifting (0.1 + 0.2 style), and the service never sells below zero.
 */
export class Account {
  readonly key: string;
  readonly name: string;
  paidAccess: boolean;
  subscription: string | null;
  private hundredths: number;

  constructor(init: SandboxAccount) {
    this.key = init.key;
    this.name = init.name;
    this.paidAccess = init.paidAccess;
    this.subscription = init.subscription;
    this.hundredths = toHundredths(init.credits);
  }

  get credits(): number {
    return this.hundredths / 100;
  }

  set credits(value: number) {
    this.hundredths = toHundredths(value);
  }

  /** Charges `amount` when the balance covers it; a short balance is left untouched. */
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

export class AccountRegistry {
  private readonly byKey = new Map<string, Account>();
  readonly list: Account[] = [];

  constructor(accounts: readonly SandboxAccount[]) {
    for (const init of accounts) {
      if (init.key === "" || /\s/.test(init.key))
        throw new Error(`account "${init.name}": key must be non-empty without spaces`);
      if (this.byKey.has(init.key)) throw new Error(`account "${init.name}": duplicate key`);
      const account = new Account(init);
      this.byKey.set(init.key, account);
      this.list.push(account);
    }
  }

  find(key: string): Account | undefined {
    return this.byKey.get(key);
  }
}

export type BearerResult =
  { kind: "missing" } | { kind: "malformed"; token: string | undefined } | { kind: "token"; token: string };

/** RFC 7235: the scheme is case-insensitive; a token68 credential follows one or more spaces. */
const BEARER = /^([A-Za-z]+) +([^\s]+) *$/;

export function parseBearer(header: string | string[] | undefined): BearerResult {
  if (header === undefined) return { kind: "missing" };
  // Node joins nothing for Authorization; a repeated header arrives as the first value only, but be safe.
  const value = Array.isArray(header) ? header.join(", ") : header;
  if (value.trim() === "") return { kind: "missing" };
  const match = BEARER.exec(value);
  if (!match || match[1]?.toLowerCase() !== "bearer" || match[2] === undefined) {
    return { kind: "malformed", token: match?.[2] };
  }
  return { kind: "token", token: match[2] };
}
