/** One error class per failure class: the code a tool result starts with, status, request id, next step. */
import { fix } from "../advice.js";
import { PRICE_LIST, isUsable } from "../models.js";

export interface GenerationErrorInit {
  status?: number | undefined;
  nextStep?: string | undefined;
  /** True when the service may have acted on the request (ambiguous failure of a non-idempotent call). */
  maybeProcessed?: boolean | undefined;
  /** For 429: when the window resets, as an absolute epoch in milliseconds. */
  retryAtMs?: number | undefined;
  requestId?: string | undefined;
  /** Overrides the code's default: false for failures that a retry cannot cure (a TLS mismatch, no such host). */
  transient?: boolean | undefined;
  cause?: unknown;
}

const TRANSIENT_CODES = new Set([
  "network_error",
  "timeout",
  "rate_limit_exceeded",
  "upstream_error",
  "internal_error",
]);

export class GenerationError extends Error {
  override name = "GenerationError";
  readonly status: number | undefined;
  readonly nextStep: string;
  readonly maybeProcessed: boolean;
  readonly retryAtMs: number | undefined;
  readonly requestId: string | undefined;
  /** Worth trying the same read again later: the service or the network failed, not the request. */
  readonly transient: boolean;

  constructor(
    readonly code: string,
    message: string,
    init: GenerationErrorInit = {},
  ) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.nextStep =
      init.nextStep ??
      NEXT_STEPS[code] ??
      "Try again later; if the problem persists, check the service's status.";
    this.maybeProcessed = init.maybeProcessed ?? false;
    this.retryAtMs = init.retryAtMs;
    this.requestId = init.requestId;
    this.transient =
      init.transient ??
      (TRANSIENT_CODES.has(code) ||
        (init.status !== undefined && (init.status === 408 || init.status >= 500)));
  }
}

function errorClass(name: string, code: string, defaults: GenerationErrorInit = {}) {
  return class extends GenerationError {
    override name = name;
    constructor(message: string, init: GenerationErrorInit = {}) {
      super(code, message, { ...defaults, ...init });
    }
  };
}

export class UnauthorizedError extends errorClass("UnauthorizedError", "unauthorized", { status: 401 }) {}
export class InsufficientCreditsError extends errorClass("InsufficientCreditsError", "insufficient_credits", {
  status: 403,
}) {}
export class PaidAccessRequiredError extends errorClass("PaidAccessRequiredError", "paid_access_required", {
  status: 403,
}) {}
/** Bad input. Raised locally before any request, or relayed from a 400 of the service. */
export class ValidationError extends errorClass("ValidationError", "validation_error", { status: 400 }) {}
export class RateLimitError extends errorClass("RateLimitError", "rate_limit_exceeded", { status: 429 }) {}
export class NotFoundError extends errorClass("NotFoundError", "not_found", { status: 404 }) {}
export class InternalServiceError extends errorClass("InternalServiceError", "internal_error") {}
export class UpstreamError extends errorClass("UpstreamError", "upstream_error", { status: 502 }) {}
/** The service could not be reached, or the connection broke. */
export class NetworkError extends errorClass("NetworkError", "network_error") {}
export class TimeoutError extends errorClass("TimeoutError", "timeout") {}
/** A spend limit of this server refused the call before anything reached the service. */
export class BudgetExceededError extends errorClass("BudgetExceededError", "budget_exceeded", {
  transient: false,
}) {}

/** The caller (the MCP client) cancelled; never turned into a retry. */
export class AbortedError extends Error {
  override name = "AbortError";
  constructor(message = "The operation was cancelled.") {
    super(message);
  }
}

/** Said when only the user can fix it: the assistant cannot edit the server's configuration or restart it. */
export const ASK_USER = "Ask the user to";

// A paid_access_required refusal says the account has no paid access: the usable models follow from that.
const WITHOUT_PAID_ACCESS = PRICE_LIST.filter((model) => isUsable(model, false))
  .map((model) => model.id)
  .join(", ");

const NEXT_STEPS: Record<string, string> = {
  unauthorized: `${ASK_USER} ${fix("api_key")}.`,
  insufficient_credits:
    "Nothing was charged. Call get_credits to see the balance, then choose a cheaper model or a shorter duration; otherwise ask the user to top up the account.",
  paid_access_required: `Nothing was charged. Models this account can use: ${WITHOUT_PAID_ACCESS} (get_credits lists them with their prices); or ${ASK_USER.toLowerCase()} upgrade the account's plan.`,
  validation_error:
    "Fix the named parameter and call again; nothing was sent to the service and nothing was charged.",
  rate_limit_exceeded:
    "Nothing was charged. The service's request limit is reached: wait until the window resets, then call again.",
  budget_exceeded: `Nothing was sent to the service and nothing was charged. Choose a cheaper request (dry_run: true shows the cost), or ${ASK_USER.toLowerCase()} ${fix("spend_limits")}.`,
  not_found: "No task has that video_id for this API key. Call list_videos to find the right id.",
  internal_error:
    "The service failed internally. Try again in a minute; if it persists, the service may be down.",
  upstream_error:
    "The generation provider behind the service is failing right now. Try again in a minute; a started task keeps running.",
  network_error: `The connection to the service failed. Try again in a moment; if it keeps failing, ask the user to check their network, or to ${fix("base_url")}.`,
  timeout:
    "The service did not answer in time. Try again; if it keeps happening, the service may be overloaded.",
};

/** Every code a tool's error result may start with: each has its next step. */
export const ERROR_CODES = Object.keys(NEXT_STEPS);

type ErrorClass = new (message: string, init?: GenerationErrorInit) => GenerationError;
const BY_CODE: Record<string, ErrorClass> = {
  unauthorized: UnauthorizedError,
  insufficient_credits: InsufficientCreditsError,
  paid_access_required: PaidAccessRequiredError,
  validation_error: ValidationError,
  rate_limit_exceeded: RateLimitError,
  not_found: NotFoundError,
  internal_error: InternalServiceError,
  upstream_error: UpstreamError,
};
const BY_STATUS: Record<number, ErrorClass> = {
  400: ValidationError,
  401: UnauthorizedError,
  404: NotFoundError,
  408: TimeoutError,
  422: ValidationError,
  429: RateLimitError,
  502: UpstreamError,
  503: UpstreamError,
  504: TimeoutError,
};

/** Builds the right class for an error answer of the service (its envelope code wins over the status). */
export function errorFromResponse(
  status: number,
  code: string | undefined,
  message: string,
  init: GenerationErrorInit = {},
): GenerationError {
  // A 413 usually comes from a proxy in front of the service, with a body limit lower than the service's own.
  const Class =
    status === 413
      ? ValidationError
      : ((code !== undefined && Object.hasOwn(BY_CODE, code) ? BY_CODE[code] : undefined) ??
        BY_STATUS[status]);
  const nextStep =
    status === 413
      ? "The service (or a proxy in front of it) refused the request body as too large (HTTP 413), so nothing was charged. For an image, send a smaller file (resize or recompress it) and call again."
      : Class === ValidationError
        ? // A 400 the service sent: the request did reach it, so "nothing was sent" would be false.
          "The service refused the request as invalid, so nothing was charged. Fix what its message names and call again."
        : undefined;
  const full = { ...init, status, ...(nextStep !== undefined && { nextStep }) };
  if (Class !== undefined) return new Class(message, full);
  if (status === 403 && code !== undefined && /^[a-z_]{1,40}$/.test(code))
    return new GenerationError(code, message, full);
  return new InternalServiceError(message, full);
}
