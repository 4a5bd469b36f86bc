/**
 * The cost gate, before anything runs or a task is made: a start estimated above the spend limits goes ahead
 * only once the user confirmed its cost (an elicitation in a 2025 session whose client declared it, an
 * `input_required` result in 2026-07-28); a decline starts nothing, a client that cannot ask gets
 * budget_exceeded. A 2026-07-28 answer counts only with the `requestState` minted for that very question
 * (caller, tool, arguments, estimate), with a nonce of its own, used once, and signed under a key derived
 * from the service key: the same on every replica, unknown to a caller that does not hold the key.
 */
import { createHash, hkdfSync, randomBytes } from "node:crypto";
import {
  createRequestStateCodec,
  inputRequired,
  inputResponse,
  type ClientCapabilities,
  type Result,
  type ServerContext,
} from "@modelcontextprotocol/server";
import { BudgetExceededError } from "../api/errors.js";
import { isObject } from "../api/shapes.js";
import { fix } from "../advice.js";
import type { SpendLimits } from "../config/index.js";
import type { UsedConfirmations } from "../state/records.js";
import { estimateCall, type CallEstimate } from "../spend/estimate.js";
import { canonicalJson } from "../generations/fingerprint.js";
import type { ServerDeps } from "../tools/define-tool.js";
import { errorResult, type CallToolResult } from "../tools/result.js";
import { declaredCapabilities, type Revision } from "./revisions.js";

const CONFIRM_KEY = "confirm_cost";
/** How long the user has to answer: a person reads and decides; the client may cancel sooner. */
const DECIDE_MS = 10 * 60 * 1000;
/** Far above anything minted here; a longer value is not even checked. */
const MAX_STATE_CHARS = 2048;
const CANNOT_ASK = "this client cannot ask the user to confirm it (it does not support elicitation)";

const REQUESTED_SCHEMA = {
  type: "object" as const,
  properties: {
    confirm: {
      type: "boolean" as const,
      title: "Start it",
      description: "Yes starts it and spends the credits; no starts nothing.",
      default: false,
    },
  },
  required: ["confirm"],
};

type Question = [callerId: string, tool: string, data: unknown, credits: number];

/** The states of one service key (runtime.ts); `used` keeps those answered where every replica sees them. */
export function confirmStatesFor(baseUrl: string, serviceKey: string, used: UsedConfirmations) {
  const key = new Uint8Array(
    hkdfSync("sha256", serviceKey, baseUrl, "generation-mcp cost confirmation v1", 32),
  );
  // The payload is readable by the client: `<digest of the question>.<nonce>`, never the caller's id itself.
  const codec = createRequestStateCodec<string>({ key, ttlSeconds: DECIDE_MS / 1000 });
  return {
    mint: (question: Question) =>
      codec.mint(`${digestOf(question)}.${randomBytes(12).toString("base64url")}`),
    /** Whether `state` was minted for this question, unexpired and unused; throws if its use is not kept. */
    async verify(state: unknown, question: Question, ctx: ServerContext) {
      if (typeof state !== "string" || state.length > MAX_STATE_CHARS) return false;
      // Malformed, altered or expired: no answer, whatever the reason.
      const payload = await codec.verify(state, ctx).catch(() => undefined);
      if (payload?.split(".")[0] !== digestOf(question)) return false;
      return used.use(createHash("sha256").update(state).digest("base64url"), DECIDE_MS);
    },
  };
}

export type ConfirmStates = ReturnType<typeof confirmStatesFor>;

type SpendGate =
  | { go: true }
  /** Answer this instead: a confirmation request (2026-07-28). */
  | { answer: Result }
  | { declined: CallToolResult }
  /** Refused before anything was sent: budget_exceeded. */
  | { refused: CallToolResult };

interface GateInput {
  tool: string;
  data: unknown;
  deps: ServerDeps;
  states: ConfirmStates;
  revision: Revision;
  ctx: ServerContext;
  /** What the 2025 client declared at `initialize`; undefined where none is known (2025 over HTTP). */
  clientCapabilities: ClientCapabilities | undefined;
}

/**
 * The question a checked call's cost raises under the spend limits (undefined: none), with the refusal and
 * the decline that close it; the command line (src/cli/) asks it too.
 */
