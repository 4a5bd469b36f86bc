/**
 * Confirmation of a cost for a call that asks for an MCP task, through the built bin against the sandbox
 * (src/mcp/tools-call.ts: the spend gate runs before a task is made of the call).
 *
 * 2025-11-25, the SDK's v1 client over stdio, `tools/call` with `params.task`, GENERATION_CONFIRM_ABOVE_CREDITS
 * below the call's estimate: the user is asked (elicitation) while the `tools/call` is open; an accept makes a
 * task that runs and completes; a decline makes a task that has ended at once with the decline as its result
 * (completed: a decline is not an error, so the SDK's callToolStream hands it over) and sends nothing to the
 * service; a client without elicitation gets a task that has ended at once, failed, with budget_exceeded.
 *
 * 2026-07-28, by hand over HTTP (the SDK's v2 client does not take `resultType: "task"`), for a client that
 * declared the tasks extension and elicitation on the request: the first answer is `input_required` (no task
 * yet, nothing sent); the retry with an accept and the echoed `requestState` is answered with a task that
 * completes; the retry with a decline is answered at once, as a complete result and no task; without
 * elicitation the call is refused with budget_exceeded (a task that has ended at once, its result inline in
 * tasks/get). The sandbox's request log proves what was sent. Needs `npm run build`.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  type CallToolResult,
  type ElicitResult,
  type Task,
} from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { startHttpAgainst, type HttpServerProcess } from "../helpers/http.js";
import { pollTask, type ModernAnswer } from "../helpers/modern.js";
import { connectStdio, type StdioSession } from "../helpers/stdio.js";
import {
  STANDARD_1080P as STANDARD_VIDEO,
  modernCall,
  startRequestsBy,
  startsBy,
  textOf,
} from "../spend/spend-helpers.js";

const POLL_MS = 200;
const CONFIRM_ABOVE = "50";
/** 100 credits: above the threshold. */
const STANDARD_1080P = { ...STANDARD_VIDEO, prompt: "a lighthouse at dusk, as a task" };
const QUESTION = "Start a 10 s 1080p video on vendor-video-2-0 for about 100 credits?";

let sandbox: SandboxHandle;
let root: string;
let http: HttpServerProcess;
let accounts = 0;

beforeAll(async () => {
  sandbox = await startSandbox({
    timings: { queuedMs: 200, processingMs: 800 },
    rateLimit: { limit: 100_000, windowMs: 60_000 },
    accounts: Array.from({ length: 12 }, (_, index) => ({
      key: `sk-confirm-task-${index}`,
      name: `confirm-task-${index}`,
      credits: 10_000,
      paidAccess: true,
      subscription: "pro",
    })),
  });
  root = await mkdtemp(path.join(tmpdir(), "generation-mcp-confirm-tasks-"));
  http = await startHttpAgainst(sandbox, path.join(root, "http"), POLL_MS, {
    GENERATION_CONFIRM_ABOVE_CREDITS: CONFIRM_ABOVE,
  });
}, 30_000);

afterAll(async () => {
  await http?.stop();
  await sandbox?.close();
  await rm(root, { recursive: true, force: true });
});

const nextKey = () => `sk-confirm-task-${accounts++}`;

/** Nothing at all of `key` reached the service's start routes. */
const nothingSent = (key: string) => expect(startRequestsBy(sandbox, key)).toBe(0);

