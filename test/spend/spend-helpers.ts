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
