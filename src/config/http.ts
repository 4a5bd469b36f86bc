/** The `--http` part of the configuration: where it listens, what it admits, and how callers are known. */
import { getOAuthProtectedResourceMetadataUrl } from "@modelcontextprotocol/server";
import { ConfigError, DEFAULTS, type ConfigValues } from "./schema.js";

export type HttpConfig = ReturnType<typeof httpConfig>;

export type OAuthConfig = NonNullable<ReturnType<typeof oauthConfig>>;

const isLoopbackHost = (host: string): boolean =>
  ["127.0.0.1", "localhost", "::1", "[::1]"].includes(host.toLowerCase()) || /^127(\.\d{1,3}){3}$/.test(host);

/** Whether a switch or on/off value (read, or straight from the environment) says on. */
export const isOn = (value: string | undefined): boolean =>
  ["on", "1", "true"].includes(value?.trim().toLowerCase() ?? "");

const list = (value: string | undefined) => (value ?? "").split(/[\s,]+/).filter((entry) => entry !== "");

export function httpConfig(values: ConfigValues, readFile: (file: string) => string) {
  const host = values.GENERATION_HTTP_HOST ?? DEFAULTS.httpHost;
  const oauth = oauthConfig(values);
  const allowedHosts = list(values.GENERATION_HTTP_ALLOWED_HOSTS).map((entry) => entry.toLowerCase());
  if (!isLoopbackHost(host) && allowedHosts.length === 0) {
    throw new ConfigError(
      `GENERATION_HTTP_HOST (or --host): ${JSON.stringify(host)} is not a loopback address, so GENERATION_HTTP_ALLOWED_HOSTS ` +
        "(or --allowed-hosts) must list the host names clients use to reach this server (e.g. mcp.example.com), " +
        "so that DNS rebinding cannot turn a browser against it.",
    );
  }
  const allowedOrigins = list(values.GENERATION_HTTP_ALLOWED_ORIGINS).map((origin) => {
    const parsed = URL.parse(origin)?.origin;
    if (parsed === origin.replace(/\/$/, "").toLowerCase()) return parsed;
    throw new ConfigError(
      `GENERATION_HTTP_ALLOWED_ORIGINS (or --allowed-origins): ${JSON.stringify(origin)} is not an origin such as https://app.example.com.`,
    );
  });
  return {
    port: values.GENERATION_HTTP_PORT ?? DEFAULTS.httpPort,
    host,
    /** Host header values accepted (host or host:port, lower-case); the loopback names when bound to loopback. */
    allowedHosts,
    /** Origins whose browser requests are accepted (and answered with CORS headers). */
    allowedOrigins,
    /** Gateway mode: SHA-256 (hex) of the callers' tokens. Undefined: each Bearer is a service key (or OAuth). */
    tokenHashes: tokenHashes(values, readFile),
    oauth,
    /** Where clients reach this server, no trailing slash (upload links start with it); else as bound. */
    publicUrl:
      oauth?.publicUrl ??
      (values.GENERATION_PUBLIC_URL &&
        checkedPublicUrl(values.GENERATION_PUBLIC_URL).href.replace(/\/+$/, "")),
    maxBodyBytes: values.GENERATION_HTTP_MAX_BODY_BYTES ?? DEFAULTS.httpMaxBodyBytes,
    /** MCP requests one caller may have in flight at once (a batch counts as its requests). */
    maxConcurrentPerKey: values.GENERATION_HTTP_MAX_CONCURRENT ?? DEFAULTS.httpMaxConcurrent,
    maxConnections: values.GENERATION_HTTP_MAX_CONNECTIONS ?? DEFAULTS.httpMaxConnections,
    /** GENERATION_METRICS=on: `GET /metrics` serves Prometheus metrics, behind this Bearer when set. */
    metrics: metricsConfig(values.GENERATION_METRICS, values.GENERATION_METRICS_TOKEN),
  };
}

function metricsConfig(metrics: string | undefined, token: string | undefined) {
  if (!isOn(metrics) && token !== undefined) {
    throw new ConfigError(
      "GENERATION_METRICS_TOKEN is set but GENERATION_METRICS is not on: set GENERATION_METRICS=on to serve GET /metrics, or unset the token.",
    );
  }
  // A guessable token would protect nothing.
  if (token !== undefined && (token.length < 16 || /\s/.test(token))) {
    throw new ConfigError(
      "GENERATION_METRICS_TOKEN: must be at least 16 characters without spaces (e.g. the output of `openssl rand -hex 32`).",
    );
  }
  return isOn(metrics) ? { token } : undefined;
}

/** OAuth mode: the issuer must be https (http only on loopback, a local identity provider). */
function oauthConfig(values: ConfigValues) {
  const { GENERATION_OAUTH_ISSUER: issuer, GENERATION_PUBLIC_URL: publicUrl } = values;
  const audience = values.GENERATION_OAUTH_AUDIENCE;
  if (issuer === undefined) {
    if (audience === undefined) return undefined;
    throw new ConfigError(
      "GENERATION_OAUTH_AUDIENCE is set without GENERATION_OAUTH_ISSUER: set both, or neither.",
    );
  }
  const base = publicBase(issuer, publicUrl);
  // RFC 9728 §3.1: `https://host/gen/mcp`'s metadata is at `/.well-known/oauth-protected-resource/gen/mcp`.
  const origin = `${base.origin}${base.pathname.replace(/\/+$/, "")}`;
  const resource = `${origin}/mcp`;
  const metadataUrl = getOAuthProtectedResourceMetadataUrl(new URL(resource));
  return { issuer, publicUrl: origin, resource, audience: audience ?? resource, metadataUrl };
}

