/**
 * The `--http` part of the configuration, read from the checked values of config.ts (the only reader of the
 * environment): where it listens and what it admits, and who the callers are — each with its own service
 * key (passthrough), with tokens of this server (gateway), or signed in at the team's identity provider
 * (OAuth: this server is then a resource server in front of the one key it holds).
 */
import { getOAuthProtectedResourceMetadataUrl } from "@modelcontextprotocol/server";
import { DEFAULT_HTTP_MAX_BODY_BYTES } from "./limits.js";
import { ConfigError, type Config, type ConfigValues } from "./config.js";

export interface HttpConfig {
  port: number;
  host: string;
  /** Host header values accepted (host or host:port, lower-case); the loopback names when bound to loopback. */
  allowedHosts: string[];
  /** Origins whose browser requests are accepted (and answered with CORS headers); none by default. */
  allowedOrigins: string[];
  /**
   * Gateway mode: SHA-256 (hex) of the tokens callers present; the server uses its own GENERATION_API_KEY.
   * Undefined: each caller's Bearer is its own service key (unless OAuth is on).
   */
  tokenHashes: string[] | undefined;
  /** OAuth mode (GENERATION_OAUTH_ISSUER): callers present access tokens of the team's authorization server. */
  oauth: OAuthConfig | undefined;
  /** Largest request body, in bytes. */
  maxBodyBytes: number;
  /** MCP requests one caller may have in flight at once (a batch counts as its requests). */
  maxConcurrentPerKey: number;
  /** Connections held open at once; past it new ones are closed at once. */
  maxConnections: number;
  /** GENERATION_METRICS=on: `GET /metrics` serves Prometheus metrics (src/metrics.ts); undefined: 404. */
  metrics: MetricsConfig | undefined;
}

export interface MetricsConfig {
  /** GENERATION_METRICS_TOKEN: scrapes must send it as `Authorization: Bearer`; undefined: no auth. */
  token: string | undefined;
}

export interface OAuthConfig {
  /** The authorization server's issuer (checked against every token's `iss`). */
  issuer: string;
  /** The server's public origin (GENERATION_PUBLIC_URL), e.g. https://mcp.example.com. */
  publicUrl: string;
  /** The protected resource: `<public url>/mcp`. */
  resource: string;
  /** What every token's `aud` must contain (GENERATION_OAUTH_AUDIENCE; default the resource). */
  audience: string;
  /**
   * Where the Protected Resource Metadata (RFC 9728 §3.1) of the resource is served: the well-known prefix
   * between the host and the resource's path, `https://host/.well-known/oauth-protected-resource/gen/mcp`.
   */
  metadataUrl: string;
}

/** The HTTP defaults (CONTRACT.md: 8080 on 127.0.0.1). */
export const DEFAULT_HTTP_PORT = 8080;
export const DEFAULT_HTTP_HOST = "127.0.0.1";
export const DEFAULT_HTTP_MAX_CONCURRENT = 16;
export const DEFAULT_HTTP_MAX_CONNECTIONS = 1024;

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "::1", "[::1]"]);

export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_HOSTS.has(host.toLowerCase()) || /^127(\.\d{1,3}){3}$/.test(host);
}

function list(value: string | undefined): string[] {
  return (value ?? "")
    .split(/[\s,]+/)
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
}

