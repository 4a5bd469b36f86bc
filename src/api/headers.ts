/** Response headers as undici gives them, and the one way this code base reads them. */
export type HeaderBag = Record<string, string | string[] | undefined>;

/** Case-insensitive header lookup; the first value when the header came more than once. */
export function headerValue(headers: HeaderBag, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== wanted || value === undefined) continue;
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined) return first;
  }
  return undefined;
}
