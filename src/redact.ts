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

/** Structured service data made safe to relay: strings cleaned, size and depth bounded, shape kept. */
export function sanitizeValue(value: unknown, depth = 0): unknown {
  if (typeof value === "string") return cleanText(value, 500);
  if (typeof value !== "object" || value === null) return value;
  if (depth >= 4) return cleanText(value, 200);
  if (Array.isArray(value)) return value.slice(0, 50).map((item) => sanitizeValue(item, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value).slice(0, 50)) {
    out[cleanText(key, 64)] = sanitizeValue(item, depth + 1);
  }
  return out;
}
