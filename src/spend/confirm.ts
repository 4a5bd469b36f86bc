/**
 * The cost gate at the protocol edge, before anything runs (and before a task is made of the call): a start
 * estimated above GENERATION_CONFIRM_ABOVE_CREDITS, or above GENERATION_MAX_CREDITS_PER_CALL, goes ahead only
 * once the user confirmed its cost. Asked where the client can be asked: an elicitation request in a 2025
 * session whose client declared `elicitation` (stdio; a 2025 HTTP request is stateless and cannot be asked),
 * an `input_required` result in 2026-07-28 for a client that declared it on the request (its answer counts
 * only with the `requestState` we minted for that very call: confirm-state.ts). A decline starts nothing and
 * is the user's choice, not an error; a client that cannot ask gets budget_exceeded.
 */
import {
  inputRequired,
  inputResponse,
  type ClientCapabilities,
  type Result,
  type ServerContext,
} from "@modelcontextprotocol/server";
import { BudgetExceededError } from "../api/errors.js";
import { isObject } from "../api/shapes.js";
import { fix, renderAdvice } from "../advice.js";
import type { SpendLimits } from "../config/index.js";
import type { Revision } from "../mcp/revisions.js";
import type { ServerDeps } from "../tools/define-tool.js";
import type { CallToolResult } from "../tools/result.js";
import { estimateCall, type CallEstimate } from "./estimate.js";

/** The key of the confirmation in `inputRequests` / `inputResponses` (2026-07-28). */
export const CONFIRM_KEY = "confirm_cost";
/** How long a 2025 client's user has to answer: a person reads and decides; the client may cancel sooner. */
const ELICIT_TIMEOUT_MS = 10 * 60 * 1000;

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

export type SpendGate =
  | { go: true }
  /** Answer this instead: a confirmation request (2026-07-28) or the user's decline. */
  | { answer: Result; declined?: boolean }
  /** Refused before anything was sent: budget_exceeded. */
  | { refused: CallToolResult };

export interface GateInput {
  tool: string;
  data: unknown;
  deps: ServerDeps;
  revision: Revision;
  ctx: ServerContext;
  /** What the 2025 client declared at `initialize`; undefined where none is known (2025 over HTTP). */
  clientCapabilities: ClientCapabilities | undefined;
}

export async function checkSpend(input: GateInput): Promise<SpendGate> {
  const limits = input.deps.config.spend;
  const estimate = estimateCall(input.tool, input.data);
  if (limits === undefined || estimate === undefined) return { go: true };
  const reason = confirmationReason(estimate, limits);
  if (reason === undefined) return { go: true };
  const message = `Start ${estimate.what} for about ${estimate.credits} credits?`;
  if (input.revision.era === "modern") {
    const question = {
      callerId: input.deps.callerId,
      tool: input.tool,
      data: input.data,
      credits: estimate.credits,
    };
    const states = input.deps.confirmStates;
    // An answer without our requestState for this very call answers nothing we asked: a client could
    // otherwise approve its own cost on its first call.
    const view = (await states.verify(input.ctx.mcpReq.requestState(), question, input.ctx))
      ? inputResponse(input.ctx.mcpReq.inputResponses, CONFIRM_KEY)
      : undefined;
    if (view?.kind === "elicit")
      return view.action === "accept" && confirmed(view.content) ? { go: true } : declined(input, estimate);
    if (!formElicitation(modernCapabilities(input.ctx)?.elicitation)) return refuse(input, estimate, reason);
    const asked = inputRequired({
      inputRequests: {
        [CONFIRM_KEY]: inputRequired.elicit({ mode: "form", message, requestedSchema: REQUESTED_SCHEMA }),
      },
      requestState: await states.mint(question),
    });
    return { answer: asked as unknown as Result };
  }
  if (!formElicitation(input.clientCapabilities?.elicitation)) return refuse(input, estimate, reason);
  let answer: { action?: unknown; content?: unknown };
  try {
    answer = await input.ctx.mcpReq.send(
      {
        method: "elicitation/create",
        params: {
          // The `mode` field came with 2025-11-25; an earlier client knows form mode only.
          ...(input.revision.version === "2025-11-25" && { mode: "form" }),
          message,
          requestedSchema: REQUESTED_SCHEMA,
        },
      },
      { timeout: ELICIT_TIMEOUT_MS, signal: input.ctx.mcpReq.signal },
    );
  } catch (error) {
    if (input.ctx.mcpReq.signal.aborted) throw error;
    input.deps.logger.warning("The cost confirmation could not be asked", { error: String(error) });
    return refuse(input, estimate, reason, "the client did not complete the confirmation request");
  }
  return answer.action === "accept" && confirmed(answer.content) ? { go: true } : declined(input, estimate);
}

