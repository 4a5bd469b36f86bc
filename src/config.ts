/**
 * The only reader of the environment. Precedence: defaults < environment < command-line flags.
 * Every problem names the variable (or flag) to fix.
 */
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import * as z from "zod";
import { checkHttpKeys, httpConfig, type HttpConfig } from "./config-http.js";

export { DEFAULT_HTTP_PORT, isLoopbackHost, type HttpConfig, type OAuthConfig } from "./config-http.js";
import { defaultStateDir } from "./state-dir.js";

export interface Config {
  apiKey: string | undefined;
  baseUrl: string | undefined;
  sandbox: boolean;
  pollIntervalMs: number;
  waitTimeoutS: number;
  outputDir: string;
  /** Undefined = not configured: the documented default folders apply (none over HTTP). */
  allowedDirs: string[] | undefined;
  stateDir: string;
  /** GENERATION_OUTPUT_DIR was set: over HTTP, downloads onto the server happen only then. */
  outputDirConfigured: boolean;
  /** Streamable HTTP instead of stdio (`--http`), and where it listens. */
  http: HttpConfig | undefined;
  /** Image previews (MCP `image` content) of finished images and video stills in results. */
  previews: boolean;
  /** Longest side of a preview, in pixels. */
  previewMaxSide: number;
  /** MCP `resource_link` content for finished media (off by default: some clients reject the whole result). */
  resourceLinks: boolean;
  /** Shared state on Redis for many replicas (GENERATION_REDIS_URL); undefined: all state is local. */
  redis: RedisConfig | undefined;
  /**
   * How the user gives this server its settings (GENERATION_SETTINGS_FORM): `env`, variables in the MCP
   * client's configuration, or `mcpb`, the form of Claude Desktop's extension (set by the bundle), so that
   * advice names what the user can change (advice.ts).
   */
  settingsForm: "env" | "mcpb";
  /** Spend limits in estimated credits (src/spend/); undefined (or each member undefined): none. */
  spend?: SpendLimits | undefined;
}

export interface SpendLimits {
  /** GENERATION_MAX_CREDITS_PER_CALL: a call estimated above it is refused unless the user confirms it. */
  maxCreditsPerCall: number | undefined;
  /** GENERATION_DAILY_CREDITS: what one caller may start per UTC day. */
  dailyCredits: number | undefined;
  /** GENERATION_CONFIRM_ABOVE_CREDITS: above it the user is asked to confirm the cost first. */
  confirmAboveCredits: number | undefined;
}

