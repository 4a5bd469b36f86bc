import { randomBytes } from "node:crypto";
import type { IdKind } from "./types.js";

const PREFIX: Readonly<Record<IdKind, string>> = {
  video: "vid",
  image: "img",
  upload: "upl",
  request: "req",
};

/** Random, URL-safe ids with a readable kind prefix, like most services hand out. */
export function defaultIdGenerator(kind: IdKind): string {
  return `${PREFIX[kind]}_${randomBytes(9).toString("base64url")}`;
}

/** Deterministic ids for tests: vid_1, vid_2, img_1 ... */
export function sequentialIdGenerator(): (kind: IdKind) => string {
  const counters = new Map<IdKind, number>();
  return (kind) => {
    const next = (counters.get(kind) ?? 0) + 1;
    counters.set(kind, next);
    return `${PREFIX[kind]}_${next}`;
  };
}
