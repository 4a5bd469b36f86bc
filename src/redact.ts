/**
 * Secrets masked at the one exit every output passes (docs/security.md). The process's own are masked
 * everywhere; a caller's bearer only in its own runtime's outputs (a bearer `completed` would censor others).
 * Matching sees the text case-folded without junk (controls, format characters, ANSI, escape text); every run
 * of max(8, ceil(length / 3)) characters of a secret is masked, so a key cut in two never shows in full.
 */
const MASK = "[redacted]";
const BEARER = /\b(Bearer\s+)(?![<[])[^\s"',;]{6,}/gi;
// Bounded repetitions keep every attempt short, so a text full of ESC or backslashes stays linear.
const JUNK =
  // eslint-disable-next-line no-control-regex
  /(?:(?:\u001b\[|\u009b)[0-?]{0,32}[ -/]{0,8}[@-~]|\u001b\][^\u0007\u001b]{0,512}(?:\u0007|\u001b\\)|\u001b[()*+][0-~]|\[(?:\d{1,3}(?:;\d{1,3}){0,15}[A-Za-z]|[mMkK])|\\{1,8}(?:[nrtbfve]|0[0-7]{0,2}|x[\da-fA-F]{2}|u[\da-fA-F]{4}|u\{[\da-fA-F]{1,6}\})|[\p{Cc}\p{Cf}\p{Z}\s\u115f\u1160\u3164\uffa0]|[\u034f\ufe00-\ufe0f])+/gu;

/** Case-folded, full-width ASCII as ASCII, one code unit for one. */
function fold(text: string): string {
  const ascii = text.replace(/[\uff01-\uff5e]/g, (c) => String.fromCharCode(c.charCodeAt(0) - 0xfee0));
  const lower = ascii.toLowerCase();
  // A character that lower-cases to two code units (İ) stays as it is, so positions still map.
  if (lower.length === ascii.length) return lower;
  return ascii.replace(/[^]/g, (c) => (c.toLowerCase()[1] ? c : c.toLowerCase()));
}

/** The text as matching sees it (junk out, then folded), and where each of its code units stands in it. */
function view(text: string): { folded: string; origin: Uint32Array } {
  const [parts, origin] = [[] as string[], new Uint32Array(text.length)];
  let [at, size] = [0, 0];
  const keep = (to: number) => {
    parts.push(text.slice(at, to));
    for (; at < to; at++) origin[size++] = at;
  };
  for (const junk of text.matchAll(JUNK)) {
    keep(junk.index);
    at += junk[0].length;
  }
  keep(text.length);
  return { folded: fold(parts.join("")), origin };
}

function piecesOf(secret: string): string[] {
  const { folded } = view(secret);
  const size = Math.min(folded.length, Math.max(8, Math.ceil(folded.length / 3)));
  if (folded.length < 6) return [];
  return Array.from({ length: folded.length - size + 1 }, (_, at) => folded.slice(at, at + size));
}

function maskPieces(text: string, pieces: readonly string[]): string {
  if (pieces.length === 0) return text;
  // The same folded text as view's, without the position map: most texts hold no secret.
  const quick = fold(text.replace(JUNK, ""));
  if (!pieces.some((piece) => quick.includes(piece))) return text;
  const { folded, origin } = view(text);
  const spans: Array<[number, number]> = [];
  for (const piece of pieces) {
    for (let at = folded.indexOf(piece); at >= 0; at = folded.indexOf(piece, at + 1))
      spans.push([at, at + piece.length]);
  }
  let [out, copied, start, end] = ["", 0, -1, -1];
  const flush = () => {
    if (start >= 0)
      [out, copied] = [`${out}${text.slice(copied, origin[start])}${MASK}`, origin[end - 1]! + 1];
  };
  for (const [from, to] of spans.sort((a, b) => a[0] - b[0])) {
    // Overlapping pieces are one span, junk inside included; two occurrences side by side stay two.
    if (start >= 0 && from < end) end = Math.max(end, to);
    else [start, end] = (flush(), [from, to]);
  }
  flush();
  return out + text.slice(copied);
}

/** Counts every secret added or forgotten anywhere: a redactor's pieces include its parent's. */
let changes = 0;

/** Masks a set of secrets, however mangled, in text and in structured data. */
export class Redactor {
  /** Each secret with the pieces of it and of its JSON-escaped form; a child also masks its parent's. */
  private readonly secrets = new Map<string, string[]>();
  private cached: { changes: number; pieces: string[] } | undefined;

  constructor(private readonly parent?: Redactor) {}

  /** A redactor that masks `secret` besides everything this one masks (nothing is registered here). */
  with(secret: string | undefined): Redactor {
    const child = new Redactor(this);
    child.add(secret);
    return child;
  }

  /** Adds a secret (under 6 characters it is ignored: it would mask noise); returns how to forget it. */
  add(secret: string | undefined): () => void {
    if (secret === undefined || secret.length < 6 || this.secrets.has(secret)) return () => {};
    this.secrets.set(secret, [secret, JSON.stringify(secret).slice(1, -1)].flatMap(piecesOf));
    changes++;
    return () => void (this.secrets.delete(secret) && changes++);
  }

  text(text: string): string {
    return maskPieces(text, this.pieces()).replace(BEARER, `$1${MASK}`);
  }

  /** What a JSON round trip would give, every string and key masked, and a cycle as "[circular]". */
  value<T>(value: T): T {
    let json: string | undefined;
    try {
      json = JSON.stringify(value);
    } catch {
      json = withCycles(value);
    }
    return (json === undefined ? undefined : JSON.parse(this.text(json))) as T;
  }

  private pieces(): string[] {
    if (this.cached?.changes !== changes) {
      const all = [...(this.parent?.pieces() ?? []), ...[...this.secrets.values()].flat()];
      this.cached = { changes, pieces: [...new Set(all)] };
    }
    return this.cached.pieces;
  }
}

/** JSON of a value JSON.stringify refuses: a cycle as "[circular]", a bigint as its digits. */
function withCycles(value: unknown): string | undefined {
  const above: unknown[] = [];
  return JSON.stringify(value, function (this: unknown, _key, item: unknown) {
    // JSON.stringify goes depth first: what lies above this holder is done with.
    while (above.length > 0 && above.at(-1) !== this) above.pop();
    if (typeof item === "bigint") return String(item);
    if (typeof item !== "object" || item === null) return item;
    if (above.includes(item)) return "[circular]";
    above.push(item);
    return item;
  });
}

/** The process's own secrets (what the operator configured): masked in everything the process emits. */
export const PROCESS_REDACTOR = new Redactor();

/** Registers one of the process's own secrets (never a caller's bearer); returns how to forget it (tests). */
export const registerSecret = (secret: string | undefined): (() => void) => PROCESS_REDACTOR.add(secret);
export const redact = (text: string): string => PROCESS_REDACTOR.text(text);
export const redactValue = <T>(value: T): T => PROCESS_REDACTOR.value(value);

/** Service text made safe to relay: one line without controls or bidi, secrets masked, at most `maxChars`. */
export function cleanText(value: unknown, maxChars = 300): string {
  const text = typeof value === "string" ? redact(value) : (JSON.stringify(redactValue(value)) ?? "");
  // eslint-disable-next-line no-control-regex
  const line = text.replace(/[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/g, "");
  const folded = line.replace(/\s+/g, " ").trim();
  return folded.length > maxChars ? `${folded.slice(0, maxChars - 1)}…` : folded;
}

export const SANITIZE_LIMITS = { maxDepth: 8, maxNodes: 1_000, maxChars: 20_000 } as const;

/** Strings cleaned, shape kept to 8 levels and 50 entries a container, within a budget of values and text. */
export function sanitizeValue(value: unknown, limits: { maxNodes?: number } = {}): unknown {
  const budget = { nodes: limits.maxNodes ?? SANITIZE_LIMITS.maxNodes, chars: SANITIZE_LIMITS.maxChars };
  const text = (raw: string, max: number) => {
    const cleaned = budget.chars <= 0 ? "…" : cleanText(raw, Math.min(max, Math.max(budget.chars, 2)));
    budget.chars -= cleaned.length;
    return cleaned;
  };
  const node = (item: unknown, depth: number): unknown => {
    budget.nodes--;
    if (typeof item === "string") return text(item, 500);
    if (typeof item !== "object" || item === null) return item;
    if (depth >= SANITIZE_LIMITS.maxDepth)
      return Array.isArray(item) ? `[array of ${item.length} items]` : "[object]";
    const entries: Array<[string | number, unknown]> = [];
    for (const key of Array.isArray(item) ? item.keys() : Object.keys(item)) {
      if (entries.length >= 50 || budget.nodes <= 0) break;
      const name = typeof key === "string" ? text(key, 64) : key;
      entries.push([name, node((item as Record<string | number, unknown>)[key], depth + 1)]);
    }
    // fromEntries: a key named "__proto__" stays an ordinary field instead of replacing the prototype.
    return Array.isArray(item) ? entries.map(([, kept]) => kept) : Object.fromEntries(entries);
  };
  return node(value, 0);
}
