/**
 * The search every finder shares: the best find of a walk (walk.ts) by one preference order,
 *   1. a lower tier beats a higher one, at any depth (tier 1 `video_id` beats a shallower tier 3 `id`);
 *   2. within a tier, the shallower find beats the deeper one;
 *   3. at equal depth, the service's field order decides (the first one wins);
 * and the key names a finder judges a node by, compared by their words (`videoUrl`, `video_url` and
 * `video-url` are the same name; `thumbnails` also names a thumbnail), so that it can skip the subtrees
 * about something other than what it looks for.
 */
import { MAX_KEY_CHARS, walk, type WalkNode } from "./walk.js";

// ---- key names -------------------------------------------------------------------------------------

/** The words of a finder's list, given as one text: `wordSet("thumbnail thumb poster")`. */
export function wordSet(text: string): ReadonlySet<string> {
  return new Set(text.split(/\s+/).filter((word) => word !== ""));
}

/** `videoURL`, `video_url`, `video-url` -> ["video", "url"]. Absurdly long keys name nothing. */
function keyWords(key: string): string[] {
  if (key.length > MAX_KEY_CHARS) return [];
  return key
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word !== "");
}

/** `videoURL`, `video_url`, `video-url` -> "videourl". */
export function flatKey(key: string | undefined): string {
  return key === undefined || key.length > MAX_KEY_CHARS ? "" : key.toLowerCase().replace(/[^a-z0-9]/g, "");
}

/** Whether a word of `key` (or its singular: `thumbnails`) is in `words`. */
export function names(key: string | undefined, words: ReadonlySet<string>): boolean {
  if (key === undefined) return false;
  for (const word of keyWords(key)) {
    if (words.has(word)) return true;
    if (word.length > 3 && word.endsWith("s") && words.has(word.slice(0, -1))) return true;
  }
  return false;
}

/** The key of the nearest object above the node (array items count as inside their array's key). */
export function containerKey(node: WalkNode): string | undefined {
  let current = node.parent;
  while (current !== undefined && current.key === undefined && current.index !== undefined) {
    current = current.parent;
  }
  return current?.key;
}

/** Whether the node's own key or any key above it names one of `words`. */
export function within(node: WalkNode, words: ReadonlySet<string>): boolean {
  for (let current: WalkNode | undefined = node; current !== undefined; current = current.parent) {
    if (names(current.key, words)) return true;
  }
  return false;
}

// ---- the tiered search -----------------------------------------------------------------------------

export interface Found<T> {
  value: T;
  node: WalkNode;
}

export type Judgement<T> = "skip" | { tier: number; value: T } | undefined;

/** The best find by the preference order above; `judge` sees every node not inside a skipped one. */
export function best<T>(root: unknown, judge: (node: WalkNode) => Judgement<T>): Found<T> | undefined {
  const byTier: (Found<T> | undefined)[] = [];
  walk(root, (node) => {
    const judgement = judge(node);
    if (judgement === "skip") return "skip";
    if (judgement === undefined || byTier[judgement.tier] !== undefined) return undefined;
    byTier[judgement.tier] = { value: judgement.value, node };
    // Breadth-first order makes the first tier-1 find the best possible one.
    return judgement.tier === 1 ? "stop" : undefined;
  });
  for (const found of byTier) if (found !== undefined) return found;
  return undefined;
}
