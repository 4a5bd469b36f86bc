/**
 * OAuth 2.1 resource server (RFC 9728 metadata, RFC 8707 audience, RFC 6750 errors) in front of the one key
 * the server holds (docs/http-and-sign-in.md). Each JWT is checked locally: an asymmetric algorithm we name
 * (never the token's say), `iss`, `aud`, `exp`/`nbf` with leeway, a `sub`; anything else is 401. Lazy (jose).
 */
import { errors, jwtVerify, type JWTVerifyGetKey } from "jose";
import type { OAuthConfig } from "../config/index.js";
import type { Logger } from "../logger.js";
import { keepIssuerKeys } from "./issuer-keys.js";
import { SCOPES, bearerToken, digestOf, unauthorized, type Caller, type Refusal } from "./caller.js";

/** Longest access token accepted: JWTs run to a few KB; anything much longer is not one of them. */
const MAX_ACCESS_TOKEN_CHARS = 8192;
const ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];
const CLOCK_LEEWAY_S = 5;
/** A readiness probe finding the last fetch older than this fetches the keys again (a removed key goes sooner). */
const READY_FRESH_MS = 10_000;

export async function createOAuthGate(config: OAuthConfig, serviceKey: string, logger: Logger) {
  const keys = await keepIssuerKeys(config.issuer, logger);

  /** The challenge of a 401 or 403 (RFC 6750), pointing at the metadata and naming the scope to ask for. */
  const challenge = (error?: { error: string; description?: string; scope?: string }) => {
    const scope = error?.scope ?? Object.values(SCOPES).join(" ");
    const parts = [`resource_metadata="${config.metadataUrl}"`, `scope="${scope}"`];
    if (error !== undefined) parts.push(`error="${error.error}"`);
    if (error?.description !== undefined) parts.push(`error_description="${error.description}"`);
    return `Bearer realm="generation-mcp", ${parts.join(", ")}`;
  };

  const invalid = () =>
    unauthorized(
      challenge({ error: "invalid_token", description: "The access token is not valid for this server." }),
      "invalid_token",
      "the access token is not valid for this server: sign in again.",
    );

  const verify = async (token: string, keySet: JWTVerifyGetKey) =>
    (
      await jwtVerify(token, keySet, {
        issuer: config.issuer,
        audience: config.audience,
        algorithms: ALGORITHMS,
        clockTolerance: CLOCK_LEEWAY_S,
        requiredClaims: ["sub", "exp"],
      })
    ).payload;

  return {
    /** False while no key set of the issuer is usable: /readyz says not ready. */
    ready: () => {
      void keys.refetch(READY_FRESH_MS);
      return keys.current() !== undefined;
    },
    challenge,
    /** The Protected Resource Metadata (RFC 9728) of the resource. */
    metadata: () => ({
      resource: config.resource,
      authorization_servers: [config.issuer],
      scopes_supported: Object.values(SCOPES),
      bearer_methods_supported: ["header"],
      resource_name: "generation-mcp: video and image generation",
    }),
    close: () => keys.close(),
    async authenticate(header: string | undefined): Promise<Caller | Refusal | { unavailable: string }> {
      const token = bearerToken(header, MAX_ACCESS_TOKEN_CHARS);
      // A bearer too long or malformed is a token that does not pass, not a missing one.
      if (token === undefined && header !== undefined && /^Bearer[ \t]+\S/i.test(header)) return invalid();
      if (token === undefined) {
        const signIn = "sign in: this server takes an OAuth access token as 'Authorization: Bearer <token>'.";
        return unauthorized(challenge(), "invalid_request", signIn);
      }
      const keySet = keys.current();
      if (keySet === undefined) {
        // Not a verdict on the token: no key of the issuer is in hand to check it with.
        void keys.refetch();
        return { unavailable: "the identity provider cannot be reached to check tokens" };
      }
      const payload = await verify(token, keySet).catch(async (error: unknown) => {
        // An unknown key id: perhaps the issuer rotated, so its set is fetched again (once per cool-down).
        const rotated = error instanceof errors.JWKSNoMatchingKey && (await keys.refetch());
        const fresh = rotated ? keys.current() : undefined;
        return fresh === undefined ? undefined : verify(token, fresh).catch(() => undefined);
      });
      // One subject, one caller: a token naming none (or "") would make everyone without one a single caller.
      if (typeof payload?.sub !== "string" || payload.sub === "") return invalid();
      const id = digestOf(`${config.issuer}\n${payload.sub}`);
      return { id, serviceKey, scope: `o:${id.slice(0, 32)}`, grants: grantsOf(payload) };
    },
  };
}

/** `scope` (space-separated, RFC 8693) or `scp` (a list, as Entra ID writes it). */
function grantsOf(payload: Record<string, unknown>): ReadonlySet<string> {
  const { scope, scp } = payload;
  const granted = typeof scope === "string" ? scope.split(/\s+/) : Array.isArray(scp) ? scp.map(String) : [];
  return new Set(granted.filter((entry) => entry !== ""));
}
