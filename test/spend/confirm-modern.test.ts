/**
 * Confirmation of a cost in revision 2026-07-28, through the built bin over HTTP with the SDK's own v2 client
 * pinned to that revision: the server answers `input_required` with an embedded form elicitation, the client
 * fulfils it with its elicitation handler and retries; an accept starts the video, a decline starts nothing
 * and sends nothing to the service. A client that did not declare elicitation gets budget_exceeded.
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { tempRoot } from "../helpers/http-calls.js";
import { startHttpAgainst, type HttpServerProcess } from "../helpers/http.js";
import { STANDARD_1080P as STANDARD_VIDEO, startRequestsBy, textOf } from "./spend-helpers.js";

let sandbox: SandboxHandle;
let root: Awaited<ReturnType<typeof tempRoot>>;
let server: HttpServerProcess;
let accounts = 0;

beforeAll(async () => {
  [sandbox, root] = await Promise.all([
    startSandbox({
      timings: { queuedMs: 60_000, processingMs: 60_000 },
      accounts: Array.from({ length: 6 }, (_, index) => ({
        key: `sk-modern-${index}`,
        name: `modern-${index}`,
        credits: 10_000,
        paidAccess: true,
        subscription: "pro",
      })),
    }),
    tempRoot("generation-mcp-confirm-modern-"),
  ]);
  server = await startHttpAgainst(sandbox, root.dir, 100, { GENERATION_CONFIRM_ABOVE_CREDITS: "50" });
});

afterAll(async () => {
  await server?.stop();
  await sandbox?.close();
  await root?.remove();
});

type Answer = { action: "accept"; content: { confirm: boolean } } | { action: "decline" | "cancel" };

/** A v2 client pinned to 2026-07-28 with its own account, answering elicitations with `answer`. */
async function connect(
  answer: Answer | undefined,
): Promise<{ client: Client; key: string; asked: string[] }> {
  const key = `sk-modern-${accounts++}`;
  const client = new Client(
    { name: "sdk-v2-spend", version: "1.0.0" },
    {
      capabilities: answer === undefined ? {} : { elicitation: { form: {} } },
      versionNegotiation: { mode: { pin: "2026-07-28" } },
    },
  );
  const asked: string[] = [];
  if (answer !== undefined) {
    client.setRequestHandler("elicitation/create", async (request) => {
      asked.push(request.params.message);
      return answer;
    });
  }
  await client.connect(
    new StreamableHTTPClientTransport(new URL(server.url), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  );
  expect(client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
  return { client, key, asked };
}

const STANDARD_1080P = { ...STANDARD_VIDEO, wait: false };

describe("confirming a cost (2026-07-28, input_required)", () => {
  it("asks through input_required and starts the video once the user accepts", async () => {
    const { client, key, asked } = await connect({ action: "accept", content: { confirm: true } });
    try {
      const result = await client.callTool({ name: "generate_video", arguments: STANDARD_1080P });
      expect(result.isError, textOf(result)).toBeFalsy();
      expect(asked).toEqual(["Start a 10 s 1080p video on vendor-video-2-0 for about 100 credits?"]);
      expect(result.structuredContent).toMatchObject({
        estimated_credits: 100,
        video_id: expect.any(String),
      });
      expect(startRequestsBy(sandbox, key)).toBe(1);
    } finally {
      await client.close();
    }
  });

  for (const action of ["decline", "cancel"] as const) {
    it(`reports a ${action} as the user's choice and sends nothing to the service`, async () => {
      const { client, key, asked } = await connect({ action });
      try {
        const result = await client.callTool({ name: "generate_video", arguments: STANDARD_1080P });
        expect(asked).toHaveLength(1);
        expect(result.isError).toBeFalsy();
        expect(textOf(result)).toMatch(/^Declined by the user: /);
        expect(result.structuredContent).toMatchObject({ declined: true, estimated_credits: 100 });
        expect(startRequestsBy(sandbox, key)).toBe(0);
        expect(
          sandbox.requests.filter((request) => request.key === key && request.route === "generate"),
        ).toEqual([]);
      } finally {
        await client.close();
      }
    });
  }

  it("refuses with budget_exceeded when the client did not declare elicitation", async () => {
    const { client, key } = await connect(undefined);
    try {
      const result = await client.callTool({ name: "generate_video", arguments: STANDARD_1080P });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/^budget_exceeded: /);
      // Over HTTP with the caller's own key, the operator's settings are not the user's to change.
      expect(textOf(result)).toContain("operator");
      expect(startRequestsBy(sandbox, key)).toBe(0);
    } finally {
      await client.close();
    }
  });
});