export function costQuestion(tool: string, data: unknown, deps: ServerDeps) {
  const limits = deps.config.spend;
  const estimate = estimateCall(tool, data);
  if (limits === undefined || estimate === undefined) return undefined;
  const reason = confirmationReason(estimate, limits);
  if (reason === undefined) return undefined;
  return {
    estimate,
    message: `Start ${estimate.what} for about ${estimate.credits} credits?`,
    refuse: (why = CANNOT_ASK): { refused: CallToolResult } => {
      const message = `${tool} of ${estimate.what} is estimated at ${estimate.credits} credits, ${reason}, and ${why}.`;
      const nextStep = `Nothing was sent to the service and nothing was charged. Choose a cheaper request (a shorter duration, a lower resolution or the lite model; dry_run: true shows the cost), or ask the user to ${fix("spend_limits")}.`;
      const error = new BudgetExceededError(message, { nextStep });
      return { refused: errorResult(error, deps.redactor, deps.advice) };
    },
    decline: () => declined(tool, estimate),
  };
}

export async function checkSpend(input: GateInput): Promise<SpendGate> {
  const { deps, ctx } = input;
  const cost = costQuestion(input.tool, input.data, deps);
  if (cost === undefined) return { go: true };
  const { estimate, message } = cost;
  const answer = (content: unknown, accepted: boolean): SpendGate =>
    accepted && isObject(content) && content["confirm"] === true ? { go: true } : cost.decline();
  if (input.revision.era === "modern") {
    const question: Question = [deps.callerId, input.tool, input.data, estimate.credits];
    let verified: boolean;
    try {
      verified = await input.states.verify(ctx.mcpReq.requestState(), question, ctx);
    } catch (error) {
      // The answer cannot be recorded as used, so it is not taken: nothing is started.
      return { refused: errorResult(error, deps.redactor, deps.advice) };
    }
    const view = verified ? inputResponse(ctx.mcpReq.inputResponses, CONFIRM_KEY) : undefined;
    if (view?.kind === "elicit") return answer(view.content, view.action === "accept");
    if (!formElicitation(declaredCapabilities(ctx)?.elicitation)) return cost.refuse();
    const asked = inputRequired({
      inputRequests: {
        [CONFIRM_KEY]: inputRequired.elicit({ mode: "form", message, requestedSchema: REQUESTED_SCHEMA }),
      },
      requestState: await input.states.mint(question),
    });
    return { answer: asked };
  }
  if (!formElicitation(input.clientCapabilities?.elicitation)) return cost.refuse();
  try {
    const reply = await ctx.mcpReq.send(
      {
        method: "elicitation/create",
        params: {
          // The `mode` field came with 2025-11-25; an earlier client knows form mode only.
          ...(input.revision.version === "2025-11-25" && { mode: "form" }),
          message,
          requestedSchema: REQUESTED_SCHEMA,
        },
      },
      { timeout: DECIDE_MS, signal: ctx.mcpReq.signal },
    );
    return answer(reply.content, reply.action === "accept");
  } catch (error) {
    if (ctx.mcpReq.signal.aborted) throw error;
    deps.logger.warning("The cost confirmation could not be asked", { error: String(error) });
    return cost.refuse("the client did not complete the confirmation request");
  }
}

/** Which limit the estimate is above, as the refusal names it. */
function confirmationReason(estimate: CallEstimate, limits: SpendLimits): string | undefined {
  const { maxCreditsPerCall: cap, confirmAboveCredits: confirm } = limits;
  if (cap !== undefined && estimate.credits > cap)
    return `above this server's per-call limit of ${cap} credits (GENERATION_MAX_CREDITS_PER_CALL)`;
  if (confirm !== undefined && estimate.credits > confirm)
    return `above ${confirm} credits, where this server asks the user to confirm the cost first (GENERATION_CONFIRM_ABOVE_CREDITS)`;
  return undefined;
}

/** Form mode: an `elicitation` capability that is empty (form implied) or names `form`. */
function formElicitation(capability: unknown): boolean {
  return isObject(capability) && (Object.keys(capability).length === 0 || capability["form"] !== undefined);
}

/** The user said no (or dismissed the question): nothing started, and not an error of anyone's. */
function declined(tool: string, estimate: CallEstimate): { declined: CallToolResult } {
  const nextStep =
    "Do not start it again unless the user asks for it; offer a cheaper request instead if that helps (dry_run: true shows the cost).";
  const text = `Declined by the user: ${estimate.what} for about ${estimate.credits} credits was not started. Nothing was sent to the service and nothing was charged.\n${nextStep}`;
  const structuredContent = {
    declined: true,
    estimated_credits: estimate.credits,
    next_step: nextStep,
    notes: ["The user declined the cost; nothing was started and no credits were charged."],
    ...(tool === "generate_image" && { image_urls: [] }),
  };
  return { declined: { content: [{ type: "text", text }], structuredContent } };
}

/** Keys sorted at every depth: the same arguments give the same digest whatever order they came in. */
function digestOf(question: Question): string {
  return createHash("sha256").update(canonicalJson(question)).digest("base64url");
}
