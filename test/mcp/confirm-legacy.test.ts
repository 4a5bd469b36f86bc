/**
 * Confirmation of a cost and the per-call cap through the built bin over stdio, in a 2025-11-25 session with
 * the SDK's v1 client: a client that declared elicitation is asked ("Start a 10 s 1080p video on
 * vendor-video-2-0 for about 100 credits?") and its answer decides; a decline sends nothing and is the user's
 * choice, not an error; a client that cannot be asked gets budget_exceeded with the setting to change; a call
 * above GENERATION_MAX_CREDITS_PER_CALL never reaches the service unless the user confirms it (an answer the
 * client puts in its own request, 2026-07-28 style, is not a confirmation in a 2025 session).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  CallToolResultSchema,
  ElicitRequestSchema,
  type CallToolResult,
  type ElicitResult,
} from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { connectStdio, type StdioSession } from "../helpers/stdio.js";
import {
  STANDARD_1080P as STANDARD_VIDEO,
  expectAcceptedStart,
  startRequestsBy,
  textOf,
} from "../spend/spend-helpers.js";

let sandbox: SandboxHandle;
let root: string;
let accounts = 0;

beforeAll(async () => {
  sandbox = await startSandbox({
    timings: { queuedMs: 60_000, processingMs: 60_000 },
    accounts: Array.from({ length: 10 }, (_, index) => ({
      key: `sk-confirm-${index}`,
      name: `confirm-${index}`,
      credits: 10_000,
      paidAccess: true,
      subscription: "pro",
    })),
  });
  root = await mkdtemp(path.join(tmpdir(), "generation-mcp-confirm-"));
});

afterAll(async () => {
  await sandbox?.close();
  await rm(root, { recursive: true, force: true });
});

/** A server with its own account and state, and a client that answers elicitations with `answer`. */
async function serve(
  env: Record<string, string>,
  answer: ((message: string) => ElicitResult) | undefined,
): Promise<{ session: StdioSession; key: string; asked: string[] }> {
  const key = `sk-confirm-${accounts++}`;
  const session = await connectStdio(
    [],
    {
      HOME: root,
      GENERATION_API_KEY: key,
      GENERATION_BASE_URL: sandbox.baseUrl,
      GENERATION_STATE_DIR: path.join(root, key),
      ...env,
    },
    answer === undefined ? {} : { elicitation: { form: {} } },
  );
  const asked: string[] = [];
  if (answer !== undefined) {
    session.client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params.message);
      expect("requestedSchema" in request.params ? request.params.requestedSchema : undefined).toMatchObject({
        type: "object",
        properties: { confirm: { type: "boolean" } },
      });
      return answer(request.params.message);
    });
  }
  return { session, key, asked };
}

const STANDARD_1080P = { ...STANDARD_VIDEO, wait: false };

describe("confirming a cost (2025-11-25, elicitation)", () => {
  it("asks, and starts the video once the user accepts", async () => {
    const { session, key, asked } = await serve({ GENERATION_CONFIRM_ABOVE_CREDITS: "50" }, () => ({
      action: "accept",
      content: { confirm: true },
    }));
    try {
      const result = (await session.client.callTool({
        name: "generate_video",
        arguments: STANDARD_1080P,
      })) as CallToolResult;
      expectAcceptedStart(result, asked, sandbox, key);
      // Below the threshold nobody is asked.
      const cheap = await session.client.callTool({
        name: "generate_video",
        arguments: { prompt: "a cheap one", duration: 5, wait: false },
      });
      expect(cheap.isError).toBeFalsy();
      expect(asked).toHaveLength(1);
      expect(startRequestsBy(sandbox, key)).toBe(2);
    } finally {
      await session.close();
    }
  });

  for (const action of ["decline", "cancel"] as const) {
    it(`reports a ${action} as the user's choice and sends nothing to the service`, async () => {
      const { session, key, asked } = await serve({ GENERATION_CONFIRM_ABOVE_CREDITS: "50" }, () => ({
        action,
      }));
      try {
        const result = (await session.client.callTool({
          name: "generate_video",
          arguments: STANDARD_1080P,
        })) as CallToolResult;
        expect(asked).toHaveLength(1);
        expect(result.isError).toBeFalsy();
        expect(textOf(result)).toMatch(/^Declined by the user: a 10 s 1080p video on vendor-video-2-0/);
        expect(textOf(result)).toContain("nothing was charged");
        expect(result.structuredContent).toMatchObject({ declined: true, estimated_credits: 100 });
        expect(startRequestsBy(sandbox, key)).toBe(0);
      } finally {
        await session.close();
      }
    });
  }

  it("treats an accepted form whose box is not ticked as a decline", async () => {
    const { session, key } = await serve({ GENERATION_MAX_CREDITS_PER_CALL: "4" }, () => ({
      action: "accept",
      content: { confirm: false },
    }));
    try {
      const result = (await session.client.callTool({
        name: "generate_image",
        arguments: { prompt: "a red square" },
      })) as CallToolResult;
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({ declined: true, image_urls: [] });
      expect(startRequestsBy(sandbox, key)).toBe(0);
    } finally {
      await session.close();
    }
  });
});

