/**
 * Redaction: every byte the server emits (tool results, progress, logs) passes through a `Redactor`, so a
 * secret cannot leak even if a lower layer put it in a message by mistake, and even when the service echoes
 * it mangled.
 *
 * Whose secrets are masked where:
 * - The process's own secrets (the stdio key, the gateway's service key, a Redis password: what the operator
 *   configured) are registered once with `registerSecret` and masked in everything: `redact`, `redactValue`,
 *   `cleanText` and the logger use them.
 * - A caller's own key (a passthrough bearer over HTTP) is never registered there: one caller's bearer must
 *   never be able to censor or rewrite another caller's answers (a bearer of `completed` would otherwise
 *   mask every tenant's status). Its runtime holds a `Redactor` with that key (`PROCESS_REDACTOR.with(key)`),
 *   applied where that caller's data enters (each service answer, as soon as it is parsed: api/http.ts) and
 *   where it leaves (its tool results, progress, task records). It lives as long as the runtime, whatever
 *   requests are in flight, so a task that ends while no request of its key runs is masked all the same.
 *
 * How a secret is found:
 * - Matching runs on a normalised view of the text. Case is folded (full-width ASCII folds to ASCII), and
 *   these are skipped as if absent: C0/C1 controls and DEL; whitespace of any kind; invisible format
 *   characters (soft hyphen, zero-width space/joiners, word joiner, BOM, bidi marks, embeddings and
 *   isolates, variation selectors); ANSI escape sequences, with the ESC (or CSI) byte or as the leftover
 *   `[31m` once ESC was stripped; and escape text for any of those, as JSON or a C string writes them
 *   (`\n`, `\u200b`, `\x1b`, `\033`, `\\n`).
 * - Each match is mapped back to the original text and the whole original span, junk inside included,
 *   becomes "[redacted]".
 * - Fragments: any run of at least max(8, ceil(length / 3)) consecutive characters of a secret is masked
 *   too (secrets of 6-7 characters are matched whole), so a key cut in two (two JSON fields, text between,
 *   two lines) never shows in full: the longer piece is at least half the key.
 *   Limit: a piece shorter than that stays readable. A key cut into three or more short pieces, or the
 *   short piece beside a masked one, shows that much of the key; so does a mangling outside the list
 *   above (a key spelled backwards, percent-encoded, or with ordinary letters inserted).
 * - Cost: one pass to normalise, then one rolling-hash pass per secret: linear in the text length, and a
 *   redactor holds one or two secrets, whatever the number of callers.
 */

const MIN_SECRET_LENGTH = 6;
const MIN_FRAGMENT_LENGTH = 8;
const MASK = "[redacted]";

interface Matcher {
  /** The secret as the normaliser sees it. */
  units: Uint16Array;
  /** Length of the pieces looked for (the whole secret when it is short). */
  window: number;
  /** B^(window-1), to roll the hash. */
  power: number;
  /** Rolling hash of each window of the secret -> where those windows start in it. */
  windows: Map<number, number[]>;
  /** Bits of the windows' hashes (top 16 bits), to reject most text positions without a Map lookup. */
  filter: Uint8Array;
}

