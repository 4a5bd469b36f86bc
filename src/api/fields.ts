/**
 * The one cleaning path for single fields the service gives (task ids, statuses, URLs): a value either
 * passes whole or is unusable and never relayed. Nothing here shortens or repairs a value, because a
 * repaired id or URL would point at something the service never named. Free-form data (list items,
 * credits, task errors) goes through `sanitizeValue` in redact.ts instead.
 */

/** Longer strings never qualify as an id, a status or a URL, however they look. */
export const MAX_FIELD_CHARS = 2048;
export const MAX_ID_CHARS = 256;
/** The in-progress value reported for a status the service gave but that cannot be relayed. */
export const UNKNOWN_STATUS = "unknown";

// Controls (C0, DEL, C1), format characters (bidi controls, zero-width characters, soft hyphen, BOM, tags),
// lone surrogates, private-use characters, line/paragraph separators and every kind of whitespace. A
// superset of the characters that can forge a log line, reorder text on screen or hide inside an id.
const UNSAFE_CHAR = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Zl}\p{Zp}\p{Zs}\s]/u;
const STATUS_FORM = /^[a-z0-9][a-z0-9 _.-]{0,63}$/;

/** True when `text` holds a character that must never reach a log line or the assistant unescaped. */
export function hasUnsafeChars(text: string): boolean {
  return UNSAFE_CHAR.test(text);
}

/**
 * A task id fit to relay and to put in a path: a string (or a safe integer, as text) of 1..256 characters
 * without controls, whitespace, format or bidi characters, lone surrogates, and not `.` or `..`.
 */
export function safeId(value: unknown): string | undefined {
  const text =
    typeof value === "number" && Number.isSafeInteger(value)
      ? String(value)
      : typeof value === "string"
        ? value
        : undefined;
  if (text === undefined || text.length === 0 || text.length > MAX_ID_CHARS) return undefined;
  if (text === "." || text === "..") return undefined;
  return hasUnsafeChars(text) ? undefined : text;
}

/**
 * A status trimmed and lower-cased, when it then has the form of a status word
 * (`/^[a-z0-9][a-z0-9 _.-]{0,63}$/`); undefined otherwise. Callers report an unusable status as
 * `UNKNOWN_STATUS`, which is an in-progress value.
 */
export function safeStatus(value: unknown): string | undefined {
  const text =
    typeof value === "number" && Number.isSafeInteger(value)
      ? String(value)
      : typeof value === "string" && value.length <= MAX_FIELD_CHARS
        ? value
        : undefined;
  if (text === undefined) return undefined;
  const status = text.trim().toLowerCase();
  return STATUS_FORM.test(status) ? status : undefined;
}

/**
 * An http(s) URL fit to relay, as `new URL(raw).href`: at most 2,048 characters before and after parsing,
 * no whitespace, control, bidi or zero-width character anywhere in the raw text, no `user:password@`.
 */
export function safeUrl(value: unknown): string | undefined {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_FIELD_CHARS) return undefined;
  if (hasUnsafeChars(value)) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
  if (url.username !== "" || url.password !== "" || url.hostname === "") return undefined;
  return url.href.length > MAX_FIELD_CHARS ? undefined : url.href;
}
