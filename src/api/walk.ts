/**
 * The bounded walk over a service answer, which every finder (find.ts, find-history.ts) runs on. Iterative
 * and breadth-first: no recursion a hostile answer could overflow, at most `WALK_LIMITS.maxDepth` levels (the
 * answer's own fields are depth 1), `WALK_LIMITS.maxNodes` values looked at in all and
 * `WALK_LIMITS.maxChildren` per array or object (so one huge array cannot spend the whole budget on its first
 * level): a huge or deeply nested answer costs bounded work. And what a walk tells of an answer without its
 * values: where a node stands (`pathOf`) and which fields came (`describeFields`, for messages).
 */
import type { JsonObject } from "./types.js";

export const WALK_LIMITS = { maxDepth: 8, maxNodes: 10_000, maxChildren: 1_000 } as const;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export interface WalkNode {
  readonly value: unknown;
  /** The node's key in its parent object; undefined for the root and for array items. */
  readonly key: string | undefined;
  /** The node's index in its parent array. */
  readonly index: number | undefined;
  /** The node's place among its siblings (array index, or the order of object keys). */
  readonly position: number;
  readonly depth: number;
  readonly parent: WalkNode | undefined;
}

export interface WalkLimits {
  maxDepth?: number;
  maxNodes?: number;
  maxChildren?: number;
}

export interface WalkStats {
  /** Values taken into the walk, the root included; never more than `maxNodes`. */
  nodes: number;
  /** True when a limit (depth, nodes, children) left part of the answer unseen. */
  truncated: boolean;
}

/** `"skip"`: do not look inside this node; `"stop"`: end the walk. */
export type WalkVerdict = "skip" | "stop" | undefined;

/** Visits `root` and what it contains breadth-first, within the limits. */
export function walk(
  root: unknown,
  visit: (node: WalkNode) => WalkVerdict,
  limits: WalkLimits = {},
): WalkStats {
  const maxDepth = limits.maxDepth ?? WALK_LIMITS.maxDepth;
  const maxNodes = limits.maxNodes ?? WALK_LIMITS.maxNodes;
  const maxChildren = limits.maxChildren ?? WALK_LIMITS.maxChildren;
  const queue: WalkNode[] = [
    { value: root, key: undefined, index: undefined, position: 0, depth: 0, parent: undefined },
  ];
  let truncated = false;
  for (let head = 0; head < queue.length; head++) {
    const node = queue[head] as WalkNode;
    const verdict = visit(node);
    if (verdict === "stop") break;
    if (verdict === "skip") continue;
    const { value } = node;
    if (Array.isArray(value)) {
      if (value.length === 0) continue;
      if (node.depth >= maxDepth) {
        truncated = true;
        continue;
      }
      // An index loop stops at the budget: a million-item array costs no more than a small one.
      for (let index = 0; index < value.length; index++) {
        if (queue.length >= maxNodes || index >= maxChildren) {
          truncated = true;
          break;
        }
        const depth = node.depth + 1;
        queue.push({ value: value[index], key: undefined, index, position: index, depth, parent: node });
      }
    } else if (isObject(value)) {
      if (node.depth >= maxDepth) {
        truncated ||= hasAnyKey(value);
        continue;
      }
      let position = 0;
      for (const key in value) {
        if (!Object.prototype.hasOwnProperty.call(value, key)) continue;
        if (queue.length >= maxNodes || position >= maxChildren) {
          truncated = true;
          break;
        }
        const depth = node.depth + 1;
        queue.push({ value: value[key], key, index: undefined, position: position++, depth, parent: node });
      }
    }
  }
  return { nodes: queue.length, truncated };
}

export function hasAnyKey(record: JsonObject): boolean {
  for (const key in record) if (Object.prototype.hasOwnProperty.call(record, key)) return true;
  return false;
}

// ---- paths -----------------------------------------------------------------------------------------

/** Keys longer than this name nothing (find-search.ts), and are cut in paths. */
export const MAX_KEY_CHARS = 128;
const MAX_SEGMENT_CHARS = 32;
const MAX_PATH_CHARS = 100;

/** `result.output[].url`: keys cleaned to `[A-Za-z0-9_$-]` and shortened; indices shown as `[]`. */
export function pathOf(node: WalkNode): string {
  const parts: string[] = [];
  for (let current: WalkNode | undefined = node; current?.parent !== undefined; current = current.parent) {
    if (current.key === undefined) {
      parts.push("[]");
      continue;
    }
    const kept = current.key.slice(0, MAX_KEY_CHARS).replace(/[^A-Za-z0-9_$-]/g, "");
    const segment = kept.length > MAX_SEGMENT_CHARS ? `${kept.slice(0, MAX_SEGMENT_CHARS)}…` : kept || "?";
    parts.push(`.${segment}`);
  }
  const path = parts.reverse().join("").replace(/^\./, "");
  return path.length > MAX_PATH_CHARS ? `${path.slice(0, MAX_PATH_CHARS - 1)}…` : path;
}

// ---- describing an answer without its values ------------------------------------------------------

const MAX_PATHS = 20;

/**
 * The answer's field paths, never its values, for messages about an answer that lacked something:
 * `asset.id, asset.size, asset.links.private`, at most 20, breadth-first, array items as `[]`.
 */
export function describeFields(data: unknown): string {
  if (!isObject(data) && !Array.isArray(data)) {
    const kind =
      data === null ? "null" : typeof data === "string" ? "a bare string" : `a bare ${typeof data}`;
    return `none (the answer was ${kind})`;
  }
  const paths: string[] = [];
  let more = false;
  const stats = walk(data, (node) => {
    // A container at the depth limit stands for what lies below it, which is not read.
    if (node.parent === undefined) return undefined;
    if (!isLeaf(node.value) && node.depth < WALK_LIMITS.maxDepth) return undefined;
    const path = pathOf(node);
    if (paths.includes(path)) return undefined;
    if (paths.length >= MAX_PATHS) {
      more = true;
      return "stop";
    }
    paths.push(path);
    return undefined;
  });
  if (paths.length === 0) return "none (the answer was empty)";
  return more || stats.truncated ? `${paths.join(", ")}, …` : paths.join(", ");
}

function isLeaf(value: unknown): boolean {
  if (Array.isArray(value)) return value.length === 0;
  return !isObject(value) || !hasAnyKey(value);
}
