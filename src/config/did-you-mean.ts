/** An unknown flag or GENERATION_* variable is named with the nearest known one, as git answers a typo. */
import { parseArgs, type ParseArgsConfig } from "node:util";
import { ConfigError, SETTINGS } from "./schema.js";

type Options = NonNullable<ParseArgsConfig["options"]>;

/** node:util's parseArgs (strict, positionals allowed); an unknown flag is refused naming the nearest one. */
export function parseFlags<T extends Options>(args: string[], options: T, negatives = false) {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: true, allowNegative: negatives });
  } catch (error) {
    const flag = /'(-[^']*)'/.exec(String((error as Error).message))?.[1];
    if ((error as { code?: unknown }).code !== "ERR_PARSE_ARGS_UNKNOWN_OPTION" || flag === undefined)
      throw error;
    const known = Object.keys(options).map((name) => `--${name}`);
    throw new ConfigError(`unknown flag ${flag}.${didYouMean(flag.replace(/=.*/, ""), known)}`);
  }
}

/** ` Did you mean X?` with the known word nearest `word` by edit distance, or nothing when none is near. */
export function didYouMean(word: string, known: Iterable<string>): string {
  let best: { word: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(word.toLowerCase(), candidate.toLowerCase());
    if (best === undefined || distance < best.distance) best = { word: candidate, distance };
  }
  const near = Math.max(2, Math.floor(word.length / 4));
  return best !== undefined && best.distance <= near ? ` Did you mean ${best.word}?` : "";
}

/** A warning for each GENERATION_* variable that no setting reads: it would be ignored without a word. */
export function unknownVariables(env: NodeJS.ProcessEnv): string[] {
  return Object.keys(env)
    .filter((name) => name.startsWith("GENERATION_") && !(name in SETTINGS))
    .map(
      (name) =>
        `${name} is not a setting of generation-mcp, so it is ignored.${didYouMean(name, Object.keys(SETTINGS))}`,
    );
}

function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i += 1) {
    const next = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      next.push(Math.min((row[j] ?? 0) + 1, (next[j - 1] ?? 0) + 1, (row[j - 1] ?? 0) + cost));
    }
    row = next;
  }
  return row[b.length] ?? 0;
}
