/**
 * The two bearer modes of `--http` without OAuth, each turning an `Authorization` header into a `Caller` or a
 * refusal (HTTP 401 with its `WWW-Authenticate` challenge):
 * - passthrough: the bearer is the caller's own service key. It is not judged here: the service judges it
 *   when the caller first needs the service (runtime-pool.ts), and nothing is kept for a key before that.
 * - gateway: the server holds the service key; callers present tokens whose SHA-256 hashes the operator
 *   listed. The token never leaves this module except as its digest.
 */
import { timingSafeEqual } from "node:crypto";
import { digestOf, type Caller } from "./caller.js";

export interface Refusal {
  status: 401 | 403;
  /** The `WWW-Authenticate` header value. */
  challenge: string;
  /** The JSON error code (`invalid_token`, `invalid_request` ...) and a sentence for the caller. */
  error: string;
  message: string;
}

/** Turns a request's Authorization header into a caller or a refusal (OAuth: after checking the token). */
export type Authenticator = (
  header: string | undefined,
) => Caller | Refusal | { unavailable: string } | Promise<Caller | Refusal | { unavailable: string }>;

/** Longest bearer token accepted: anything longer is not a key, and is not hashed or sent anywhere. */
export const MAX_TOKEN_CHARS = 1024;
const REALM = 'Bearer realm="generation-mcp"';

/** The token of `Authorization: Bearer <token>`, or undefined when the header is missing or malformed. */
export function bearerToken(header: string | undefined, maxChars = MAX_TOKEN_CHARS): string | undefined {
  if (header === undefined || header.length > maxChars + 16) return undefined;
  const token = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header)?.[1];
  return token === undefined || token.length > maxChars ? undefined : token;
}

export function isRefusal(value: Caller | Refusal | { unavailable: string }): value is Refusal {
  return "challenge" in value;
}

/** Each caller's bearer is its own service key. */
export function passthroughAuth(): Authenticator {
  return (header) => {
    const token = bearerToken(header);
    if (token === undefined) {
      return missing("send your generation service API key as 'Authorization: Bearer <key>'.");
    }
    return { id: digestOf(token), kind: "key", serviceKey: token, scope: undefined };
  };
}

/** Callers present tokens of this server (their SHA-256 hashes listed); the server's key serves them all. */
export function gatewayAuth(tokenHashes: readonly string[], serviceKey: string): Authenticator {
  const hashes = tokenHashes.map((hash) => Buffer.from(hash, "hex"));
  return (header) => {
    const token = bearerToken(header);
    if (token === undefined) {
      return missing("send your access token for this server as 'Authorization: Bearer <token>'.");
    }
    const digest = digestOf(token);
    const given = Buffer.from(digest, "hex");
    if (!hashes.some((hash) => timingSafeEqual(hash, given))) {
      return {
        status: 401,
        challenge: `${REALM}, error="invalid_token"`,
        error: "invalid_token",
        message: "this token is not accepted by this server.",
      };
    }
    // One service key serves every admitted caller; what each sees and reuses stays its own.
    return { id: digest, kind: "gateway", serviceKey, scope: digest.slice(0, 16) };
  };
}

function missing(message: string): Refusal {
  return { status: 401, challenge: REALM, error: "invalid_request", message };
}
