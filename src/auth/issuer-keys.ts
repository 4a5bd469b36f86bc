/**
 * The issuer's signing keys (docs/http-and-sign-in.md): fetched at start, every 60 s (5 s while failing) and
 * on demand at most once per cool-down, one fetch serving all waiters, so forged key ids cannot make this a
 * fetch cannon. The last good set is kept through outages, but not past 24 h: revoked keys are not trusted.
 */
import { createLocalJWKSet, type JSONWebKeySet, type JWTVerifyGetKey } from "jose";
import type { Logger } from "../logger.js";

const FETCH_TIMEOUT_MS = 5000;
/** Discovery documents and key sets run to a few KB: an answer past this is neither. */
const MAX_DOCUMENT_BYTES = 256 * 1024;
const REFRESH_INTERVAL_MS = 60_000;
const RETRY_INTERVAL_MS = 5000;
const COOL_DOWN_MS = 5000;
const MAX_KEY_AGE_MS = 24 * 60 * 60_000;

/** Fetches the key set once before resolving, whether or not the issuer answers. */
export async function keepIssuerKeys(issuer: string, logger: Logger) {
  let jwksUri: string | undefined;
  let keys: { verify: JWTVerifyGetKey; fetchedAt: number } | undefined;
  let attemptedAt = 0;
  let fetching: Promise<boolean> | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;
  /** What stderr last said of an outage still going on; undefined while all is well. */
  let outage: "keys in hand" | "no keys" | undefined;

  /** The key set to verify with; undefined while none is usable (none fetched yet, or the last is too old). */
  const current = () =>
    keys !== undefined && Date.now() - keys.fetchedAt <= MAX_KEY_AGE_MS ? keys.verify : undefined;

  const fetchKeys = async (): Promise<boolean> => {
    clearTimeout(timer);
    attemptedAt = Date.now();
    let fetched = false;
    try {
      jwksUri ??= await discoverJwksUri(issuer);
      // createLocalJWKSet refuses anything that is not a key set: a bad answer never replaces a good set.
      const verify = createLocalJWKSet((await fetchJson(jwksUri)) as JSONWebKeySet);
      if (keys === undefined || outage !== undefined) {
        logger.info(`OAuth: the keys of ${issuer} are in hand; tokens are checked locally.`);
      }
      keys = { verify, fetchedAt: Date.now() };
      outage = undefined;
      fetched = true;
    } catch (error) {
      const reason = (error instanceof Error ? error.message : String(error)).slice(0, 200);
      const now = current() === undefined ? "no keys" : "keys in hand";
      if (outage !== now) {
        logger.error(
          now === "no keys"
            ? `OAuth: the issuer ${issuer} cannot be reached (${reason}): /readyz reports not ready and requests are refused until it answers.`
            : `OAuth: the issuer ${issuer} cannot be reached (${reason}): tokens are still checked against the keys fetched at ${new Date(keys?.fetchedAt ?? 0).toISOString()}; a token under any other key is refused until it answers.`,
        );
      }
      outage = now;
    }
    if (!closed) {
      timer = setTimeout(() => void fetchOnce(), fetched ? REFRESH_INTERVAL_MS : RETRY_INTERVAL_MS);
      timer.unref();
    }
    return fetched;
  };
  const fetchOnce = (): Promise<boolean> => (fetching ??= fetchKeys().finally(() => (fetching = undefined)));
  await fetchOnce();

  return {
    current,
    /** Fetches the key set again unless one began within `coolDownMs` (joins one under way); true if new. */
    refetch(coolDownMs = COOL_DOWN_MS): Promise<boolean> {
      if (fetching !== undefined) return fetching;
      return Date.now() - attemptedAt < coolDownMs ? Promise.resolve(false) : fetchOnce();
    },
    close() {
      closed = true;
      clearTimeout(timer);
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
      const document = (await fetchJson(url)) as { issuer?: unknown; jwks_uri?: unknown } | null;
      // RFC 8414 §3.3: the document must name the very issuer it was asked about.
      if (document?.issuer !== issuer) throw new Error(`${url} names another issuer`);
      if (typeof document.jwks_uri !== "string" || !URL.canParse(document.jwks_uri)) {
        throw new Error(`${url} names no jwks_uri`);
      }
      return document.jwks_uri;
    } catch (error) {
      last = error;
    }
  }
  throw last;
}

/** A JSON document of the issuer: within the timeout, no redirect followed, at most MAX_DOCUMENT_BYTES. */
async function fetchJson(url: string): Promise<unknown> {
  const response = await fetch(url, {
    signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    redirect: "error",
    headers: { accept: "application/json" },
  });
  if (!response.ok) {
    void response.body?.cancel().catch(() => undefined);
    throw new Error(`${url} answered HTTP ${response.status}`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  // Leaving the loop early (the throw) cancels the rest of the answer: it is dropped, not left half-read.
  for await (const chunk of response.body ?? []) {
    if ((size += chunk.byteLength) > MAX_DOCUMENT_BYTES) {
      throw new Error(`${url} answered more than ${MAX_DOCUMENT_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}
