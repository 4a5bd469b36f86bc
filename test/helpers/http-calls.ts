/** Small conveniences for the Streamable HTTP end-to-end tests (test/e2e/http/*). */
import { createHash } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult, Progress } from "@modelcontextprotocol/sdk/types.js";
import { expect } from "vitest";

export interface ToolAnswer {
  result: CallToolResult;
  /** The text content items, joined. */
  text: string;
  structured: Record<string, unknown>;
}

/** Calls a tool through the SDK client, with a timeout long enough for a wait on a slow machine. */
export async function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
  onprogress?: (progress: Progress) => void,
): Promise<ToolAnswer> {
  const result = (await client.callTool({ name, arguments: args }, undefined, {
    timeout: 60_000,
    ...(onprogress && { onprogress }),
  })) as CallToolResult;
  const text = result.content.map((part) => (part.type === "text" ? part.text : "")).join("\n");
  return { result, text, structured: result.structuredContent ?? {} };
}

/** The tools a signed-in caller is offered: the five of every session, among any others. */
export function expectTheTools(tools: Array<{ name: string }>): void {
  expect(tools.map((tool) => tool.name)).toEqual(
    expect.arrayContaining(["generate_video", "generate_image", "get_status", "list_videos", "get_credits"]),
  );
}

/** Hex SHA-256, the form GENERATION_HTTP_TOKENS lists accepted tokens in. */
export function sha256Hex(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** A fresh temporary folder, and a way to remove it. */
export async function tempRoot(prefix: string): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}