export interface RedisConfig {
  /** redis:// or rediss:// address; may carry a password, so it is a secret and never logged whole. */
  url: string;
  /** Every key starts with it, so several deployments can share one Redis. */
  prefix: string;
  /**
   * While Redis refuses writes: `refuse` (default) sends no start that could not be agreed with the other
   * replicas; `alone` lets each replica decide alone, as a single server would (state/redis.ts).
   */
  whenDown: "refuse" | "alone";
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

/** Flags that mirror the environment (`--poll-interval-ms 2000` = GENERATION_POLL_INTERVAL_MS=2000). */
export const FLAG_TO_ENV: Readonly<Record<string, string>> = {
  "--base-url": "GENERATION_BASE_URL",
  "--poll-interval-ms": "GENERATION_POLL_INTERVAL_MS",
  "--wait-timeout-s": "GENERATION_WAIT_TIMEOUT_S",
  "--output-dir": "GENERATION_OUTPUT_DIR",
  "--allowed-dirs": "GENERATION_ALLOWED_DIRS",
  "--state-dir": "GENERATION_STATE_DIR",
  "--port": "GENERATION_HTTP_PORT",
  "--host": "GENERATION_HTTP_HOST",
  "--allowed-hosts": "GENERATION_HTTP_ALLOWED_HOSTS",
  "--allowed-origins": "GENERATION_HTTP_ALLOWED_ORIGINS",
  "--tokens-file": "GENERATION_HTTP_TOKENS_FILE",
  "--max-body-bytes": "GENERATION_HTTP_MAX_BODY_BYTES",
  "--max-concurrent": "GENERATION_HTTP_MAX_CONCURRENT",
  "--max-connections": "GENERATION_HTTP_MAX_CONNECTIONS",
  "--previews": "GENERATION_PREVIEWS",
  "--preview-max-side": "GENERATION_PREVIEW_MAX_SIDE",
  "--resource-links": "GENERATION_RESOURCE_LINKS",
  "--redis-url": "GENERATION_REDIS_URL",
  "--redis-prefix": "GENERATION_REDIS_PREFIX",
  "--redis-when-down": "GENERATION_REDIS_WHEN_DOWN",
  "--settings-form": "GENERATION_SETTINGS_FORM",
  "--public-url": "GENERATION_PUBLIC_URL",
  "--oauth-issuer": "GENERATION_OAUTH_ISSUER",
  "--oauth-audience": "GENERATION_OAUTH_AUDIENCE",
  "--max-credits-per-call": "GENERATION_MAX_CREDITS_PER_CALL",
  "--daily-credits": "GENERATION_DAILY_CREDITS",
  "--confirm-above-credits": "GENERATION_CONFIRM_ABOVE_CREDITS",
};

export const DEFAULT_REDIS_PREFIX = "generation-mcp:";

/** Previews on; 1024 px keeps four of them inside one result's budget (see media/previews.ts). */
export const DEFAULT_PREVIEW_MAX_SIDE = 1024;

/**
 * Claude Desktop starts an MCPB bundle with `${user_config.<key>}` left as it is when the user left that
 * optional field blank (and a cleared text field arrives as ""): both mean "not set", never a value.
 */
const UNFILLED_PLACEHOLDER = /^\$\{user_config\.[^}]*\}$/;

export function isUnfilledPlaceholder(value: string): boolean {
  return UNFILLED_PLACEHOLDER.test(value.trim());
}

const optionalText = z
  .string()
  .transform((value) => value.trim())
  .optional()
  .transform((value) =>
    value === "" || (value !== undefined && isUnfilledPlaceholder(value)) ? undefined : value,
  );

const numberText = (schema: z.ZodNumber) =>
  z
    .string()
    .regex(/^\d+(\.\d+)?$/, "must be a non-negative number")
    .transform(Number)
    .pipe(schema);

const onOffText = optionalText
  .transform((value) => value?.toLowerCase())
  .pipe(z.enum(["on", "off", "1", "0", "true", "false"], "must be on or off").optional());

/** A number of credits: at most two decimals (the price table's 7.5/s gives halves), at most a billion. */
const creditsText = optionalText.pipe(
  numberText(z.number().max(1_000_000_000, "must be at most 1000000000 credits")).optional(),
);

