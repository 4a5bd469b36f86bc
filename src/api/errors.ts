/**
 * One error class per failure class. Each carries the code the tool result starts with, the HTTP status
 * when there was one, a next step written for the assistant, and whether the request may have been
 * processed by the service (and so may have charged credits).
 */
import { fix } from "../advice.js";

export const ERROR_CODES = [
  "unauthorized",
  "insufficient_credits",
  "paid_access_required",
  "validation_error",
  "rate_limit_exceeded",
  "internal_error",
  "upstream_error",
  "not_found",
  "budget_exceeded",
  "network_error",
  "timeout",
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

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

export class GenerationError extends Error {
  override name = "GenerationError";
  readonly code: string;
  readonly status: number | undefined;
  readonly nextStep: string;
  readonly maybeProcessed: boolean;
  readonly retryAtMs: number | undefined;
  readonly requestId: string | undefined;
  private readonly transientOverride: boolean | undefined;

  constructor(code: string, message: string, init: GenerationErrorInit = {}) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = code;
    this.status = init.status;
    this.nextStep = init.nextStep ?? defaultNextStep(code);
    this.maybeProcessed = init.maybeProcessed ?? false;
    this.retryAtMs = init.retryAtMs;
    this.requestId = init.requestId;
    this.transientOverride = init.transient;
  }

  /** Worth trying the same read again later: the service or the network failed, not the request. */
  get transient(): boolean {
    if (this.transientOverride !== undefined) return this.transientOverride;
    return (
      this.code === "network_error" ||
      this.code === "timeout" ||
      this.code === "rate_limit_exceeded" ||
      this.code === "upstream_error" ||
      this.code === "internal_error" ||
      (this.status !== undefined && (this.status === 408 || this.status >= 500))
    );
  }
}

export class UnauthorizedError extends GenerationError {
  override name = "UnauthorizedError";
  constructor(message: string, init: GenerationErrorInit = {}) {
    super("unauthorized", message, { status: 401, ...init });
  }
}

export class InsufficientCreditsError extends GenerationError {
  override name = "InsufficientCreditsError";
  constructor(message: string, init: GenerationErrorInit = {}) {
    super("insufficient_credits", message, { status: 403, ...init });
  }
}

export class PaidAccessRequiredError extends GenerationError {
  override name = "PaidAccessRequiredError";
  constructor(message: string, init: GenerationErrorInit = {}) {
    super("paid_access_required", message, { status: 403, ...init });
  }
}

/** Bad input. Raised locally before any request, or relayed from a 400 of the service. */
export class ValidationError extends GenerationError {
  override name = "ValidationError";
  constructor(message: string, init: GenerationErrorInit = {}) {
    super("validation_error", message, { status: 400, ...init });
  }
}

export class RateLimitError extends GenerationError {
  override name = "RateLimitError";
  constructor(message: string, init: GenerationErrorInit = {}) {
    super("rate_limit_exceeded", message, { status: 429, ...init });
  }
}

export class NotFoundError extends GenerationError {
  override name = "NotFoundError";
  constructor(message: string, init: GenerationErrorInit = {}) {
    super("not_found", message, { status: 404, ...init });
  }
}

export class InternalServiceError extends GenerationError {
  override name = "InternalServiceError";
  constructor(message: string, init: GenerationErrorInit = {}) {
    super("internal_error", message, init);
  }
}

export class UpstreamError extends GenerationError {
  override name = "UpstreamError";
  constructor(message: string, init: GenerationErrorInit = {}) {
    super("upstream_error", message, { status: 502, ...init });
  }
}

/** The service could not be reached, or the connection broke. */
export class NetworkError extends GenerationError {
  override name = "NetworkError";
  constructor(message: string, init: GenerationErrorInit = {}) {
    super("network_error", message, init);
  }
}

export class TimeoutError extends GenerationError {
  override name = "TimeoutError";
  constructor(message: string, init: GenerationErrorInit = {}) {
    super("timeout", message, init);
  }
}