const BEARER = /\b(Bearer\s+)(?![<[])[^\s"',;]{6,}/gi;

/** Masks a set of secrets, however mangled, in text and in structured data. */
export class Redactor {
  /** Its own secrets; a child also asks its parent, so a later process secret reaches every child. */
  private readonly secrets = new Map<string, Matcher | undefined>();

  constructor(private readonly parent?: Redactor) {}

  /** A redactor that masks `secret` besides everything this one masks (nothing is registered here). */
  with(secret: string | undefined): Redactor {
    const child = new Redactor(this);
    child.add(secret);
    return child;
  }

  /**
   * Adds a secret. Short strings are ignored (they would mask noise). Returns a function that forgets it
   * again (for tests).
   */
  add(secret: string | undefined): () => void {
    if (secret === undefined || secret.length < MIN_SECRET_LENGTH || this.knows(secret)) return () => {};
    this.secrets.set(secret, buildMatcher(secret));
    return () => void this.secrets.delete(secret);
  }

  text(text: string): string {
    let out = text;
    const all = this.all();
    if (all.length > 0) {
      // Exact occurrences first: cheap, and right even for a secret the normaliser cannot see.
      for (const [secret] of all) {
        if (out.includes(secret)) out = out.split(secret).join(MASK);
      }
      out = maskDisguised(out, all);
    }
    return out.replace(BEARER, `$1${MASK}`);
  }

  /**
   * Structured data redacted before it is serialized: every string and every object key passes `text`,
   * so escapes that serialization would add cannot hide a secret. The result is what
   * `JSON.parse(JSON.stringify(value))` would give, strings redacted (a cycle becomes "[circular]" instead
   * of an exception): plain objects and arrays are walked, anything else goes through its JSON form.
   */
  value<T>(value: T): T {
    return walk(value, new WeakSet(), (text) => this.text(text)) as T;
  }

  private knows(secret: string): boolean {
    return this.secrets.has(secret) || (this.parent?.knows(secret) ?? false);
  }

  private all(): Array<[string, Matcher | undefined]> {
    const own = [...this.secrets];
    return this.parent === undefined ? own : [...this.parent.all(), ...own];
  }
}

/** The process's own secrets (what the operator configured): masked in everything the process emits. */
export const PROCESS_REDACTOR = new Redactor();

/**
 * Registers one of the process's own secrets (see the top of this file: never a caller's bearer). Returns a
 * function that forgets it again (for tests).
 */
export function registerSecret(secret: string | undefined): () => void {
  return PROCESS_REDACTOR.add(secret);
}

export function redact(text: string): string {
  return PROCESS_REDACTOR.text(text);
}

/** `redact` for structured data (see Redactor.value). */
export function redactValue<T>(value: T): T {
  return PROCESS_REDACTOR.value(value);
}

function walk(value: unknown, seen: WeakSet<object>, mask: (text: string) => string): unknown {
  if (typeof value === "string") return mask(value);
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  if (typeof value !== "object" || value === null) return isJsonless(value) ? undefined : value;
  if (seen.has(value)) return "[circular]";
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.map((item) => (isJsonless(item) ? null : walk(item, seen, mask)));
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) {
      const json = JSON.stringify(value);
      return json === undefined ? undefined : (JSON.parse(mask(json)) as unknown);
    }
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      if (!isJsonless(item)) out[mask(key)] = walk(item, seen, mask);
    }
    return out;
  } finally {
    seen.delete(value);
  }
}

/** Values JSON leaves out of objects (and writes as null in arrays). */
function isJsonless(value: unknown): boolean {
  return value === undefined || typeof value === "function" || typeof value === "symbol";
}

function maskDisguised(text: string, secrets: ReadonlyArray<[string, Matcher | undefined]>): string {
  const matchers = secrets.map(([, matcher]) => matcher).filter((matcher) => matcher !== undefined);
  if (matchers.length === 0) return text;
  const view = normalize(text);
  const spans: Array<[number, number]> = [];
  for (const matcher of matchers) findSpans(view, matcher, spans);
  if (spans.length === 0) return text;
  spans.sort((a, b) => a[0] - b[0]);
  let out = "";
  let at = 0;
  for (const [start, end] of spans) {
    if (end <= at) continue;
    // A span that overlaps the previous one only extends its mask.
    if (start >= at) out += `${text.slice(at, start)}${MASK}`;
    at = end;
  }
  return out + text.slice(at);
}

// ---- The normalised view -------------------------------------------------------------------------------

interface NormalizedText {
  /** Folded code units with the ignorable ones left out. */
  units: Uint16Array;
  /** For each unit, its index in the original text. */
  origin: Uint32Array;
  length: number;
}

function normalize(text: string): NormalizedText {
  const units = new Uint16Array(text.length);
  const origin = new Uint32Array(text.length);
  let length = 0;
  for (let i = 0; i < text.length;) {
    const code = text.charCodeAt(i);
    if (code === 0x1b || code === 0x9b || code === 0x5b || code === 0x5c) {
      const skip = sequenceLength(text, i, code);
      if (skip > 0) {
        i += skip;
        continue;
      }
    }
    if (!isIgnorable(code)) {
      units[length] = fold(code);
      origin[length] = i;
      length += 1;
    }
    i += 1;
  }
  return { units, origin, length };
}

function isIgnorable(code: number): boolean {
  if (code <= 0x20) return true; // C0 controls, ESC, space
  if (code < 0x7f) return false;
  if (code <= 0xa0) return true; // DEL, C1 controls, no-break space
  if (code < 0x2000) {
    return (
      code === 0xad || // soft hyphen
      code === 0x34f || // combining grapheme joiner
      code === 0x61c || // Arabic letter mark
      code === 0x115f ||
      code === 0x1160 || // Hangul fillers
      code === 0x1680 || // Ogham space
      code === 0x180e // Mongolian vowel separator
    );
  }
  return (
    code <= 0x200f || // spaces, zero-width space/joiners, LRM/RLM
    (code >= 0x2028 && code <= 0x202f) || // line/paragraph separators, bidi embeddings, narrow NBSP
    (code >= 0x205f && code <= 0x206f) || // word joiner, invisible operators, bidi isolates
    code === 0x3000 ||
    code === 0x3164 ||
    (code >= 0xfe00 && code <= 0xfe0f) || // variation selectors
    code === 0xfeff ||
    code === 0xffa0 ||
    (code >= 0xfff9 && code <= 0xfffb) // interlinear annotation
  );
}

