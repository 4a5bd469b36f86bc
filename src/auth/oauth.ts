/**
 * OAuth 2.1 resource server (MCP authorization; RFC 9728 Protected Resource Metadata; RFC 8707 audience;
 * RFC 6750 errors) in front of the one service key the server holds. It never issues tokens: the team's
 * authorization server does (Keycloak, Auth0, Okta, Entra ID ...), and handles registration and login.
 *
 * Every request's access token is a JWT checked here, locally, against the issuer's published keys (fetched
 * once from its discovery document, cached, fetched again for a key id it does not know, at most every
 * 5 s): the signature with an asymmetric algorithm this server names (never the token's say), `iss`
 * exactly, `aud` containing the audience (a token for another resource never passes), `exp` and `nbf` with
 * a few seconds of leeway, and a `sub`. Anything else is 401 `invalid_token`, with nothing that helps an
 * attacker. While the issuer cannot be reached, nothing is let through: requests are answered 503 and
 * /readyz says not ready. Each subject (`iss` + `sub`) is one caller.
 *
 * Loaded only when GENERATION_OAUTH_ISSUER is set (jose is a lazy chunk).
 */
import { createRemoteJWKSet, errors, jwtVerify, type JWTVerifyGetKey } from "jose";
import type { OAuthConfig } from "../config.js";
import type { Logger } from "../logger.js";
import { bearerToken, type Refusal } from "./bearer.js";
import { digestOf, type Caller } from "./caller.js";
import { SCOPES } from "./scopes.js";

/** Longest access token accepted: JWTs run to a few KB; anything much longer is not one of them. */
export const MAX_ACCESS_TOKEN_CHARS = 8192;
const ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];
const CLOCK_LEEWAY_S = 5;
const DISCOVERY_TIMEOUT_MS = 5000;
/** How often the keys are fetched again while all is well (and retried while the issuer is away). */
const HEALTH_INTERVAL_MS = 60_000;
const RETRY_INTERVAL_MS = 5_000;
/** A readiness probe older than this asks the issuer again (a load balancer's probe keeps it fresh). */
const READY_FRESH_MS = 10_000;
/** While the issuer is away, requests ask it again at most this often. */
const RECHECK_MS = 1_000;

/** The issuer could not be asked: the request is answered 503, never let through. */
export interface Unavailable {
  unavailable: string;
}

export interface OAuthGate {
  authenticate(header: string | undefined): Promise<Caller | Refusal | Unavailable>;
  /** False while the issuer's keys cannot be had: /readyz says not ready. */
  ready(): boolean;
  /** The Protected Resource Metadata (RFC 9728) of the resource. */
  metadata(): Record<string, unknown>;
  /** The challenge of a 401 or 403 (RFC 6750), pointing at the metadata and naming the scope to ask for. */
  challenge(error?: { error: string; description?: string; scope?: string }): string;
  close(): void;
}