export function httpConfig(values: ConfigValues, readFile: (file: string) => string): HttpConfig {
  const host = values.GENERATION_HTTP_HOST ?? DEFAULT_HTTP_HOST;
  const oauth = oauthConfig(values);
  const allowedHosts = list(values.GENERATION_HTTP_ALLOWED_HOSTS).map((entry) => entry.toLowerCase());
  // Behind its public address, that address's host is one the server answers to.
  if (oauth !== undefined && allowedHosts.length > 0) allowedHosts.push(new URL(oauth.publicUrl).host);
  if (!isLoopbackHost(host) && allowedHosts.length === 0) {
    throw new ConfigError(
      `GENERATION_HTTP_HOST (or --host): ${JSON.stringify(host)} is not a loopback address, so GENERATION_HTTP_ALLOWED_HOSTS ` +
        "(or --allowed-hosts) must list the host names clients use to reach this server (e.g. mcp.example.com), " +
        "so that DNS rebinding cannot turn a browser against it.",
    );
  }
  const allowedOrigins = list(values.GENERATION_HTTP_ALLOWED_ORIGINS).map((origin) => {
    if (!URL.canParse(origin) || new URL(origin).origin !== origin.replace(/\/$/, "").toLowerCase()) {
      throw new ConfigError(
        `GENERATION_HTTP_ALLOWED_ORIGINS (or --allowed-origins): ${JSON.stringify(origin)} is not an origin such as https://app.example.com.`,
      );
    }
    return new URL(origin).origin;
  });
  return {
    port: values.GENERATION_HTTP_PORT ?? DEFAULT_HTTP_PORT,
    host,
    allowedHosts,
    allowedOrigins,
    tokenHashes: tokenHashes(values, readFile),
    oauth,
    maxBodyBytes: values.GENERATION_HTTP_MAX_BODY_BYTES ?? DEFAULT_HTTP_MAX_BODY_BYTES,
    maxConcurrentPerKey: values.GENERATION_HTTP_MAX_CONCURRENT ?? DEFAULT_HTTP_MAX_CONCURRENT,
    maxConnections: values.GENERATION_HTTP_MAX_CONNECTIONS ?? DEFAULT_HTTP_MAX_CONNECTIONS,
    metrics: metricsConfig(values),
  };
}

/** Whether a GENERATION_METRICS value (already checked to be on/off and its synonyms) turns metrics on. */
export function isMetricsOn(value: string | undefined): boolean {
  return ["on", "1", "true"].includes(value?.trim().toLowerCase() ?? "");
}

/** Shortest metrics token accepted: a guessable one would protect nothing. */
const MIN_METRICS_TOKEN_CHARS = 16;

function metricsConfig(values: ConfigValues): MetricsConfig | undefined {
  const token = values.GENERATION_METRICS_TOKEN;
  if (!isMetricsOn(values.GENERATION_METRICS)) {
    if (token !== undefined) {
      throw new ConfigError(
        "GENERATION_METRICS_TOKEN is set but GENERATION_METRICS is not on: set GENERATION_METRICS=on to serve GET /metrics, or unset the token.",
      );
    }
    return undefined;
  }
  if (token !== undefined && (token.length < MIN_METRICS_TOKEN_CHARS || /\s/.test(token))) {
    throw new ConfigError(
      `GENERATION_METRICS_TOKEN: must be at least ${MIN_METRICS_TOKEN_CHARS} characters without spaces (e.g. the output of \`openssl rand -hex 32\`).`,
    );
  }
  return { token };
}

/**
 * OAuth mode, when GENERATION_OAUTH_ISSUER is set: it needs GENERATION_PUBLIC_URL (the resource is
 * `<public url>/mcp`). The issuer must be https, except on a loopback address (a local identity provider).
 */
function oauthConfig(values: ConfigValues): OAuthConfig | undefined {
  const issuer = values.GENERATION_OAUTH_ISSUER;
  const publicUrl = values.GENERATION_PUBLIC_URL;
  const audience = values.GENERATION_OAUTH_AUDIENCE;
  if (issuer === undefined) {
    if (audience !== undefined) {
      throw new ConfigError(
        "GENERATION_OAUTH_AUDIENCE is set without GENERATION_OAUTH_ISSUER: set both, or neither.",
      );
    }
    return undefined;
  }
  if (!URL.canParse(issuer)) {
    throw new ConfigError(
      `GENERATION_OAUTH_ISSUER: ${JSON.stringify(issuer)} is not a URL (e.g. https://id.example.com/realms/team).`,
    );
  }
  const issuerUrl = new URL(issuer);
  const loopback = isLoopbackHost(issuerUrl.hostname.replace(/^\[|\]$/g, ""));
  if (issuerUrl.protocol !== "https:" && !(issuerUrl.protocol === "http:" && loopback)) {
    throw new ConfigError(
      `GENERATION_OAUTH_ISSUER: ${JSON.stringify(issuer)} must be an https:// address (http:// only on a loopback address, for a local identity provider).`,
    );
  }
  if (publicUrl === undefined) {
    throw new ConfigError(
      "GENERATION_OAUTH_ISSUER is set: GENERATION_PUBLIC_URL must say where clients reach this server (e.g. https://mcp.example.com); the protected resource is <public url>/mcp.",
    );
  }
  if (!URL.canParse(publicUrl) || !/^https?:$/.test(new URL(publicUrl).protocol)) {
    throw new ConfigError(
      `GENERATION_PUBLIC_URL: ${JSON.stringify(publicUrl)} is not an http(s) address such as https://mcp.example.com.`,
    );
  }
  const base = new URL(publicUrl);
  if (base.search !== "" || base.hash !== "" || base.username !== "" || base.password !== "") {
    throw new ConfigError(
      "GENERATION_PUBLIC_URL: give the server's public origin only (no query, fragment or user name).",
    );
  }
  const origin = `${base.origin}${base.pathname.replace(/\/+$/, "")}`;
  const resource = `${origin}/mcp`;
  return {
    issuer,
    publicUrl: origin,
    resource,
    audience: audience ?? resource,
    metadataUrl: getOAuthProtectedResourceMetadataUrl(new URL(resource)),
  };
}