describe("a task-augmented call above the confirm threshold (2025-11-25, SDK v1 client over stdio)", () => {
  /** A server of its own account; a client that declares tasks, and elicitation when it answers. */
  async function serve(
    answer: ElicitResult | undefined,
  ): Promise<{ session: StdioSession; key: string; asked: string[] }> {
    const key = nextKey();
    const session = await connectStdio(
      [],
      {
        HOME: root,
        GENERATION_API_KEY: key,
        GENERATION_BASE_URL: sandbox.baseUrl,
        GENERATION_STATE_DIR: path.join(root, key),
        GENERATION_POLL_INTERVAL_MS: String(POLL_MS),
        GENERATION_CONFIRM_ABOVE_CREDITS: CONFIRM_ABOVE,
      },
      answer === undefined ? { tasks: {} } : { tasks: {}, elicitation: { form: {} } },
    );
    const asked: string[] = [];
    if (answer !== undefined) {
      session.client.setRequestHandler(ElicitRequestSchema, async (request) => {
        asked.push(request.params.message);
        return answer;
      });
    }
    // The SDK validates structuredContent against the tools' output schemas once it has listed them.
    await session.client.listTools();
    return { session, key, asked };
  }

  function startTask(session: StdioSession) {
    return session.client.request(
      { method: "tools/call", params: { name: "generate_video", arguments: STANDARD_1080P, task: {} } },
      CreateTaskResultSchema,
    );
  }

  async function until(session: StdioSession, taskId: string): Promise<Task> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const task = await session.client.experimental.tasks.getTask(taskId);
      if (task.status !== "working" || Date.now() > deadline) return task;
      await new Promise((resolve) => setTimeout(resolve, task.pollInterval ?? POLL_MS));
    }
  }

  it("asks before the task is made; on accept the task starts the video and completes", async () => {
    const { session, key, asked } = await serve({ action: "accept", content: { confirm: true } });
    try {
      const { task } = await startTask(session);
      expect(asked).toEqual([QUESTION]);
      expect(task.status).toBe("working");
      expect(startsBy(sandbox, key)).toBe(1);
      const done = await until(session, task.taskId);
      expect(done.status).toBe("completed");
      const result = await session.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
      expect(result.isError, textOf(result)).toBeFalsy();
      expect(result.structuredContent).toMatchObject({
        status: "completed",
        estimated_credits: 100,
        video_url: expect.stringMatching(/^http/),
      });

      // The SDK's own task stream, end to end: asked again (a new call), created, then the result.
      const kinds: string[] = [];
      let streamed: CallToolResult | undefined;
      for await (const message of session.client.experimental.tasks.callToolStream(
        { name: "generate_video", arguments: { ...STANDARD_1080P, prompt: "a second lighthouse" } },
        CallToolResultSchema,
        { task: {} },
      )) {
        kinds.push(message.type);
        if (message.type === "result") streamed = message.result as CallToolResult;
        if (message.type === "error") throw message.error;
      }
      expect(kinds[0]).toBe("taskCreated");
      expect(kinds.at(-1)).toBe("result");
      expect(streamed?.structuredContent).toMatchObject({ status: "completed" });
      expect(asked).toEqual([QUESTION, QUESTION]);
      expect(startsBy(sandbox, key)).toBe(2);
    } finally {
      await session.close();
    }
  }, 60_000);

  for (const action of ["decline", "cancel"] as const) {
    it(`on ${action}, answers with a task that has already ended with the decline, and sends nothing`, async () => {
      const { session, key, asked } = await serve({ action });
      try {
        const { task } = await startTask(session);
        expect(asked).toEqual([QUESTION]);
        // Ended at once: the user's choice, not an error of anyone's.
        expect(task.status).toBe("completed");
        expect(task.statusMessage).toMatch(/^Declined by the user: a 10 s 1080p video on vendor-video-2-0/);
        expect((await session.client.experimental.tasks.getTask(task.taskId)).status).toBe("completed");
        const result = await session.client.experimental.tasks.getTaskResult(
          task.taskId,
          CallToolResultSchema,
        );
        expect(result.isError).toBeFalsy();
        expect(textOf(result)).toMatch(/^Declined by the user: /);
        expect(textOf(result)).toContain("Nothing was sent to the service and nothing was charged");
        expect(result.structuredContent).toMatchObject({ declined: true, estimated_credits: 100 });
        nothingSent(key);
        expect(sandbox.requests.filter((request) => request.key === key)).toEqual([]);

        // Through the SDK's task stream the model gets the decline itself, not "Task ... failed".
        const messages = [];
        for await (const message of session.client.experimental.tasks.callToolStream(
          { name: "generate_video", arguments: STANDARD_1080P },
          CallToolResultSchema,
          { task: {} },
        )) {
          messages.push(message);
        }
        const last = messages.at(-1);
        expect(last?.type, JSON.stringify(last)).toBe("result");
        expect(last?.type === "result" && textOf(last.result)).toMatch(/^Declined by the user: /);
        nothingSent(key);
      } finally {
        await session.close();
      }
    }, 30_000);
  }

  it("refuses a client without elicitation with budget_exceeded, as a task that has ended, sending nothing", async () => {
    const { session, key } = await serve(undefined);
    try {
      const { task } = await startTask(session);
      expect(task.status).toBe("failed");
      expect(task.statusMessage).toMatch(/^budget_exceeded: /);
      const result = await session.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/^budget_exceeded: generate_video of a 10 s 1080p video/);
      expect(textOf(result)).toContain("GENERATION_CONFIRM_ABOVE_CREDITS");
      expect(textOf(result)).toMatch(/Next step: .*MCP client configuration/);
      nothingSent(key);
      // Below the threshold, the same client's task starts as usual.
      const cheap = await session.client.request(
        {
          method: "tools/call",
          params: { name: "generate_video", arguments: { prompt: "cheap", duration: 5 }, task: {} },
        },
        CreateTaskResultSchema,
      );
      expect(cheap.task.status).toBe("working");
      expect(startsBy(sandbox, key)).toBe(1);
    } finally {
      await session.close();
    }
  }, 30_000);
});

