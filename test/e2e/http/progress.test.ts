/**
 * Progress over Streamable HTTP: a call that asks for progress is answered as an SSE stream carrying its
 * progress notifications (the first naming the video_id) and then its result; one that does not is a single
 * JSON answer. Seen through the SDK's client and on the wire. Against the built bin and a quick sandbox.
 * Needs `npm run build`.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Progress } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../../src/sandbox/index.js";
import type { SandboxHandle } from "../../../src/sandbox/types.js";
import { callTool, tempRoot } from "../../helpers/http-calls.js";
import { connectHttp, post, startHttpBin, type HttpServerProcess } from "../../helpers/http.js";

let sandbox: SandboxHandle;
let root: Awaited<ReturnType<typeof tempRoot>>;
let server: HttpServerProcess;
let client: Client;

beforeAll(async () => {
  sandbox = await startSandbox({ timings: { queuedMs: 200, processingMs: 800 } });
  root = await tempRoot("http-progress-");
  server = await startHttpBin([], {
    HOME: root.dir,
    GENERATION_STATE_DIR: `${root.dir}/state`,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_POLL_INTERVAL_MS: "200",
  });
  client = await connectHttp(server.url, sandbox.keys.paid);
});
afterAll(async () => {
  await client?.close();
  await server?.stop();
  await sandbox?.close();
  await root?.remove();
});

/** One JSON-RPC tools/call, sent raw: the stateless server needs no `initialize` first. */
function toolsCall(id: number, args: Record<string, unknown>, progressToken?: string): string {
  return JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: {
      name: "generate_video",
      arguments: args,
      ...(progressToken !== undefined && { _meta: { progressToken } }),
    },
  });
}

/** The JSON-RPC messages of an SSE body, in order. */
function sseMessages(body: string): Array<Record<string, unknown>> {
  return body
    .split("\n")
    .filter((line) => line.startsWith("data: "))
    .map((line) => JSON.parse(line.slice("data: ".length)) as Record<string, unknown>);
}

describe("progress over Streamable HTTP", () => {
  it("reaches the SDK client's onprogress while generate_video waits, the first naming the video_id", async () => {
    const updates: Progress[] = [];
    const { result, structured } = await callTool(
      client,
      "generate_video",
      { prompt: "a tram in the rain", duration: 2 },
      (progress) => updates.push(progress),
    );
    expect(result.isError).toBeFalsy();
    const videoId = String(structured["video_id"]);
    expect(structured).toMatchObject({ status: "completed", video_url: expect.stringMatching(/^http/) });
    // Started, then one per status poll of a 1 s task polled every 200 ms.
    expect(updates.length).toBeGreaterThanOrEqual(3);
    expect(updates[0]?.message).toContain(videoId);
    expect(updates.map((update) => update.progress)).toEqual(updates.map((_, index) => index + 1));
  });

  it("answers a tools/call with a progressToken as text/event-stream: progress, then the result", async () => {
    const answer = await post(server.url, toolsCall(7, { prompt: "a ferry", duration: 2 }, "raw-progress"), {
      authorization: `Bearer ${sandbox.keys.paid}`,
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const messages = sseMessages(answer.text);
    const progress = messages.filter((message) => message["method"] === "notifications/progress");
    expect(progress.length).toBeGreaterThanOrEqual(2);
    for (const message of progress) {
      expect(message).toMatchObject({ params: { progressToken: "raw-progress" } });
    }
    const last = messages.at(-1) as { id?: number; result?: { structuredContent?: Record<string, unknown> } };
    expect(last.id).toBe(7);
    const videoId = String(last.result?.structuredContent?.["video_id"]);
    expect(last.result?.structuredContent).toMatchObject({ status: "completed" });
    expect(JSON.stringify(progress[0])).toContain(videoId);
  });

  it("answers the same call without a progressToken as one application/json message", async () => {
    const answer = await post(server.url, toolsCall(8, { prompt: "a bridge", duration: 2 }), {
      authorization: `Bearer ${sandbox.keys.paid}`,
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toMatch(/^application\/json/);
    const message = JSON.parse(answer.text) as {
      id?: number;
      result?: { structuredContent?: Record<string, unknown> };
    };
    expect(message.id).toBe(8);
    expect(message.result?.structuredContent).toMatchObject({
      status: "completed",
      video_url: expect.stringMatching(/^http/),
    });
  });
});