/**
 * A spend limit of this server (GENERATION_MAX_CREDITS_PER_CALL, GENERATION_DAILY_CREDITS, or a cost the user
 * could not be asked to confirm) refused the call before anything reached the service.
 */
export class BudgetExceededError extends GenerationError {
  override name = "BudgetExceededError";
  constructor(message: string, init: GenerationErrorInit = {}) {
    super("budget_exceeded", message, { transient: false, ...init });
  }
}

/** The caller (the MCP client) cancelled; never turned into a retry. */
export class AbortedError extends Error {
  override name = "AbortError";
  constructor(message = "The operation was cancelled.") {
    super(message);
  }
}

/** Said when only the user can fix it: the assistant cannot edit the server's configuration or restart it. */
export const ASK_USER = "Ask the user to";

const NEXT_STEPS: Record<string, string> = {
  unauthorized: `${ASK_USER} ${fix("api_key")}.`,
  insufficient_credits:
    "Nothing was charged. Call get_credits to see the balance, then choose a cheaper model or a shorter duration; otherwise ask the user to top up the account.",
  paid_access_required: `Nothing was charged. Use vendor-video-1-5-pro for video (no paid plan needed), or ${ASK_USER.toLowerCase()} upgrade the account's plan.`,
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

/** A 400 the service sent: the request did reach it, so "nothing was sent" would be false. */
const SERVICE_VALIDATION_STEP =
  "The service refused the request as invalid, so nothing was charged. Fix what its message names and call again.";

/** A 413, usually from a proxy in front of the service with a body limit lower than the service's own. */
const TOO_LARGE_STEP =
  "The service (or a proxy in front of it) refused the request body as too large (HTTP 413), so nothing was charged. For an image, send a smaller file (resize or recompress it) and call again.";

/** Only the user (or the operator) can fix the base URL: its rule, and who must act. */
export const FIX_BASE_URL = `${fix("base_url")}.`;

/** A route the service does not have: the base URL is wrong, not the id. */
export function unknownRouteStep(origin: string): string {
  return `${origin} answered, but not as the generation service's API (no such route). ${ASK_USER} ${FIX_BASE_URL}`;
}

export function defaultNextStep(code: string): string {
  return NEXT_STEPS[code] ?? "Try again later; if the problem persists, check the service's status.";
}

/** Builds the right class for an error answer of the service (its envelope code wins over the status). */
export function errorFromResponse(
  status: number,
  code: string | undefined,
  message: string,
  init: GenerationErrorInit = {},
): GenerationError {
  const withStatus = { ...init, status };
  if (status === 413) return new ValidationError(message, { nextStep: TOO_LARGE_STEP, ...withStatus });
  switch (code) {
    case "unauthorized":
      return new UnauthorizedError(message, withStatus);
    case "insufficient_credits":
      return new InsufficientCreditsError(message, withStatus);
    case "paid_access_required":
      return new PaidAccessRequiredError(message, withStatus);
    case "validation_error":
      return new ValidationError(message, { nextStep: SERVICE_VALIDATION_STEP, ...withStatus });
    case "rate_limit_exceeded":
      return new RateLimitError(message, withStatus);
    case "not_found":
      return new NotFoundError(message, withStatus);
    case "internal_error":
      return new InternalServiceError(message, withStatus);
    case "upstream_error":
      return new UpstreamError(message, withStatus);
  }
  if (status === 401) return new UnauthorizedError(message, withStatus);
  if (status === 404) return new NotFoundError(message, withStatus);
  if (status === 429) return new RateLimitError(message, withStatus);
  if (status === 400 || status === 422) {
    return new ValidationError(message, { nextStep: SERVICE_VALIDATION_STEP, ...withStatus });
  }
  if (status === 408 || status === 504) return new TimeoutError(message, withStatus);
  if (status === 502 || status === 503) return new UpstreamError(message, withStatus);
  if (status === 403 && code !== undefined && /^[a-z_]{1,40}$/.test(code)) {
    return new GenerationError(code, message, withStatus);
  }
  return new InternalServiceError(message, withStatus);
}
