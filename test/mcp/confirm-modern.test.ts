/**
 * Confirmation of a cost in revision 2026-07-28, through the built bin over HTTP with the SDK's own v2 client
 * pinned to that revision: the server answers `input_required` with an embedded form elicitation, the client
 * fulfils it with its elicitation handler and retries; an accept starts the video, a decline starts nothing
 * and sends nothing to the service. A client that did not declare elicitation gets budget_exceeded.
 *
 * An answer counts only with the `requestState` the server minted when it asked, for that caller, tool,
 * arguments and estimate (by hand over HTTP, against a gateway with two tokens in front of one key, limits
 * 30 per call / confirm above 20): an unasked accept or decline, a state for other arguments or another
 * caller, and an altered state are no answer; the sandbox's request log proves nothing was started.
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { sha256Hex, tempRoot } from "../helpers/http-calls.js";
import { startHttpAgainst, type HttpServerProcess } from "../helpers/http.js";
import {
  STANDARD_1080P as STANDARD_VIDEO,
  expectAcceptedStart,
  modernCall,
  startRequestsBy,
  textOf,
} from "../spend/spend-helpers.js";

let sandbox: SandboxHandle;
let root: Awaited<ReturnType<typeof tempRoot>>;
let server: HttpServerProcess;
/** Gateway mode, GENERATION_MAX_CREDITS_PER_CALL=30 and GENERATION_CONFIRM_ABOVE_CREDITS=20. */
let gated: HttpServerProcess;
let accounts = 0;

const GATEWAY_KEY = "sk-modern-gateway";
const TOKEN_A = "tok-modern-alice-5d1f0c8e27";
const TOKEN_B = "tok-modern-bob-92ae4b7c10";

beforeAll(async () => {
  [sandbox, root] = await Promise.all([
    startSandbox({
      timings: { queuedMs: 60_000, processingMs: 60_000 },
      rateLimit: { limit: 100_000, windowMs: 60_000 },
      accounts: [...Array.from({ length: 6 }, (_, index) => `sk-modern-${index}`), GATEWAY_KEY].map(
        (key) => ({
          key,
          name: key,
          credits: 10_000,
          paidAccess: true,
          subscription: "pro",
        }),
      ),
    }),
    tempRoot("generation-mcp-confirm-modern-"),
  ]);
  [server, gated] = await Promise.all([
    startHttpAgainst(sandbox, root.dir, 100, { GENERATION_CONFIRM_ABOVE_CREDITS: "50" }),
    startHttpAgainst(sandbox, `${root.dir}/gated`, 100, {
      GENERATION_API_KEY: GATEWAY_KEY,
      GENERATION_HTTP_TOKENS: `${sha256Hex(TOKEN_A)},${sha256Hex(TOKEN_B)}`,
      GENERATION_MAX_CREDITS_PER_CALL: "30",
      GENERATION_CONFIRM_ABOVE_CREDITS: "20",
    }),
  ]);
}, 30_000);

