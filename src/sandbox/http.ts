import type { Readable } from "node:stream";

type HeaderMap = Record<string, string>;

/** Answers are values written in one place (server.ts), so the fault knobs can replace, delay or drop any. */
export interface SandboxResponse {
  status: number;
  headers: HeaderMap;
  /** A stream is sent as it comes, with the Content-Length its maker set. */
  body: Buffer | Readable;
  /** The `data` of a success envelope, for the patchNext fault. */
  data?: unknown;
  /** Answer with `Connection: close` and do not read what is left of the request. */
  closeConnection?: boolean;
  /** With closeConnection: close without the lingering close. */
  closeAbruptly?: boolean;
  /** An intermediary's answer: sent without the service's headers (X-RateLimit-*, X-Request-Id). */
  bare?: boolean;
}

/** A request refused with an envelope error; thrown by validation and handlers, caught by the server. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The rest of the request body is not worth reading: answer, then close the connection. */
    readonly closeConnection = false,
  ) {
    super(message);
  }
}

export const JSON_TYPE = "application/json; charset=utf-8";

function json(status: number, value: unknown, headers: HeaderMap = {}): SandboxResponse & { body: Buffer } {
  const body = Buffer.from(JSON.stringify(value));
  return { status, headers: { "Content-Type": JSON_TYPE, ...headers }, body };
}

export const dataResponse = (data: unknown, status = 200): SandboxResponse => ({
  ...json(status, { data, error: null }),
  data,
});

export const errorResponse = (status: number, code: string, message: string, headers: HeaderMap = {}) =>
  json(status, { data: null, error: { message, code } }, headers);

export function validationError(field: string, problem: string, closeConnection = false): HttpError {
  return new HttpError(400, "validation_error", `${field}: ${problem}`, closeConnection);
}

export function decodeSegment(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}