/** `serviceKey`: the one key the server holds, used for every signed-in caller. */
export async function createOAuthGate(
  config: OAuthConfig,
  serviceKey: string,
  logger: Logger,
): Promise<OAuthGate> {
  let keys: JWTVerifyGetKey | undefined;
  let healthy = false;
  let closed = false;
  let checking: Promise<void> | undefined;
  let checkedAt = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;

  /** Finds the issuer's key set (OpenID discovery, else RFC 8414) and fetches it once. */
  const connect = async (): Promise<void> => {
    if (keys === undefined) {
      const jwksUri = await discoverJwksUri(config.issuer);
      keys = createRemoteJWKSet(new URL(jwksUri), {
        timeoutDuration: DISCOVERY_TIMEOUT_MS,
        // A token under a new key id (the issuer rotated) is refused for at most this long.
        cooldownDuration: 5_000,
        cacheMaxAge: 10 * 60_000,
      });
    }
    await (keys as unknown as { reload(): Promise<void> }).reload();
  };
  const check = (): Promise<void> => (checking ??= probe().finally(() => (checking = undefined)));
  const probe = async (): Promise<void> => {
    if (closed) return;
    clearTimeout(timer);
    checkedAt = Date.now();
    try {
      await connect();
      if (!healthy)
        logger.info(`OAuth: the keys of ${config.issuer} are in hand; tokens are checked locally.`);
      healthy = true;
    } catch (error) {
      if (healthy || timer === undefined) {
        logger.error(
          `OAuth: the issuer ${config.issuer} cannot be reached (${describe(error)}): /readyz reports not ready and requests are refused until it answers.`,
        );
      }
      healthy = false;
    }
    timer = setTimeout(() => void check(), healthy ? HEALTH_INTERVAL_MS : RETRY_INTERVAL_MS);
    timer.unref();
  };
  await check();

  const challenge: OAuthGate["challenge"] = (error) => {
    const scope = error?.scope ?? Object.values(SCOPES).join(" ");
    const parts = [`resource_metadata="${config.metadataUrl}"`, `scope="${scope}"`];
    if (error !== undefined) parts.push(`error="${error.error}"`);
    if (error?.description !== undefined) parts.push(`error_description="${error.description}"`);
    return `Bearer realm="generation-mcp", ${parts.join(", ")}`;
  };

  /** The one answer to every token that does not pass: the same whatever the reason, which stays here. */
  const invalid = (): Refusal => ({
    status: 401,
    challenge: challenge({
      error: "invalid_token",
      description: "The access token is not valid for this server.",
    }),
    error: "invalid_token",
    message: "the access token is not valid for this server: sign in again.",
  });

  return {
    ready: () => {
      if (Date.now() - checkedAt > READY_FRESH_MS) void check();
      return healthy;
    },
    challenge,
    metadata: () => ({
      resource: config.resource,
      authorization_servers: [config.issuer],
      scopes_supported: Object.values(SCOPES),
      bearer_methods_supported: ["header"],
      resource_name: "generation-mcp: video and image generation",
    }),
    close() {
      closed = true;
      clearTimeout(timer);
    },
    async authenticate(header) {
      const token = bearerToken(header, MAX_ACCESS_TOKEN_CHARS);
      // A bearer too long or malformed is a token that does not pass, not a missing one.
      if (token === undefined && header !== undefined && /^Bearer[ \t]+\S/i.test(header)) return invalid();
      if (token === undefined) {
        return {
          status: 401,
          challenge: challenge(),
          error: "invalid_request",
          message: "sign in: this server takes an OAuth access token as 'Authorization: Bearer <token>'.",
        };
      }
      if (keys === undefined || !healthy) {
        // Not a verdict on the token: the issuer cannot vouch for its keys now (they may have been revoked).
        // Asked again at most once a second, however many requests come meanwhile.
        if (Date.now() - checkedAt > RECHECK_MS) void check();
        return { unavailable: "the identity provider cannot be reached to check tokens" };
      }
      try {
        const { payload } = await jwtVerify(token, keys, {
          issuer: config.issuer,
          audience: config.audience,
          algorithms: ALGORITHMS,
          clockTolerance: CLOCK_LEEWAY_S,
          requiredClaims: ["sub", "exp"],
        });
        // One subject, one caller: a token naming none (or "") would make everyone without one a single caller.
        if (typeof payload.sub !== "string" || payload.sub === "") return invalid();
        const subject = `${config.issuer}\n${String(payload.sub)}`;
        const id = digestOf(subject);
        return {
          id,
          kind: "oauth",
          serviceKey,
          scope: `o:${id.slice(0, 32)}`,
          grants: grantsOf(payload),
        };
      } catch (error) {
        if (unreachable(error)) {
          healthy = false;
          if (Date.now() - checkedAt > RECHECK_MS) void check();
          return { unavailable: "the identity provider cannot be reached to check tokens" };
        }
        return invalid();
      }
    },
  };
}

/** The jwks_uri of the issuer, from its OpenID discovery document or, failing that, RFC 8414 metadata. */
async function discoverJwksUri(issuer: string): Promise<string> {
  const trimmed = issuer.replace(/\/+$/, "");
  const candidates = [
    `${trimmed}/.well-known/openid-configuration`,
    `${new URL(issuer).origin}/.well-known/oauth-authorization-server${new URL(issuer).pathname.replace(/\/+$/, "")}`,
  ];
  let last: unknown;
  for (const url of candidates) {
    try {
      const response = await fetch(url, {
        signal: AbortSignal.timeout(DISCOVERY_TIMEOUT_MS),
        redirect: "error",
      });
      if (!response.ok) throw new Error(`${url} answered HTTP ${response.status}`);
      const document = (await response.json()) as { issuer?: unknown; jwks_uri?: unknown };
      // RFC 8414 §3.3: the document must name the very issuer it was asked about.
      if (document.issuer !== issuer) throw new Error(`${url} names another issuer`);
      if (typeof document.jwks_uri !== "string" || !URL.canParse(document.jwks_uri)) {
        throw new Error(`${url} names no jwks_uri`);
      }
      return document.jwks_uri;
    } catch (error) {
      last = error;
    }
  }
  throw last instanceof Error ? last : new Error(String(last));
}

/** `scope` (space-separated, RFC 8693) or `scp` (a list, as Entra ID writes it). */
function grantsOf(payload: Record<string, unknown>): ReadonlySet<string> {
  const scope = payload["scope"];
  const scp = payload["scp"];
  const granted = typeof scope === "string" ? scope.split(/\s+/) : Array.isArray(scp) ? scp.map(String) : [];
  return new Set(granted.filter((entry) => entry !== ""));
}

/** A failure to reach the issuer (its key set), as opposed to a token that does not pass. */
function unreachable(error: unknown): boolean {
  if (error instanceof errors.JWKSTimeout) return true;
  // The key set answered, but not with keys (not 200, not JSON, not a JWKS): the issuer's failure, not the token's.
  if (error instanceof errors.JWKSInvalid || (error as { code?: unknown }).code === "ERR_JOSE_GENERIC")
    return true;
  if (error instanceof errors.JOSEError) return false;
  return error instanceof Error && (error.name === "TypeError" || /fetch|ECONN|network/i.test(error.message));
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message.slice(0, 200) : String(error).slice(0, 200);
}