const schema = z.object({
  GENERATION_API_KEY: optionalText,
  GENERATION_BASE_URL: optionalText,
  GENERATION_SANDBOX: optionalText.pipe(z.enum(["0", "1", "true", "false"]).optional()),
  GENERATION_POLL_INTERVAL_MS: optionalText.pipe(
    numberText(z.number().int("must be a whole number of milliseconds").min(100).max(600_000)).optional(),
  ),
  GENERATION_WAIT_TIMEOUT_S: optionalText.pipe(numberText(z.number().min(0).max(3600)).optional()),
  GENERATION_OUTPUT_DIR: optionalText,
  GENERATION_ALLOWED_DIRS: optionalText,
  GENERATION_STATE_DIR: optionalText,
  GENERATION_HTTP: optionalText.pipe(z.enum(["0", "1", "true", "false"]).optional()),
  GENERATION_HTTP_PORT: optionalText.pipe(
    numberText(z.number().int("must be a whole port number").min(0).max(65_535)).optional(),
  ),
  GENERATION_HTTP_HOST: optionalText,
  GENERATION_HTTP_ALLOWED_HOSTS: optionalText,
  GENERATION_HTTP_ALLOWED_ORIGINS: optionalText,
  GENERATION_HTTP_TOKENS: optionalText,
  GENERATION_HTTP_TOKENS_FILE: optionalText,
  GENERATION_HTTP_MAX_BODY_BYTES: optionalText.pipe(
    numberText(
      z
        .number()
        .int("must be a whole number of bytes")
        .min(1024)
        .max(64 * 1024 * 1024),
    ).optional(),
  ),
  GENERATION_HTTP_MAX_CONCURRENT: optionalText.pipe(
    numberText(z.number().int("must be a whole number").min(1).max(10_000)).optional(),
  ),
  GENERATION_HTTP_MAX_CONNECTIONS: optionalText.pipe(
    numberText(z.number().int("must be a whole number").min(16).max(100_000)).optional(),
  ),
  GENERATION_PUBLIC_URL: optionalText,
  GENERATION_OAUTH_ISSUER: optionalText,
  GENERATION_OAUTH_AUDIENCE: optionalText,
  GENERATION_PREVIEWS: onOffText,
  // At most 2000: Claude refuses larger images in a request that holds many.
  GENERATION_PREVIEW_MAX_SIDE: optionalText.pipe(
    numberText(z.number().int("must be a whole number of pixels").min(64).max(2000)).optional(),
  ),
  GENERATION_RESOURCE_LINKS: onOffText,
  GENERATION_SETTINGS_FORM: optionalText.pipe(z.enum(["env", "mcpb"], "must be env or mcpb").optional()),
  GENERATION_REDIS_URL: optionalText.pipe(
    z
      .string()
      .refine(
        (value) => URL.canParse(value) && /^rediss?:$/.test(new URL(value).protocol),
        "must be a redis:// or rediss:// address, e.g. redis://127.0.0.1:6379",
      )
      .optional(),
  ),
  GENERATION_REDIS_WHEN_DOWN: optionalText
    .transform((value) => value?.toLowerCase())
    .pipe(z.enum(["refuse", "alone"], "must be refuse or alone").optional()),
  GENERATION_MAX_CREDITS_PER_CALL: creditsText,
  GENERATION_DAILY_CREDITS: creditsText,
  GENERATION_CONFIRM_ABOVE_CREDITS: creditsText,
  GENERATION_METRICS: onOffText,
  GENERATION_METRICS_TOKEN: optionalText,
  GENERATION_REDIS_PREFIX: optionalText.pipe(
    z
      .string()
      .regex(/^[A-Za-z0-9:_.-]{1,64}$/, "must be 1 to 64 letters, digits or : _ . -")
      .optional(),
  ),
});

export interface LoadConfigInput {
  env: NodeJS.ProcessEnv;
  flags?: Record<string, string | true>;
  /** Folders given as command-line arguments: the upload folders, as `--allowed-dirs` would give them. */
  directories?: readonly string[];
  home?: string;
  platform?: NodeJS.Platform;
  /** Reads GENERATION_HTTP_TOKENS_FILE; injectable for tests. */
  readFile?: (file: string) => string;
}

