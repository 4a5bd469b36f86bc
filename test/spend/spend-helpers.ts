/** What the spend tests share: the sandbox's count of starts, result text, the reset time. */
import type { SandboxHandle } from "../../src/sandbox/types.js";

/** Start requests the sandbox accepted (2xx) for `key`: what was actually started and charged. */
export function startsBy(sandbox: SandboxHandle, key?: string): number {
  return sandbox.requests.filter(
    (request) =>
      (request.route === "generate" || request.route === "generate-image") &&
      request.method === "POST" &&
      request.status >= 200 &&
      request.status < 300 &&
      (key === undefined || request.key === key),
  ).length;
}

/** Start requests of any outcome that reached the sandbox for `key`. */
export function startRequestsBy(sandbox: SandboxHandle, key?: string): number {
  return sandbox.requests.filter(
    (request) =>
      (request.route === "generate" || request.route === "generate-image") &&
      (key === undefined || request.key === key),
  ).length;
}

export function textOf(result: unknown): string {
  const holder = (typeof result === "object" && result !== null ? result : {}) as { content?: unknown };
  const content = Array.isArray(holder.content)
    ? (holder.content as Array<{ type: string; text?: string }>)
    : [];
  return content.find((part) => part.type === "text")?.text ?? "";
}

/** The next UTC midnight, as the server writes it. */
export function nextMidnightUtc(now = Date.now()): string {
  const date = new Date(now);
  return new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1)).toISOString();
}

/** A 10 s 1080p video on the standard model: 100 credits, above every confirmation threshold the tests set. */
export const STANDARD_1080P = {
  prompt: "a lighthouse at dusk",
  model: "vendor-video-2-0",
  resolution: "1080p",
  duration: 10,
};