function tokenHashes(values: ConfigValues, readFile: (file: string) => string): string[] | undefined {
  const inline = values.GENERATION_HTTP_TOKENS;
  const file = values.GENERATION_HTTP_TOKENS_FILE;
  if (inline !== undefined && file !== undefined) {
    throw new ConfigError("set GENERATION_HTTP_TOKENS or GENERATION_HTTP_TOKENS_FILE, not both.");
  }
  if (inline === undefined && file === undefined) return undefined;
  const variable =
    inline !== undefined ? "GENERATION_HTTP_TOKENS" : "GENERATION_HTTP_TOKENS_FILE (or --tokens-file)";
  let text = inline ?? "";
  if (file !== undefined) {
    try {
      text = readFile(file);
    } catch (error) {
      throw new ConfigError(
        `${variable}: cannot read ${JSON.stringify(file)} (${(error as NodeJS.ErrnoException).code ?? "error"}).`,
      );
    }
  }
  const hashes = text
    .split("\n")
    .map((line) => line.replace(/#.*$/, ""))
    .flatMap((line) => list(line))
    .map((hash) => hash.toLowerCase());
  const bad = hashes.find((hash) => !/^[0-9a-f]{64}$/.test(hash));
  if (bad !== undefined || hashes.length === 0) {
    throw new ConfigError(
      `${variable}: expected the SHA-256 (64 hex digits) of each caller token, e.g. the output of ` +
        '`printf %s "$TOKEN" | sha256sum`; the tokens themselves never go into the configuration.',
    );
  }
  return [...new Set(hashes)];
}

/**
 * Which key the HTTP server uses. Without caller tokens or OAuth, each caller's Bearer is its own service
 * key, so a server-side key would be a key handed to anyone who can reach the port: refused. With caller
 * tokens or OAuth, the server's own key (or the sandbox's) serves them all.
 */
export function checkHttpKeys(config: Config, sandbox: boolean): Config {
  const gateway = config.http?.tokenHashes !== undefined;
  const oauth = config.http?.oauth !== undefined;
  if (gateway && oauth) {
    throw new ConfigError(
      "GENERATION_HTTP_TOKENS(_FILE) and GENERATION_OAUTH_ISSUER are both set: callers sign in one way, choose one.",
    );
  }
  if (!gateway && !oauth && config.apiKey !== undefined) {
    throw new ConfigError(
      "GENERATION_API_KEY is set with --http but no caller tokens or OAuth are: every caller would use this key. Either " +
        "unset GENERATION_API_KEY (each caller sends its own service key as Authorization: Bearer), set " +
        "GENERATION_HTTP_TOKENS_FILE to the SHA-256 hashes of the tokens your callers present, or set " +
        "GENERATION_OAUTH_ISSUER and GENERATION_PUBLIC_URL so callers sign in at your identity provider.",
    );
  }
  if ((gateway || oauth) && !sandbox && config.apiKey === undefined) {
    const which = gateway ? "GENERATION_HTTP_TOKENS(_FILE)" : "GENERATION_OAUTH_ISSUER";
    throw new ConfigError(
      `${which} is set: the server calls the service with its own GENERATION_API_KEY, which is missing.`,
    );
  }
  if (!sandbox && config.baseUrl === undefined) {
    throw new ConfigError(
      "set GENERATION_BASE_URL (the service address ending in /api/v1) for --http, or add --sandbox to serve the built-in sandbox.",
    );
  }
  return config;
}