type Reason = { kind: "cap"; limit: number } | { kind: "confirm"; limit: number };

function confirmationReason(estimate: CallEstimate, limits: SpendLimits): Reason | undefined {
  const { maxCreditsPerCall: cap, confirmAboveCredits: confirm } = limits;
  if (cap !== undefined && estimate.credits > cap) return { kind: "cap", limit: cap };
  if (confirm !== undefined && estimate.credits > confirm) return { kind: "confirm", limit: confirm };
  return undefined;
}

function confirmed(content: unknown): boolean {
  return isObject(content) && content["confirm"] === true;
}

/** Form mode: an `elicitation` capability that is empty (form implied) or names `form`. */
function formElicitation(capability: unknown): boolean {
  if (!isObject(capability)) return false;
  return Object.keys(capability).length === 0 || capability["form"] !== undefined;
}

function modernCapabilities(ctx: ServerContext): ClientCapabilities | undefined {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const capabilities = envelope?.["io.modelcontextprotocol/clientCapabilities"];
  return isObject(capabilities) ? (capabilities as ClientCapabilities) : undefined;
}

function refuse(input: GateInput, estimate: CallEstimate, reason: Reason, why?: string): SpendGate {
  const limit =
    reason.kind === "cap"
      ? `above this server's per-call limit of ${reason.limit} credits (GENERATION_MAX_CREDITS_PER_CALL)`
      : `above ${reason.limit} credits, where this server asks the user to confirm the cost first (GENERATION_CONFIRM_ABOVE_CREDITS)`;
  const cannot = why ?? "this client cannot ask the user to confirm it (it does not support elicitation)";
  const error = new BudgetExceededError(
    `${input.tool} of ${estimate.what} is estimated at ${estimate.credits} credits, ${limit}, and ${cannot}.`,
    {
      nextStep: `Nothing was sent to the service and nothing was charged. Choose a cheaper request (a shorter duration, a lower resolution or the lite model; dry_run: true shows the cost), or ask the user to ${fix("spend_limits")}.`,
    },
  );
  const text = input.deps.redactor.text(renderAdvice(describe(error), input.deps.advice));
  return { refused: { isError: true, content: [{ type: "text", text }] } };
}

function describe(error: BudgetExceededError): string {
  return `${error.code}: ${error.message}\nNext step: ${error.nextStep}`;
}

/** The user said no (or dismissed the question): nothing started, and not an error of anyone's. */
function declined(input: GateInput, estimate: CallEstimate): SpendGate {
  const nextStep =
    "Do not start it again unless the user asks for it; offer a cheaper request instead if that helps (dry_run: true shows the cost).";
  const text = `Declined by the user: ${estimate.what} for about ${estimate.credits} credits was not started. Nothing was sent to the service and nothing was charged.\n${nextStep}`;
  const structured = {
    declined: true,
    estimated_credits: estimate.credits,
    next_step: nextStep,
    notes: ["The user declined the cost; nothing was started and no credits were charged."],
    ...(input.tool === "generate_image" && { image_urls: [] }),
  };
  return {
    declined: true,
    answer: { content: [{ type: "text", text }], structuredContent: structured } as Result,
  };
}
