/**
 * Answers are built as values and written in one place (server.ts), so the fault knobs can replace, delay,
 * drip or drop any of them without each handler knowing.
 */

export interface SandboxResponse {
  status: number;
  /** Answer with `Connection: close` and do not read what is left of the request. */
  closeConnection?: boolean;
  /**
   * With closeConnection: close the socket as soon as the answer is written, without the lingering close,
   * so a client still sending meets a reset (the earlyAnswer fault).
   */
  closeAbruptly?: boolean;
  /** An intermediary's answer: sent without the service's headers (X-RateLimit-*, X-Request-Id). */
  bare?: boolean;
  /** The `data` of a success envelope, kept beside its bytes so the patchNext fault can rewrite it. */
  data?: unknown;
  headers: Record<string, string>;
  body: Buffer;
  /** Set for HEAD: headers describe `body` but no byte of it is sent. */
  headOnly?: boolean;
  /** The "huge" fault: a padded envelope of this many bytes is streamed instead of `body`. */
  hugeBytes?: number;
}

/** A request refused with an envelope error; thrown by validation and handlers, caught by the server. */
export class HttpError extends Error {
  /** The rest of the request body is not worth reading: answer, then close the connection. */
  closeConnection = false;

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const JSON_CONTENT_TYPE = "application/json; charset=utf-8";

export function jsonResponse(
  status: number,
  value: unknown,
  headers: Record<string, string> = {},
): SandboxResponse {
  return {
    status,
    headers: { "Content-Type": JSON_CONTENT_TYPE, ...headers },
    body: Buffer.from(JSON.stringify(value), "utf8"),
  };
}

export function dataResponse(data: unknown, status = 200): SandboxResponse {
  return { ...jsonResponse(status, { data, error: null }), data };
}

export function errorResponse(
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): SandboxResponse {
  return jsonResponse(status, { data: null, error: { message, code } }, headers);
}

export function validationError(field: string, problem: string): HttpError {
  return new HttpError(400, "validation_error", `${field}: ${problem}`);
}