describe("GENERATION_MAX_CREDITS_PER_CALL", () => {
  it("refuses a call above the cap for a client that cannot be asked, before anything reaches the service", async () => {
    const { session, key } = await serve({ GENERATION_MAX_CREDITS_PER_CALL: "30" }, undefined);
    try {
      const result = (await session.client.callTool({
        name: "generate_video",
        arguments: { prompt: "too long for the cap", duration: 10, wait: false },
      })) as CallToolResult;
      expect(result.isError).toBe(true);
      const text = textOf(result);
      expect(text).toMatch(/^budget_exceeded: generate_video of a 10 s video on vendor-video-1-5-pro/);
      expect(text).toContain("per-call limit of 30 credits (GENERATION_MAX_CREDITS_PER_CALL)");
      expect(text).toContain("cannot ask the user to confirm");
      // The next step names the setting the way a stdio user changes it.
      expect(text).toMatch(/Next step: .*raise GENERATION_MAX_CREDITS_PER_CALL .*MCP client configuration/);
      expect(startRequestsBy(sandbox, key)).toBe(0);
      expect(sandbox.requests.filter((request) => request.key === key)).toHaveLength(0);
      // Within the cap it starts; a dry run above it is answered (it sends nothing).
      const within = await session.client.callTool({
        name: "generate_video",
        arguments: { prompt: "within the cap", duration: 6, wait: false },
      });
      expect(within.isError).toBeFalsy();
      const dry = await session.client.callTool({
        name: "generate_video",
        arguments: { prompt: "too long for the cap", duration: 10, dry_run: true },
      });
      expect(dry.isError).toBeFalsy();
      expect(startRequestsBy(sandbox, key)).toBe(1);
    } finally {
      await session.close();
    }
  });

  it("takes no answer smuggled into a 2025 request: only the elicitation the server sends counts", async () => {
    const { session, key } = await serve({ GENERATION_MAX_CREDITS_PER_CALL: "30" }, undefined);
    try {
      const result = await session.client.request(
        {
          method: "tools/call",
          params: {
            name: "generate_video",
            arguments: { prompt: "approved by nobody", duration: 10, wait: false },
            inputResponses: { confirm_cost: { action: "accept", content: { confirm: true } } },
            requestState: "v1.e30.AAAA",
          },
        },
        CallToolResultSchema,
      );
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/^budget_exceeded: generate_video of a 10 s video/);
      expect(startRequestsBy(sandbox, key)).toBe(0);
    } finally {
      await session.close();
    }
  });

  it("refuses a call above the confirm threshold for a client without elicitation, naming how to allow it", async () => {
    const { session, key } = await serve({ GENERATION_CONFIRM_ABOVE_CREDITS: "10" }, undefined);
    try {
      const result = (await session.client.callTool({
        name: "generate_video",
        arguments: { prompt: "needs a yes", duration: 5, wait: false },
      })) as CallToolResult;
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/^budget_exceeded: /);
      expect(textOf(result)).toContain("GENERATION_CONFIRM_ABOVE_CREDITS");
      expect(textOf(result)).toContain("Next step:");
      expect(startRequestsBy(sandbox, key)).toBe(0);
    } finally {
      await session.close();
    }
  });

  it("lets the user confirm a call above the cap", async () => {
    const { session, key, asked } = await serve({ GENERATION_MAX_CREDITS_PER_CALL: "30" }, () => ({
      action: "accept",
      content: { confirm: true },
    }));
    try {
      const result = await session.client.callTool({
        name: "generate_video",
        arguments: { prompt: "worth it", duration: 10, wait: false },
      });
      expect(result.isError, textOf(result)).toBeFalsy();
      expect(asked).toEqual(["Start a 10 s video on vendor-video-1-5-pro for about 50 credits?"]);
      expect(startRequestsBy(sandbox, key)).toBe(1);
    } finally {
      await session.close();
    }
  });
});
