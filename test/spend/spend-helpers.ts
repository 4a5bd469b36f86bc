/** What the spend tests share: the sandbox's count of starts, result text, the reset time. */
import { expect } from "vitest";
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

/**
 * The answer to a generate_video of STANDARD_1080P whose cost the user was asked to confirm and accepted: the
 * one question, with the price, and one start sent for `key`.
 */
export function expectAcceptedStart(
  result: { isError?: boolean | undefined; structuredContent?: unknown },
  asked: string[],
  sandbox: SandboxHandle,
  key: string,
): void {
  expect(result.isError, textOf(result)).toBeFalsy();
  expect(asked).toEqual(["Start a 10 s 1080p video on vendor-video-2-0 for about 100 credits?"]);
  expect(result.structuredContent).toMatchObject({
    estimated_credits: 100,
    video_id: expect.any(String),
  });
  expect(startRequestsBy(sandbox, key)).toBe(1);
}

let nextId = 1;

/** One 2026-07-28 request over HTTP by hand, declaring elicitation (form) and the tasks extension as asked. */
export async function modernCall(
  url: string,
  bearer: string,
  method: string,
  params: Record<string, unknown>,
  declares: { elicitation?: boolean; tasks?: boolean } = {},
): Promise<Record<string, unknown> | undefined> {
  const envelope = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": { name: "hand-written-2026-spend", version: "1.0.0" },
    "io.modelcontextprotocol/clientCapabilities": {
      ...(declares.tasks === true && { extensions: { "io.modelcontextprotocol/tasks": {} } }),
      ...(declares.elicitation === true && { elicitation: { form: {} } }),
    },
  };
  const response = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${bearer}`,
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": method,
      "mcp-name": String(params["name"] ?? params["taskId"]),
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params: { ...params, _meta: envelope } }),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`HTTP ${response.status}: ${text}`);
  const messages = text.trim().startsWith("{")
    ? [JSON.parse(text) as Record<string, unknown>]
    : text
        .split("\n")
        .filter((line) => line.startsWith("data:") && line.slice(5).trim() !== "")
        .map((line) => JSON.parse(line.slice(5)) as Record<string, unknown>);
  const answer = messages.find((message) => "result" in message || "error" in message);
  if (answer?.["error"] !== undefined) throw new Error(`JSON-RPC error: ${JSON.stringify(answer["error"])}`);
  return answer?.["result"] as Record<string, unknown> | undefined;
}
