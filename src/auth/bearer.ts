/**
 * How `--http` turns a request's `Authorization` header into a `Caller` or a 401 (docs/http-and-sign-in.md):
 * passthrough (the bearer is the caller's own key, judged by the service on first use), gateway (tokens whose
 * SHA-256 the operator listed; a token leaves this module only as its digest), or OAuth (oauth.ts).
 */
import { timingSafeEqual } from "node:crypto";
import type { HttpConfig } from "../config/index.js";
import type { Logger } from "../logger.js";
import { bearerToken, digestOf, unauthorized, type Caller, type Refusal } from "./caller.js";

/** Longest bearer token accepted: anything longer is not a key, and is not hashed or sent anywhere. */
const MAX_TOKEN_CHARS = 1024;
const REALM = 'Bearer realm="generation-mcp"';

/**
 * The mode `config` names. `callerKeys`: each bearer is its caller's own service key; `bearerHint`: what
 * OAuth's discovery paths answer without OAuth; `mode`: words for the start-up line.
 */
export async function authFor(config: HttpConfig, serviceKey: string, logger: Logger) {
  if (config.oauth !== undefined) {
    // The issuer's keys are fetched before serving; jose loads only in this mode.
    const oauth = await (await import("./oauth.js")).createOAuthGate(config.oauth, serviceKey, logger);
    return {
      authenticate: (header: string | undefined) => oauth.authenticate(header),
      oauth,
      callerKeys: false,
      mode: `OAuth: callers sign in at ${config.oauth.issuer}; the server's own key serves them`,
    };
  }
  if (config.tokenHashes !== undefined) {
    return {
      authenticate: gatewayAuth(config.tokenHashes, serviceKey),
      callerKeys: false,
      bearerHint:
        "This server has no OAuth: send the access token you were given for it as 'Authorization: Bearer <token>'.",
      mode: `gateway: callers present tokens (${config.tokenHashes.length} accepted), the server's own key serves them`,
    };
  }
  return {
    authenticate: passthroughAuth,
    callerKeys: true,
    bearerHint:
      "This server has no OAuth: send your generation service API key as 'Authorization: Bearer <key>'.",
    mode: "each caller sends its own service key as Authorization: Bearer",
  };
}

function passthroughAuth(header: string | undefined): Caller | Refusal {
  const token = bearerToken(header, MAX_TOKEN_CHARS);
  if (token === undefined)
    return missing("send your generation service API key as 'Authorization: Bearer <key>'.");
  return { id: digestOf(token), serviceKey: token, scope: undefined };
}

function gatewayAuth(tokenHashes: readonly string[], serviceKey: string) {
  const hashes = tokenHashes.map((hash) => Buffer.from(hash, "hex"));
  return (header: string | undefined): Caller | Refusal => {
    const token = bearerToken(header, MAX_TOKEN_CHARS);
    if (token === undefined) {
      return missing("send your access token for this server as 'Authorization: Bearer <token>'.");
    }
    const digest = digestOf(token);
    const given = Buffer.from(digest, "hex");
    if (!hashes.some((hash) => timingSafeEqual(hash, given))) {
      const refused = "this token is not accepted by this server.";
      return unauthorized(`${REALM}, error="invalid_token"`, "invalid_token", refused);
    }
    // One service key serves every admitted caller; what each sees and reuses stays its own.
    return { id: digest, serviceKey, scope: digest.slice(0, 16) };
  };
}

function missing(message: string): Refusal {
  return unauthorized(REALM, "invalid_request", message);
}
