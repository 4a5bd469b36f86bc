/**
 * Over Streamable HTTP, a call is cancelled either by the client's `notifications/cancelled` (a separate
 * POST, which a stateless server must tie to the running call) or by the client going away. Either way the
 * polling for that task stops, the task stays recoverable with get_status, and another client of the same
 * key, whose calls carry the same request ids, is not touched.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult, Progress } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../../src/sandbox/index.js";
import type { SandboxHandle } from "../../../src/sandbox/types.js";
import { connectHttp, startHttpAgainst, type HttpServerProcess } from "../../helpers/http.js";

const POLL_MS = 200;
let sandbox: SandboxHandle;
let server: HttpServerProcess;
let dir: string;

beforeAll(async () => {
  // Long enough that nothing finishes while a test watches the polls.
  sandbox = await startSandbox({
    timings: { queuedMs: 500, processingMs: 60_000 },
    rateLimit: { limit: 100_000, windowMs: 60_000 },
  });
  dir = await mkdtemp(path.join(tmpdir(), "generation-mcp-http-cancel-"));
  server = await startHttpAgainst(sandbox, dir, POLL_MS);
});
afterAll(async () => {
  await server?.stop();
  await sandbox?.close();
  await rm(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const textOf = (result: CallToolResult) =>
  result.content.map((part) => (part.type === "text" ? part.text : "")).join("\n");
/** Status reads of one task the sandbox has received so far. */
const pollsOf = (videoId: string) =>
  sandbox.requests.filter((r) => r.method === "GET" && r.path.endsWith(`/videos/${videoId}`)).length;

/** Starts a waiting generate_video and resolves its video_id from the first progress that names it. */
function startWait(client: Client, prompt: string, signal?: AbortSignal) {
  let announce: (id: string) => void = () => {};
  const videoId = new Promise<string>((resolve) => (announce = resolve));
  const onprogress = (progress: Progress) => {
    const id = /video_id (\S+?):/.exec(progress.message ?? "")?.[1];
    if (id !== undefined) announce(id);
  };
  const result = client.callTool({ name: "generate_video", arguments: { prompt, wait: true } }, undefined, {
    onprogress,
    ...(signal === undefined ? {} : { signal }),
    timeout: 120_000,
    resetTimeoutOnProgress: true,
  });
  // A cancelled call rejects on purpose; keep the rejection from being unhandled before the test reads it.
  result.catch(() => undefined);
  return { videoId, result };
}

/** Waits until the polls of `videoId` stop growing for a few intervals; returns the count then. */
async function pollsSettle(videoId: string): Promise<number> {
  let last = -1;
  for (let i = 0; i < 40; i++) {
    const now = pollsOf(videoId);
    if (now === last) return now;
    last = now;
    await sleep(POLL_MS * 3);
  }
  throw new Error(`polls of ${videoId} never stopped (${last})`);
}

describe("cancellation over Streamable HTTP", () => {
  it("notifications/cancelled stops the polling of that call only; the task stays recoverable", async () => {
    const key = sandbox.keys.paid;
    const a = await connectHttp(server.url, key);
    const b = await connectHttp(server.url, key);
    try {
      const controller = new AbortController();
      const first = startWait(a, "a lighthouse in fog, cancelled", controller.signal);
      const second = startWait(b, "a lighthouse in fog, kept");
      const [idA, idB] = await Promise.all([first.videoId, second.videoId]);
      expect(idA).not.toBe(idB);
      // Both calls were a client's second request: the same JSON-RPC id, on the same key.
      controller.abort("the user changed their mind");
      await expect(first.result).rejects.toThrow();

      const settled = await pollsSettle(idA);
      const before = pollsOf(idB);
      await sleep(POLL_MS * 6);
      expect(pollsOf(idA)).toBe(settled);
      // The other client's wait on the same key, with the same request id, still polls.
      expect(pollsOf(idB)).toBeGreaterThan(before);

      const status = (await a.callTool({
        name: "get_status",
        arguments: { video_id: idA },
      })) as CallToolResult;
      expect(status.isError ?? false, textOf(status)).toBe(false);
      expect(status.structuredContent).toMatchObject({ video_id: idA });
      expect(["queued", "processing"]).toContain((status.structuredContent as { status?: string }).status);
    } finally {
      await Promise.allSettled([a.close(), b.close()]);
    }
  });

  it("a client that disconnects mid-wait cancels it: polling stops, the task is recoverable", async () => {
    const key = sandbox.keys.paid;
    const leaving = await connectHttp(server.url, key);
    const { videoId } = startWait(leaving, "a harbour at dawn, client leaves");
    const id = await videoId;
    await sleep(POLL_MS * 2);
    expect(pollsOf(id)).toBeGreaterThan(0);
    // Closing the transport aborts the open POST: the server sees the connection end.
    await leaving.close();

    const settled = await pollsSettle(id);
    await sleep(POLL_MS * 6);
    expect(pollsOf(id)).toBe(settled);

    const other = await connectHttp(server.url, key);
    try {
      const status = (await other.callTool({
        name: "get_status",
        arguments: { video_id: id },
      })) as CallToolResult;
      expect(status.isError ?? false, textOf(status)).toBe(false);
      expect(status.structuredContent).toMatchObject({ video_id: id });
    } finally {
      await other.close();
    }
  });

  it("a cancel from another key does not touch a running call", async () => {
    const owner = await connectHttp(server.url, sandbox.keys.paid);
    try {
      const wait = startWait(owner, "a quiet forest, not cancellable by strangers");
      const id = await wait.videoId;
      const sessionId = (owner.transport as { sessionId?: string } | undefined)?.sessionId;
      expect(sessionId).toMatch(/^[0-9a-f-]{36}$/);
      // A stranger who knows the session id and the request id, but not the key.
      const response = await fetch(server.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          authorization: `Bearer ${sandbox.keys.free}`,
          "mcp-session-id": sessionId ?? "",
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          method: "notifications/cancelled",
          params: { requestId: 1, reason: "not yours" },
        }),
      });
      expect(response.status).toBe(202);
      const before = pollsOf(id);
      await sleep(POLL_MS * 6);
      expect(pollsOf(id)).toBeGreaterThan(before);
    } finally {
      await owner.close();
    }
  });
});