/** Lazily filled lower-case table for the BMP; 0 = not computed yet (U+0000 is ignorable anyway). */
const FOLDED = new Uint16Array(0x10000);

function fold(code: number): number {
  if (code < 0x80) return code >= 0x41 && code <= 0x5a ? code + 32 : code;
  let folded = FOLDED[code] ?? 0;
  if (folded === 0) {
    const source = code >= 0xff01 && code <= 0xff5e ? code - 0xfee0 : code; // full-width ASCII
    const lower = String.fromCharCode(source).toLowerCase();
    folded = lower.length === 1 ? lower.charCodeAt(0) : source;
    FOLDED[code] = folded;
  }
  return folded;
}

// Bounded repetitions keep every attempt short, so a text full of ESC or backslashes stays linear.
const ANSI =
  // eslint-disable-next-line no-control-regex
  /(?:\u001b\[|\u009b)[0-?]{0,32}[ -/]{0,8}[@-~]|\u001b\][^\u0007\u001b]{0,512}(?:\u0007|\u001b\\)|\u001b[()*+][0-~]/y;
const ANSI_LEFTOVER = /\[(?:\d{1,3}(?:;\d{1,3}){0,15}[A-Za-z]|[mMkK])/y;
const ESCAPE_TEXT =
  /\\{1,8}(?:[nrtbfve]|0([0-7]{0,2})|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|u\{([0-9a-fA-F]{1,6})\})/y;

/** Length of the ignorable sequence starting at `at`, or 0. */
function sequenceLength(text: string, at: number, code: number): number {
  const pattern = code === 0x5c ? ESCAPE_TEXT : code === 0x5b ? ANSI_LEFTOVER : ANSI;
  pattern.lastIndex = at;
  const match = pattern.exec(text);
  if (match === null) return 0;
  if (code === 0x5c) {
    const octal = match[1];
    const hex = match[2] ?? match[3] ?? match[4];
    const escaped =
      octal !== undefined && octal !== ""
        ? Number.parseInt(octal, 8)
        : hex !== undefined
          ? Number.parseInt(hex, 16)
          : 0;
    if (escaped > 0xffff || !isIgnorable(escaped)) return 0;
  }
  return match[0].length;
}

// ---- Finding a secret's pieces -----------------------------------------------------------------------

const BASE = 0x01000193;

function buildMatcher(secret: string): Matcher | undefined {
  const view = normalize(secret);
  if (view.length < MIN_SECRET_LENGTH) return undefined;
  const units = view.units.slice(0, view.length);
  const window = Math.min(units.length, Math.max(MIN_FRAGMENT_LENGTH, Math.ceil(units.length / 3)));
  let power = 1;
  for (let k = 1; k < window; k++) power = Math.imul(power, BASE);
  const windows = new Map<number, number[]>();
  const filter = new Uint8Array(0x10000);
  let hash = 0;
  for (let k = 0; k < units.length; k++) {
    if (k >= window) hash = (hash - Math.imul(units[k - window] ?? 0, power)) | 0;
    hash = (Math.imul(hash, BASE) + (units[k] ?? 0)) >>> 0;
    if (k + 1 >= window) {
      const start = k + 1 - window;
      windows.set(hash, [...(windows.get(hash) ?? []), start]);
      filter[hash >>> 16] = 1;
    }
  }
  return { units, window, power, windows, filter };
}

/** Adds the original-text spans [start, end) of every piece of the secret found in `view`. */
function findSpans(view: NormalizedText, matcher: Matcher, spans: Array<[number, number]>): void {
  const { units, origin, length } = view;
  const { window, power, windows, filter } = matcher;
  if (length < window) return;
  let hash = 0;
  let runStart = -1;
  let runEnd = -1;
  for (let k = 0; k < length; k++) {
    if (k >= window) hash = (hash - Math.imul(units[k - window]!, power)) | 0;
    hash = (Math.imul(hash, BASE) + units[k]!) >>> 0;
    if (filter[hash >>> 16] === 0 || k + 1 < window) continue;
    const start = k + 1 - window;
    if (!(windows.get(hash) ?? []).some((at) => sameUnits(units, start, matcher.units, at, window))) continue;
    // Overlapping or touching pieces are one span: the piece between two hits is the secret's too.
    if (runStart >= 0 && start <= runEnd) {
      runEnd = start + window;
      continue;
    }
    if (runStart >= 0) spans.push([origin[runStart]!, origin[runEnd - 1]! + 1]);
    runStart = start;
    runEnd = start + window;
  }
  if (runStart >= 0) spans.push([origin[runStart]!, origin[runEnd - 1]! + 1]);
}

function sameUnits(a: Uint16Array, aAt: number, b: Uint16Array, bAt: number, count: number): boolean {
  for (let k = 0; k < count; k++) if (a[aAt + k] !== b[bAt + k]) return false;
  return true;
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