export function loadConfig({
  env,
  flags = {},
  directories = [],
  home = homedir(),
  platform = process.platform,
  readFile = (file) => readFileSync(file, "utf8"),
}: LoadConfigInput) {
  const merged: Record<string, string | undefined> = {};
  for (const key of Object.keys(schema.shape)) merged[key] = env[key];
  for (const [flag, variable] of Object.entries(FLAG_TO_ENV)) {
    const value = flags[flag];
    if (typeof value === "string") merged[variable] = value;
  }
  const parsed = schema.safeParse(merged);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const variable = String(issue?.path[0] ?? "configuration");
    const flag = Object.entries(FLAG_TO_ENV).find(([, name]) => name === variable)?.[0];
    throw new ConfigError(`${variable}${flag ? ` (or ${flag})` : ""}: ${issue?.message ?? "invalid value"}`);
  }
  const values = parsed.data;
  const sandbox =
    flags["--sandbox"] === true || values.GENERATION_SANDBOX === "1" || values.GENERATION_SANDBOX === "true";
  const http =
    flags["--http"] === true || values.GENERATION_HTTP === "1" || values.GENERATION_HTTP === "true";
  const absolute = (value: string) =>
    path.resolve(value.startsWith("~/") ? path.join(home, value.slice(2)) : value);
  const folderArguments = argumentFolders(directories, flags);
  const config: Config = {
    apiKey: values.GENERATION_API_KEY,
    baseUrl: values.GENERATION_BASE_URL === undefined ? undefined : checkBaseUrl(values.GENERATION_BASE_URL),
    sandbox,
    pollIntervalMs: values.GENERATION_POLL_INTERVAL_MS ?? 5000,
    waitTimeoutS: values.GENERATION_WAIT_TIMEOUT_S ?? 45,
    outputDir: absolute(values.GENERATION_OUTPUT_DIR ?? path.join(home, "Downloads", "generation-mcp")),
    allowedDirs:
      folderArguments ??
      values.GENERATION_ALLOWED_DIRS?.split(path.delimiter)
        .map((entry) => entry.trim())
        .filter((entry) => entry.length > 0)
        .map(absolute),
    stateDir: absolute(values.GENERATION_STATE_DIR ?? defaultStateDir(env, platform, home)),
    outputDirConfigured: values.GENERATION_OUTPUT_DIR !== undefined,
    http: http ? httpConfig(values, readFile) : undefined,
    previews: isOn(values.GENERATION_PREVIEWS, true),
    previewMaxSide: values.GENERATION_PREVIEW_MAX_SIDE ?? DEFAULT_PREVIEW_MAX_SIDE,
    resourceLinks: isOn(values.GENERATION_RESOURCE_LINKS, false),
    settingsForm: values.GENERATION_SETTINGS_FORM ?? "env",
    redis:
      values.GENERATION_REDIS_URL === undefined
        ? undefined
        : {
            url: values.GENERATION_REDIS_URL,
            prefix: values.GENERATION_REDIS_PREFIX ?? DEFAULT_REDIS_PREFIX,
            whenDown: values.GENERATION_REDIS_WHEN_DOWN ?? "refuse",
          },
    spend: spendLimits(values),
  };
  if (config.http) return checkHttpKeys(config, sandbox);
  if (!sandbox && (config.apiKey === undefined || config.baseUrl === undefined)) {
    const sandboxHint =
      "or pass --sandbox (GENERATION_SANDBOX=1) to try every tool against the built-in sandbox with no account.";
    const baseUrlRule = "the service address ending in /api/v1";
    // Half set is a different mistake from nothing set: name the one that is missing.
    if (config.apiKey !== undefined) {
      throw new ConfigError(
        `GENERATION_API_KEY is set but GENERATION_BASE_URL is not: set it (or --base-url) to ${baseUrlRule}, ${sandboxHint}`,
      );
    }
    if (config.baseUrl !== undefined) {
      throw new ConfigError(
        `GENERATION_BASE_URL is set but GENERATION_API_KEY is not: set it to your service API key, ${sandboxHint}`,
      );
    }
    throw new ConfigError(
      `set GENERATION_API_KEY and GENERATION_BASE_URL (${baseUrlRule}) to reach the real service, ${sandboxHint}`,
    );
  }
  return config;
}

function spendLimits(values: ConfigValues): SpendLimits {
  const limits: SpendLimits = {
    maxCreditsPerCall: values.GENERATION_MAX_CREDITS_PER_CALL,
    dailyCredits: values.GENERATION_DAILY_CREDITS,
    confirmAboveCredits: values.GENERATION_CONFIRM_ABOVE_CREDITS,
  };
  const { maxCreditsPerCall: cap, confirmAboveCredits: confirm } = limits;
  // Asking above a threshold the cap already refuses would never happen: the settings contradict each other.
  if (cap !== undefined && confirm !== undefined && confirm > cap) {
    throw new ConfigError(
      `GENERATION_CONFIRM_ABOVE_CREDITS (or --confirm-above-credits): ${confirm} is above GENERATION_MAX_CREDITS_PER_CALL (${cap}); ` +
        "the user is asked above the confirm threshold, and a call above the per-call cap is asked for too, so the confirm threshold must be at most the cap.",
    );
  }
  return limits;
}

