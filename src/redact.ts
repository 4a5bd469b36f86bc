/**
 * The one redaction point: every byte the server emits (tool results, progress, logs) passes through
 * `redact`, so the API key cannot leak even if a lower layer put it in a message by mistake.
 */

const secrets = new Set<string>();

/** Registers a secret to be masked wherever it appears. Short strings are ignored (they would mask noise). */
export function registerSecret(secret: string | undefined): void {
  if (secret !== undefined && secret.length >= 6) secrets.add(secret);
}

const BEARER = /\b(Bearer\s+)[^\s"',;]+/gi;

export function redact(text: string): string {
  let out = text;
  for (const secret of secrets) {
    if (out.includes(secret)) out = out.split(secret).join("[redacted]");
  }
  return out.replace(BEARER, "$1[redacted]");
}

// C0/C1 controls except tab and newline, plus bidi overrides that can disguise text.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/g;

/**
 * Makes text that came from the service (or echoes a user's prompt) safe to relay: control characters
 * stripped, whitespace runs folded, and truncated so a hostile answer cannot flood the assistant's context.
 */
export function cleanText(value: unknown, maxChars = 300): string {
  const text = typeof value === "string" ? value : value === undefined ? "" : safeJson(value);
  const cleaned = redact(text).replace(CONTROL, "").replace(/\s+/g, " ").trim();
  return cleaned.length > maxChars ? `${cleaned.slice(0, maxChars - 1)}…` : cleaned;
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

export interface SanitizeLimits {
  /** Levels kept as structure; deeper containers become a short marker. At most 32. */
  maxDepth?: number;
  /** Values kept in all; once spent, arrays and objects end where they are. */
  maxNodes?: number;
  /** Characters of strings and keys kept in all; once spent, strings become "…". */
  maxChars?: number;
}

export const SANITIZE_LIMITS = { maxDepth: 8, maxNodes: 1_000, maxChars: 20_000 } as const;
const MAX_ENTRIES = 50;

interface Budget {
  nodes: number;
  chars: number;
  readonly maxDepth: number;
}

/**
 * Structured service data made safe to relay: strings cleaned (`cleanText`), shape kept to about 8 levels,
 * at most 50 entries per array or object, and the whole bounded by a budget of values and characters, so
 * a huge or deep answer costs bounded work and output. Recursion is bounded by the depth limit.
 */
export function sanitizeValue(value: unknown, limits: SanitizeLimits = {}): unknown {
  const budget: Budget = {
    nodes: limits.maxNodes ?? SANITIZE_LIMITS.maxNodes,
    chars: limits.maxChars ?? SANITIZE_LIMITS.maxChars,
    maxDepth: Math.min(limits.maxDepth ?? SANITIZE_LIMITS.maxDepth, 32),
  };
  return sanitizeNode(value, 0, budget);
}

function sanitizeNode(value: unknown, depth: number, budget: Budget): unknown {
  budget.nodes--;
  if (typeof value === "string") return budgetedText(value, 500, budget);
  if (typeof value !== "object" || value === null) return value;
  if (depth >= budget.maxDepth) return Array.isArray(value) ? `[array of ${value.length} items]` : "[object]";
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (let index = 0; index < value.length && index < MAX_ENTRIES && budget.nodes > 0; index++) {
      out.push(sanitizeNode(value[index], depth + 1, budget));
    }
    return out;
  }
  const out: Record<string, unknown> = {};
  let entries = 0;
  for (const key in value) {
    if (entries >= MAX_ENTRIES || budget.nodes <= 0) break;
    if (!Object.prototype.hasOwnProperty.call(value, key)) continue;
    entries++;
    // defineProperty: a key named "__proto__" stays an ordinary field instead of replacing the prototype.
    Object.defineProperty(out, budgetedText(key, 64, budget), {
      value: sanitizeNode((value as Record<string, unknown>)[key], depth + 1, budget),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

function budgetedText(text: string, maxChars: number, budget: Budget): string {
  if (budget.chars <= 0) return "…";
  const cleaned = cleanText(text, Math.min(maxChars, Math.max(budget.chars, 2)));
  budget.chars -= cleaned.length;
  return cleaned;
}