describe("a call the server makes a task, above the confirm threshold (2026-07-28, over HTTP)", () => {
  /** One 2026-07-28 request declaring the tasks extension, and elicitation when `elicitation` is set. */
  const modern = (key: string, method: string, params: Record<string, unknown>, elicitation: boolean) =>
    modernCall(http.url, key, method, params, { tasks: true, elicitation });

  const callVideo = (key: string, extra: Record<string, unknown>, elicitation = true) =>
    modern(key, "tools/call", { name: "generate_video", arguments: STANDARD_1080P, ...extra }, elicitation);

  /** The first leg: input_required with the cost question, no task, nothing sent; its requestState. */
  async function asked(key: string): Promise<string> {
    const first = await callVideo(key, {});
    expect(first).toMatchObject({ resultType: "input_required", requestState: expect.any(String) });
    expect(first).not.toHaveProperty("taskId");
    const requests = first?.["inputRequests"] as Record<string, Record<string, unknown>>;
    expect(Object.keys(requests)).toEqual(["confirm_cost"]);
    expect(requests["confirm_cost"]).toMatchObject({
      method: "elicitation/create",
      params: { mode: "form", message: QUESTION },
    });
    nothingSent(key);
    return String(first?.["requestState"]);
  }

  it("asks with input_required before any task; the accepted retry becomes a task that completes", async () => {
    const key = nextKey();
    const requestState = await asked(key);
    const task = await callVideo(key, {
      inputResponses: { confirm_cost: { action: "accept", content: { confirm: true } } },
      requestState,
    });
    expect(task).toMatchObject({ resultType: "task", status: "working", taskId: expect.any(String) });
    expect(startsBy(sandbox, key)).toBe(1);
    const taskId = String(task?.["taskId"]);
    const done = await pollTask(
      async () => ({ result: await modern(key, "tasks/get", { taskId }, true) }) as ModernAnswer,
      (state) => state["status"] !== "working",
    );
    expect(done).toMatchObject({ resultType: "complete", taskId, status: "completed" });
    const result = done["result"] as CallToolResult;
    expect(result.isError, textOf(result)).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ status: "completed", estimated_credits: 100 });
    expect(startRequestsBy(sandbox, key)).toBe(1);
  }, 40_000);

  for (const action of ["decline", "cancel"] as const) {
    it(`answers the retry with a ${action} at once, as a complete result and no task, sending nothing`, async () => {
      const key = nextKey();
      const requestState = await asked(key);
      const answer = await callVideo(key, { inputResponses: { confirm_cost: { action } }, requestState });
      expect(answer).toMatchObject({
        resultType: "complete",
        structuredContent: { declined: true, estimated_credits: 100 },
      });
      expect(answer).not.toHaveProperty("taskId");
      expect(answer?.["isError"]).toBeUndefined();
      expect(textOf(answer)).toMatch(/^Declined by the user: /);
      nothingSent(key);
    });
  }

  it("refuses a client without elicitation with budget_exceeded, as a task that has ended, sending nothing", async () => {
    const key = nextKey();
    const answer = await callVideo(key, {}, false);
    // Refused before anything ran: a task that has ended at once (a tool error is a completed call in this
    // revision), its result inline in tasks/get.
    expect(answer).toMatchObject({ resultType: "task", status: "completed" });
    expect(String(answer?.["statusMessage"])).toMatch(/^budget_exceeded: /);
    const ended = await modern(key, "tasks/get", { taskId: String(answer?.["taskId"]) }, false);
    expect(ended).toMatchObject({ resultType: "complete", status: "completed" });
    const result = ended?.["result"] as Record<string, unknown> | undefined;
    expect(result?.["isError"]).toBe(true);
    expect(textOf(result)).toMatch(/^budget_exceeded: /);
    expect(textOf(result)).toContain("GENERATION_CONFIRM_ABOVE_CREDITS");
    nothingSent(key);
  });
});
