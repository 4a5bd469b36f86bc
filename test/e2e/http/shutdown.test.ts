/**
 * SIGTERM while ten clients wait over Streamable HTTP: the server stops taking requests, answers every
 * wait with its video_id and "still processing" (ten tasks started, ten ids returned, none lost), and the
 * process exits promptly with no stack trace.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult, Progress } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_ACCOUNTS, startSandbox } from "../../../src/sandbox/index.js";
import type { SandboxHandle } from "../../../src/sandbox/types.js";
import { connectHttp, post, startHttpAgainst, INITIALIZE } from "../../helpers/http.js";

const WAITS = 10;
const SECOND_KEY = "sk-sandbox-second-account";
let sandbox: SandboxHandle;
let dir: string;

beforeAll(async () => {
  sandbox = await startSandbox({
    timings: { queuedMs: 60_000, processingMs: 60_000 },
    rateLimit: { limit: 100_000, windowMs: 60_000 },
    accounts: [
      ...DEFAULT_ACCOUNTS,
      { key: SECOND_KEY, name: "second", credits: 10_000, paidAccess: true, subscription: "pro" },
    ],
  });
  dir = await mkdtemp(path.join(tmpdir(), "generation-mcp-http-shutdown-"));
});
afterAll(async () => {
  await sandbox?.close();
  await rm(dir, { recursive: true, force: true });
});

const textOf = (result: CallToolResult) =>
  result.content.map((part) => (part.type === "text" ? part.text : "")).join("\n");

describe("graceful shutdown over Streamable HTTP", () => {
  it(`answers ${WAITS} running waits with their video_ids, then exits`, async () => {
    const server = await startHttpAgainst(sandbox, dir, 200);
    const clients: Client[] = [];
    try {
      const announced = new Set<string>();
      const onprogress = (progress: Progress) => {
        const id = /video_id (\S+?):/.exec(progress.message ?? "")?.[1];
        if (id !== undefined) announced.add(id);
      };
      const waits: Array<Promise<CallToolResult>> = [];
      for (let i = 0; i < WAITS; i++) {
        // Half the callers share a key, half bring their own: every runtime must answer.
        const client = await connectHttp(server.url, i % 2 === 0 ? sandbox.keys.paid : SECOND_KEY);
        clients.push(client);
        waits.push(
          client.callTool(
            { name: "generate_video", arguments: { prompt: `render number ${i}`, wait: true } },
            undefined,
            { onprogress, timeout: 60_000 },
          ) as Promise<CallToolResult>,
        );
      }
      const until = Date.now() + 20_000;
      while (announced.size < WAITS && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      expect(announced.size).toBe(WAITS);

      const signalledAt = Date.now();
      server.child.kill("SIGTERM");
      const answers = await Promise.all(waits);
      const ids = answers.map((answer) => {
        expect(answer.isError ?? false, textOf(answer)).toBe(false);
        expect(textOf(answer)).toMatch(/still processing|get_status/i);
        return (answer.structuredContent as { video_id: string }).video_id;
      });
      expect(new Set(ids)).toEqual(announced);
      const created = sandbox.requests.filter((r) => r.route === "generate" && r.status === 200);
      expect(created.length).toBe(WAITS);

      // While stopping, nothing new is taken.
      const late = await post(server.url, INITIALIZE, { authorization: `Bearer ${sandbox.keys.paid}` }).catch(
        () => ({ status: 0 }),
      );
      expect([0, 503]).toContain(late.status);

      const code = await server.exited;
      expect(code).toBe(0);
      expect(Date.now() - signalledAt).toBeLessThan(8000);
      expect(server.stderr()).not.toMatch(/\n\s+at /);
      expect(server.stderr()).not.toMatch(/Unhandled|TypeError|ReferenceError/);
    } finally {
      // The server is gone: closing a client's transport rejects nothing the test still awaits.
      await Promise.allSettled(clients.map((client) => client.close().catch(() => undefined)));
      await server.stop();
    }
  }, 60_000);
});