function isOn(value: string | undefined, byDefault: boolean): boolean {
  return value === undefined ? byDefault : ["on", "1", "true"].includes(value);
}

/**
 * The upload folders given as arguments (`generation-mcp [options] [--] DIR...`). They exist for MCPB: a
 * multi-folder field reaches the server only as one argument per folder (a variable cannot carry a list
 * there), and as its bare placeholder when left blank. Like a flag they win over GENERATION_ALLOWED_DIRS.
 * Only absolute paths are taken, so a mistyped subcommand (`generation-mcp sandbx`) is refused, not
 * mistaken for a folder.
 */
function argumentFolders(
  directories: readonly string[],
  flags: Record<string, string | true>,
): string[] | undefined {
  const given = directories
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "" && !isUnfilledPlaceholder(entry));
  if (given.length === 0) return undefined;
  if (typeof flags["--allowed-dirs"] === "string") {
    throw new ConfigError("give the upload folders either as --allowed-dirs or as arguments, not both.");
  }
  const relative = given.find((entry) => !path.isAbsolute(entry));
  if (relative !== undefined) {
    throw new ConfigError(
      `unexpected argument ${showValue(relative)}: arguments after the options are upload folders ` +
        "(as --allowed-dirs) and must be absolute paths.",
    );
  }
  return given.map((entry) => path.resolve(entry));
}

const BASE_URL_RULE = "the service address up to and including /api/v1, e.g. https://<service>/api/v1";
const VERSION_PATH = /\/api\/v1$/;

/**
 * The spec's `{base_url}`: an http(s) address whose path ends in the version segment `/api/v1`, without
 * credentials, query or fragment. Anything else is refused at start with the value we think was meant, since
 * every call against a wrong base URL would fail with advice about ids instead of addresses.
 */
export function checkBaseUrl(value: string): string {
  const refuse = (problem: string, suggestion?: string): never => {
    const hint = suggestion === undefined ? "" : ` Did you mean ${suggestion}?`;
    throw new ConfigError(
      `GENERATION_BASE_URL (or --base-url): ${problem}; it must be ${BASE_URL_RULE}.${hint}`,
    );
  };
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return refuse(`${showValue(value)} is not a URL`);
  }
  const shown = showValue(`${url.protocol}//${url.host}${url.pathname}`);
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return refuse(`${shown} does not start with http:// or https://`);
  }
  const path = url.pathname.replace(/\/+$/, "");
  const intended = `${url.origin}${intendedPath(path)}`;
  if (url.username !== "" || url.password !== "") {
    return refuse(
      "the address carries a user name or password (the API key goes in GENERATION_API_KEY)",
      intended,
    );
  }
  if (url.search !== "" || url.hash !== "") return refuse(`${shown} has a query or fragment`, intended);
  if (!VERSION_PATH.test(path)) return refuse(`${shown} does not end in /api/v1`, intended);
  return `${url.origin}${path}`;
}

function intendedPath(path: string): string {
  const inside = path.indexOf("/api/v1/");
  if (inside >= 0) return path.slice(0, inside + "/api/v1".length);
  if (VERSION_PATH.test(path)) return path;
  if (path.endsWith("/api")) return `${path}/v1`;
  if (path.endsWith("/v1")) return `${path.slice(0, -"/v1".length)}/api/v1`;
  return `${path}/api/v1`;
}

function showValue(value: string): string {
  // eslint-disable-next-line no-control-regex
  const printable = value.replace(/[\u0000-\u001F\u007F-\u009F]/g, "");
  return JSON.stringify(printable.length > 200 ? `${printable.slice(0, 200)}…` : printable);
}

/**
 * The values of every variable, checked by the schema; the `--http` part of the configuration reads them in
 * config-http.ts.
 */
export type ConfigValues = z.output<typeof schema>;
