/**
 * One answer of the service, read: its `{data, error}` envelope unwrapped into the `data` payload, or into the
 * typed error its status and code say (errors.ts), with the request id and when a rate limit resets. Raw HTML
 * or huge text is never relayed: what the service said is quoted as data, cleaned and bounded.
 */
import { cleanText, type Redactor } from "../redact.js";
import {
  ASK_USER,
  FIX_BASE_URL,
  InternalServiceError,
  NotFoundError,
  errorFromResponse,
  unknownRouteStep,
} from "./errors.js";
import { headerValue, type HeaderBag } from "./headers.js";
import { isObject } from "./normalize.js";
import { DEFAULT_MAX_WAIT_MS, parseResetHeader, parseRetryAfter } from "./rate-budget.js";

export interface AnswerContext {
  /** The request named one task (GET /videos/:id). */
  idRoute: boolean;
  /** The service origin, named when the answer shows the base URL is wrong. */
  origin: string;
  /** Masks the caller's key in the answer before anything reads it. */
  redactor?: Redactor | undefined;
}

/** Turns one answer into the `data` payload or a typed error; never relays raw HTML or huge text. */
export function unwrapEnvelope(
  status: number,
  headers: HeaderBag,
  text: string,
  charging: boolean,
  context: AnswerContext = { idRoute: false, origin: "the service" },
): unknown {
  const mask = context.redactor;
  const rawRequestId = headerValue(headers, "x-request-id");
  const requestId = rawRequestId === undefined || mask === undefined ? rawRequestId : mask.text(rawRequestId);
  const retryAtMs = retryAt(status, headers);
  let body: unknown;
  try {
    body = text.length === 0 ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (mask !== undefined && body !== undefined) body = mask.value(body);
  const envelope = isObject(body) ? body : undefined;
  const errorField = envelope?.["error"];
  const ambiguous = charging && (status >= 500 || status === 408);

  if (isObject(errorField) || status >= 300) {
    const code =
      isObject(errorField) && typeof errorField["code"] === "string" ? errorField["code"] : undefined;
    const message =
      isObject(errorField) && errorField["message"] !== undefined
        ? `The service answered HTTP ${status}: ${quoteServiceText(errorField["message"])}`
        : describeBadAnswer(status, headers, text, envelope !== undefined);
    // A 404 or 405 that is not the service's enveloped "no such task" means the request went to the wrong
    // place (a wrong GENERATION_BASE_URL), which only the user can fix.
    if (status === 405 || (status === 404 && !(context.idRoute && isObject(errorField)))) {
      const unsure = status === 404 && context.idRoute;
      return throwing(
        new NotFoundError(message, {
          status,
          requestId,
          transient: false,
          nextStep: unsure
            ? "No task with that video_id was found, or the base URL is wrong (the answer was not the service's " +
              "JSON). If the other tools work, the id is wrong: call list_videos to find the right one. If they " +
              `fail the same way, ${ASK_USER.toLowerCase()} ${FIX_BASE_URL}`
            : unknownRouteStep(context.origin),
        }),
      );
    }
    return throwing(
      errorFromResponse(status, code, message, { requestId, retryAtMs, maybeProcessed: ambiguous }),
    );
  }
  if (envelope === undefined || !("data" in envelope) || envelope["data"] === null) {
    return throwing(
      new InternalServiceError(describeBadAnswer(status, headers, text, envelope !== undefined), {
        status,
        requestId,
        maybeProcessed: charging,
      }),
    );
  }
  return envelope["data"];
}

function describeBadAnswer(status: number, headers: HeaderBag, text: string, wasJson: boolean): string {
  const type = headerValue(headers, "content-type") ?? "no content type";
  if (text.length === 0) return `The service answered HTTP ${status} with an empty body.`;
  if (wasJson) return `The service answered HTTP ${status} without the expected {data, error} envelope.`;
  const kind =
    /html/i.test(type) || /^\s*</.test(text) ? "an HTML page" : `a body that is not JSON (${type})`;
  return `The service answered HTTP ${status} with ${cleanText(kind, 80)}.`;
}

/**
 * Service text relayed as data, never as instructions: one cleaned, bounded line in quotes, so a message such
 * as "ignore all previous instructions" reads as what the service said, not as our own words.
 */
function quoteServiceText(value: unknown, maxChars = 300): string {
  return `"${cleanText(value, maxChars).replace(/"/g, "'")}"`;
}

function retryAt(status: number, headers: HeaderBag): number | undefined {
  if (status !== 429 && status !== 503) return undefined;
  const now = Date.now();
  const delay = parseRetryAfter(headerValue(headers, "retry-after"), now);
  if (delay !== undefined) return now + Math.min(delay, DEFAULT_MAX_WAIT_MS);
  return status === 429 ? parseResetHeader(headerValue(headers, "x-ratelimit-reset"), now) : undefined;
}

function throwing(error: Error): never {
  throw error;
}
