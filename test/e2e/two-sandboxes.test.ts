/**
 * Two `--sandbox` servers at once (a demo beside a desktop client, two Claude Code sessions) sharing one
 * home and state folder: neither ever hands back a task of the other's sandbox, and nothing of either is
 * left in the state folder.
 */
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectStdio, type StdioSession } from "../helpers/stdio.js";

let home: string;
const sessions: StdioSession[] = [];

beforeAll(async () => {
  home = await mkdtemp(path.join(tmpdir(), "generation-mcp-two-sandboxes-"));
  const env = {
    HOME: home,
    GENERATION_STATE_DIR: path.join(home, "state"),
    GENERATION_POLL_INTERVAL_MS: "200",
  };
  sessions.push(await connectStdio(["--sandbox"], env), await connectStdio(["--sandbox"], env));
}, 30_000);

afterAll(async () => {
  await Promise.all(sessions.map((session) => session.close()));
  await rm(home, { recursive: true, force: true });
});

const call = async (session: StdioSession, name: string, args: Record<string, unknown>) =>
  (await session.client.callTool({ name, arguments: args }, undefined, {
    timeout: 30_000,
  })) as CallToolResult;

describe("two sandbox servers sharing a state folder", () => {
  it("each starts its own task for the same request and can follow it", async () => {
    const [a, b] = sessions as [StdioSession, StdioSession];
    const first = await call(a, "generate_video", { prompt: "the same words", wait: false });
    const second = await call(b, "generate_video", { prompt: "the same words", wait: false });
    expect(first.isError).toBeFalsy();
    expect(second.isError).toBeFalsy();
    const one = first.structuredContent as { video_id: string; reused?: boolean };
    const two = second.structuredContent as { video_id: string; reused?: boolean };
    expect(two.reused).toBeUndefined();
    expect(two.video_id).not.toBe(one.video_id);
    for (const [session, id] of [
      [a, one.video_id],
      [b, two.video_id],
    ] as const) {
      const status = await call(session, "get_status", { video_id: id });
      expect(status.isError, JSON.stringify(status.content)).toBeFalsy();
    }
    // Each still reuses its own identical task.
    const again = (await call(b, "generate_video", { prompt: "the same words", wait: false }))
      .structuredContent as { video_id: string; reused?: boolean };
    expect(again).toMatchObject({ video_id: two.video_id, reused: true });
    expect(await readdir(path.join(home, "state")).catch(() => [])).toEqual([]);
  });
});