afterAll(async () => {
  await Promise.all([server?.stop(), gated?.stop()]);
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
      expectAcceptedStart(result, asked, sandbox, key);
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

describe("an answer counts only for the question the server asked (2026-07-28, requestState)", () => {
  const ACCEPT = { confirm_cost: { action: "accept", content: { confirm: true } } };
  /** 10 s on the lite model: 50 credits, above the per-call limit of 30. */
  const LITE_10S = { prompt: "a kite over the dunes", duration: 10, wait: false };
  let prompts = 0;
  /** Fresh arguments each time, so the duplicate guard never answers in the server's place. */
  const lite = (extra: Record<string, unknown> = {}) => ({
    ...LITE_10S,
    prompt: `${LITE_10S.prompt} #${prompts++}`,
    ...extra,
  });
  const starts = () => startRequestsBy(sandbox, GATEWAY_KEY);

  function call(
    token: string,
    args: Record<string, unknown>,
    extra: Record<string, unknown>,
    declares: { elicitation?: boolean; tasks?: boolean },
  ) {
    return modernCall(
      gated.url,
      token,
      "tools/call",
      { name: "generate_video", arguments: args, ...extra },
      declares,
    );
  }

  /** The first leg, honestly: input_required with the question and the state that goes with it. */
  async function ask(token: string, args: Record<string, unknown>): Promise<string> {
    const asked = await call(token, args, {}, { elicitation: true });
    expect(asked).toMatchObject({
      resultType: "input_required",
      inputRequests: { confirm_cost: { method: "elicitation/create" } },
      requestState: expect.any(String),
    });
    return String(asked?.["requestState"]);
  }

  function expectBudgetExceeded(result: Record<string, unknown> | undefined) {
    expect(result?.["isError"], JSON.stringify(result)).toBe(true);
    expect(textOf(result)).toMatch(/^budget_exceeded: generate_video of a 10 s video .* 50 credits/);
  }

  it("refuses a first call that carries an accept nobody asked for, from a client that cannot be asked", async () => {
    const before = starts();
    for (let attempt = 0; attempt < 5; attempt++) {
      const result = await call(TOKEN_A, lite(), { inputResponses: ACCEPT }, {});
      expectBudgetExceeded(result);
    }
    // An unasked decline is no answer either: the client cannot be asked, so budget_exceeded.
    expectBudgetExceeded(
      await call(TOKEN_A, lite(), { inputResponses: { confirm_cost: { action: "decline" } } }, {}),
    );
    expect(starts() - before).toBe(0);
  });

  it("refuses it in the tasks form too: no task runs and nothing is sent", async () => {
    const before = starts();
    for (let attempt = 0; attempt < 2; attempt++) {
      const answer = await call(TOKEN_A, lite({ wait: true }), { inputResponses: ACCEPT }, { tasks: true });
      // Refused before anything ran: a task that has ended at once with budget_exceeded, never a working one.
      expect(answer, JSON.stringify(answer)).toMatchObject({ resultType: "task", status: "completed" });
      expect(String(answer?.["statusMessage"])).toMatch(/^budget_exceeded: /);
    }
    expect(starts() - before).toBe(0);
  });

  it("asks a client that can be asked instead of taking its unasked accept", async () => {
    const before = starts();
    for (const declares of [{ elicitation: true }, { elicitation: true, tasks: true }]) {
      const answer = await call(TOKEN_A, lite({ wait: true }), { inputResponses: ACCEPT }, declares);
      expect(answer, JSON.stringify(answer)).toMatchObject({
        resultType: "input_required",
        inputRequests: {
          confirm_cost: { params: { message: expect.stringMatching(/for about 50 credits\?$/) } },
        },
      });
      expect(answer).not.toHaveProperty("taskId");
    }
    expect(starts() - before).toBe(0);
  });

  it("starts exactly one video for the honest round trip: asked, then the accept with the echoed state", async () => {
    const args = lite();
    const before = starts();
    const state = await ask(TOKEN_A, args);
    expect(starts() - before).toBe(0);
    const result = await call(
      TOKEN_A,
      args,
      { inputResponses: ACCEPT, requestState: state },
      { elicitation: true },
    );
    expect(result?.["isError"], textOf(result)).toBeUndefined();
    expect(result).toMatchObject({
      structuredContent: { estimated_credits: 50, video_id: expect.any(String) },
    });
    expect(starts() - before).toBe(1);
    // A decline to a question we asked stays the user's choice.
    const other = lite();
    const declined = await call(
      TOKEN_A,
      other,
      { inputResponses: { confirm_cost: { action: "decline" } }, requestState: await ask(TOKEN_A, other) },
      { elicitation: true },
    );
    expect(declined?.["isError"]).toBeUndefined();
    expect(textOf(declined)).toMatch(/^Declined by the user: /);
    expect(starts() - before).toBe(1);
  });

  it("takes a state minted for other arguments or another caller as no answer", async () => {
    const args = lite();
    const before = starts();
    const state = await ask(TOKEN_A, args);
    // Other arguments (12 s instead of 10 s): asked again, nothing started.
    const longer = await call(
      TOKEN_A,
      { ...args, duration: 12 },
      { inputResponses: ACCEPT, requestState: state },
      { elicitation: true },
    );
    expect(longer).toMatchObject({ resultType: "input_required" });
    // Another caller of the same key echoing A's state: refused where it cannot be asked, asked where it can.
    expectBudgetExceeded(await call(TOKEN_B, args, { inputResponses: ACCEPT, requestState: state }, {}));
    const asB = await call(
      TOKEN_B,
      args,
      { inputResponses: ACCEPT, requestState: state },
      { elicitation: true },
    );
    expect(asB).toMatchObject({ resultType: "input_required" });
    expect(starts() - before).toBe(0);
    // The state itself was good: for its own caller and arguments it is the answer.
    const own = await call(TOKEN_A, args, { inputResponses: ACCEPT, requestState: state }, {});
    expect(own?.["isError"], textOf(own)).toBeUndefined();
    expect(starts() - before).toBe(1);
  });

  it("gives the same question asked twice in one second two states, so the second answer counts", async () => {
    const args = lite();
    const before = starts();
    const expiry = (state: string) =>
      (JSON.parse(Buffer.from(String(state.split(".")[1]), "base64url").toString("utf8")) as { exp: number })
        .exp;
    // The codec's expiry is in whole seconds: ask until both questions fell in the same one.
    let pair: string[] = [];
    for (let attempt = 0; attempt < 5 && new Set(pair.map(expiry)).size !== 1; attempt++) {
      pair = await Promise.all([ask(TOKEN_A, args), ask(TOKEN_A, args)]);
    }
    expect(new Set(pair.map(expiry)).size).toBe(1);
    expect(pair[0]).not.toBe(pair[1]);
    // The user declines the first question, then accepts the second: the second answer is the one that counts.
    const [first, second] = pair as [string, string];
    const declined = await call(
      TOKEN_A,
      args,
      { inputResponses: { confirm_cost: { action: "decline" } }, requestState: first },
      { elicitation: true },
    );
    expect(textOf(declined)).toMatch(/^Declined by the user: /);
    const accepted = await call(
      TOKEN_A,
      args,
      { inputResponses: ACCEPT, requestState: second },
      { elicitation: true },
    );
    expect(accepted?.["isError"], JSON.stringify(accepted)).toBeUndefined();
    expect(accepted).toMatchObject({ structuredContent: { video_id: expect.any(String) } });
    expect(starts() - before).toBe(1);
  });

  it("takes an altered or made-up state as no answer", async () => {
    const args = lite();
    const before = starts();
    const state = await ask(TOKEN_A, args);
    const [prefix, body, mac] = state.split(".");
    const envelope = JSON.parse(Buffer.from(String(body), "base64url").toString("utf8")) as { exp: number };
    const later = Buffer.from(JSON.stringify({ ...envelope, exp: envelope.exp + 3600 })).toString(
      "base64url",
    );
    const forged = [
      `${prefix}.${later}.${mac}`,
      `${prefix}.${body}.${String(mac).slice(0, -2)}AA`,
      "v1.e30.AAAA",
      "not a state",
    ];
    for (const requestState of forged) {
      expectBudgetExceeded(await call(TOKEN_A, args, { inputResponses: ACCEPT, requestState }, {}));
    }
    expect(starts() - before).toBe(0);
  });
});