/** The public URL, once both addresses are known good. */
function publicBase(issuer: string, publicUrl: string | undefined): URL {
  const url = URL.canParse(issuer) ? new URL(issuer) : undefined;
  if (url === undefined) {
    throw new ConfigError(
      `GENERATION_OAUTH_ISSUER: ${JSON.stringify(issuer)} is not a URL (e.g. https://id.example.com/realms/team).`,
    );
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && isLoopbackHost(url.hostname))) {
    throw new ConfigError(
      `GENERATION_OAUTH_ISSUER: ${JSON.stringify(issuer)} must be an https:// address (http:// only on a loopback address, for a local identity provider).`,
    );
  }
  if (publicUrl === undefined) {
    throw new ConfigError(
      "GENERATION_OAUTH_ISSUER is set: GENERATION_PUBLIC_URL must say where clients reach this server (e.g. https://mcp.example.com); the protected resource is <public url>/mcp.",
    );
  }
  return checkedPublicUrl(publicUrl);
}

/** GENERATION_PUBLIC_URL, an http(s) origin with an optional path prefix. */
function checkedPublicUrl(publicUrl: string): URL {
  const base = URL.canParse(publicUrl) ? new URL(publicUrl) : undefined;
  if (base === undefined || !/^https?:$/.test(base.protocol)) {
    throw new ConfigError(
      `GENERATION_PUBLIC_URL: ${JSON.stringify(publicUrl)} is not an http(s) address such as https://mcp.example.com.`,
    );
  }
  if (base.search !== "" || base.hash !== "" || base.username !== "" || base.password !== "") {
    throw new ConfigError(
      "GENERATION_PUBLIC_URL: give the server's public origin only (no query, fragment or user name).",
    );
  }
  return base;
}

function tokenHashes(values: ConfigValues, readFile: (file: string) => string): string[] | undefined {
  const { GENERATION_HTTP_TOKENS: inline, GENERATION_HTTP_TOKENS_FILE: file } = values;
  if (inline !== undefined && file !== undefined) {
    throw new ConfigError("set GENERATION_HTTP_TOKENS or GENERATION_HTTP_TOKENS_FILE, not both.");
  }
  if (inline === undefined && file === undefined) return undefined;
  const variable =
    file === undefined ? "GENERATION_HTTP_TOKENS" : "GENERATION_HTTP_TOKENS_FILE (or --tokens-file)";
  let text = inline ?? "";
  try {
    if (file !== undefined) text = readFile(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "error";
    throw new ConfigError(`${variable}: cannot read ${JSON.stringify(file)} (${code}).`);
  }
  const hashes = text.split("\n").flatMap((line) => list(line.replace(/#.*$/, "").toLowerCase()));
  if (hashes.length === 0 || hashes.some((hash) => !/^[0-9a-f]{64}$/.test(hash))) {
    throw new ConfigError(
      `${variable}: expected the SHA-256 (64 hex digits) of each caller token, e.g. the output of ` +
        '`printf %s "$TOKEN" | sha256sum`; the tokens themselves never go into the configuration.',
    );
  }
  return [...new Set(hashes)];
}

/** Without caller tokens or OAuth, a server-side key would be handed to anyone reaching the port: refused. */
export function checkHttpKeys(
  http: HttpConfig,
  apiKey: string | undefined,
  baseUrl: string | undefined,
  sandbox: boolean,
) {
  const gateway = http.tokenHashes !== undefined;
  const oauth = http.oauth !== undefined;
  if (gateway && oauth) {
    throw new ConfigError(
      "GENERATION_HTTP_TOKENS(_FILE) and GENERATION_OAUTH_ISSUER are both set: callers sign in one way, choose one.",
    );
  }
  if (!gateway && !oauth && apiKey !== undefined) {
    throw new ConfigError(
      "GENERATION_API_KEY is set with --http but no caller tokens or OAuth are: every caller would use this key. Either " +
        "unset GENERATION_API_KEY (each caller sends its own service key as Authorization: Bearer), set " +
        "GENERATION_HTTP_TOKENS_FILE to the SHA-256 hashes of the tokens your callers present, or set " +
        "GENERATION_OAUTH_ISSUER and GENERATION_PUBLIC_URL so callers sign in at your identity provider.",
    );
  }
  if ((gateway || oauth) && !sandbox && apiKey === undefined) {
    const which = gateway ? "GENERATION_HTTP_TOKENS(_FILE)" : "GENERATION_OAUTH_ISSUER";
    throw new ConfigError(
      `${which} is set: the server calls the service with its own GENERATION_API_KEY, which is missing.`,
    );
  }
  if (!sandbox && baseUrl === undefined) {
    throw new ConfigError(
      "set GENERATION_BASE_URL (the service address ending in /api/v1) for --http, or add --sandbox to serve the built-in sandbox.",
    );
  }
}
