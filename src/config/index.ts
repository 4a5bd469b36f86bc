/** The configuration, the only reader of the environment: defaults < environment < flags (schema.ts). */
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import { checkHttpKeys, httpConfig, isOn, type HttpConfig } from "./http.js";
import { didYouMean } from "./did-you-mean.js";
import { COMMANDS, ConfigError, DEFAULTS, isUnfilledPlaceholder, readSettings } from "./schema.js";

export { isOn, type HttpConfig, type OAuthConfig } from "./http.js";
export * from "./schema.js";
export const DEFAULT_HTTP_MAX_BODY_BYTES = DEFAULTS.httpMaxBodyBytes;

/** The largest JSON-RPC message one transport message may carry: 10 MiB, like the MCP SDK's stdio default. */
export const MAX_MESSAGE_BYTES = 10 * 1024 * 1024;
/** How long an MCP task (either era) may live: a client's ttl is raised to the least, cut to the most. */
export const MIN_TASK_TTL_MS = 60 * 1000;
export const MAX_TASK_TTL_MS = 24 * 60 * 60 * 1000;

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
  http: HttpConfig | undefined;
  previews: boolean;
  previewMaxSide: number;
  /** GENERATION_FFMPEG_PATH; undefined: `ffmpeg` on PATH. */
  ffmpegPath?: string | undefined;
  resourceLinks: boolean;
  redis: RedisConfig | undefined;
  /** `mcpb`: Claude Desktop's extension form holds the settings, so advice names its fields. */
  settingsForm: "env" | "mcpb";
  /** How long an upload link (`upload_image` with `from_user`) stays open. */
  uploadLinkTtlS: number;
  /** In estimated credits; undefined (or a member undefined): no such limit. */
  spend?: SpendLimits | undefined;
}

export interface SpendLimits {
  maxCreditsPerCall: number | undefined;
  dailyCredits: number | undefined;
  confirmAboveCredits: number | undefined;
}

/** `url` may carry a password: a secret, never logged whole. */
export interface RedisConfig {
  url: string;
  prefix: string;
  /** `refuse`: no start the replicas could not agree on; `alone`: each decides as a single server would. */
  whenDown: "refuse" | "alone";
}

export interface LoadConfigInput {
  env: NodeJS.ProcessEnv;
  flags?: Record<string, string | true>;
  /** Folders given as command-line arguments: the upload folders, as `--allowed-dirs` would give them. */
  directories?: readonly string[];
  home?: string;
  platform?: NodeJS.Platform;
  readFile?: (file: string) => string;
}

export function loadConfig({
  env,
  flags = {},
  directories = [],
  home = homedir(),
  platform = process.platform,
  readFile = (file) => readFileSync(file, "utf8"),
}: LoadConfigInput): Config {
  const values = readSettings(env, flags);
  const folders = argumentFolders(directories, typeof flags["--allowed-dirs"] === "string");
  const absolute = (value: string) =>
    path.resolve(value.startsWith("~/") ? path.join(home, value.slice(2)) : value);
  const apiKey = values.GENERATION_API_KEY;
  const baseUrl = values.GENERATION_BASE_URL && checkBaseUrl(values.GENERATION_BASE_URL);
  const sandbox = isOn(values.GENERATION_SANDBOX);
  const http = isOn(values.GENERATION_HTTP) ? httpConfig(values, readFile) : undefined;
  const cap = values.GENERATION_MAX_CREDITS_PER_CALL;
  const confirm = values.GENERATION_CONFIRM_ABOVE_CREDITS;
  // Asking above a threshold the cap already refuses would never happen: the settings contradict each other.
  if (cap !== undefined && confirm !== undefined && confirm > cap) {
    throw new ConfigError(
      `GENERATION_CONFIRM_ABOVE_CREDITS (or --confirm-above-credits): ${confirm} is above GENERATION_MAX_CREDITS_PER_CALL (${cap}); ` +
        "the user is asked above the confirm threshold, and a call above the per-call cap is asked for too, so the confirm threshold must be at most the cap.",
    );
  }
  if (http) checkHttpKeys(http, apiKey, baseUrl, sandbox);
  else if (!sandbox && (apiKey === undefined || baseUrl === undefined)) throw missingService(apiKey, baseUrl);
  return {
    apiKey,
    baseUrl,
    sandbox,
    pollIntervalMs: values.GENERATION_POLL_INTERVAL_MS ?? DEFAULTS.pollIntervalMs,
    waitTimeoutS: values.GENERATION_WAIT_TIMEOUT_S ?? DEFAULTS.waitTimeoutS,
    outputDir: absolute(values.GENERATION_OUTPUT_DIR ?? path.join(home, "Downloads", "generation-mcp")),
    allowedDirs:
      folders ??
      values.GENERATION_ALLOWED_DIRS?.split(path.delimiter)
        .map((entry) => entry.trim())
        .filter((entry) => entry !== "")
        .map(absolute),
    stateDir: absolute(values.GENERATION_STATE_DIR ?? defaultStateDir(env, platform, home)),
    outputDirConfigured: values.GENERATION_OUTPUT_DIR !== undefined,
    http,
    previews: isOn(values.GENERATION_PREVIEWS ?? "on"),
    previewMaxSide: values.GENERATION_PREVIEW_MAX_SIDE ?? DEFAULTS.previewMaxSide,
    ffmpegPath: values.GENERATION_FFMPEG_PATH,
    resourceLinks: isOn(values.GENERATION_RESOURCE_LINKS),
    settingsForm: values.GENERATION_SETTINGS_FORM ?? "env",
    uploadLinkTtlS: values.GENERATION_UPLOAD_LINK_TTL_S ?? DEFAULTS.uploadLinkTtlS,
    redis:
      values.GENERATION_REDIS_URL === undefined
        ? undefined
        : {
            url: values.GENERATION_REDIS_URL,
            prefix: values.GENERATION_REDIS_PREFIX ?? DEFAULTS.redisPrefix,
            whenDown: values.GENERATION_REDIS_WHEN_DOWN ?? "refuse",
          },
    spend: {
      maxCreditsPerCall: cap,
      dailyCredits: values.GENERATION_DAILY_CREDITS,
      confirmAboveCredits: confirm,
    },
  };
}

/** Half set is a different mistake from nothing set: name the one that is missing. */
function missingService(apiKey: string | undefined, baseUrl: string | undefined): ConfigError {
  const rule = "the service address ending in /api/v1";
  let problem = `set GENERATION_API_KEY and GENERATION_BASE_URL (${rule}) to reach the real service`;
  if (apiKey !== undefined) {
    problem = `GENERATION_API_KEY is set but GENERATION_BASE_URL is not: set it (or --base-url) to ${rule}`;
  } else if (baseUrl !== undefined) {
    problem = "GENERATION_BASE_URL is set but GENERATION_API_KEY is not: set it to your service API key";
  }
  return new ConfigError(
    `${problem}, or pass --sandbox (GENERATION_SANDBOX=1) to try every tool against the built-in sandbox with no account.`,
  );
}

/**
 * Upload folders given as arguments, as MCPB passes a multi-folder field (a blank one as its placeholder);
 * absolute paths only, so a mistyped subcommand (`generation-mcp sandbx`) is refused, not taken for a folder.
 */
function argumentFolders(directories: readonly string[], flagToo: boolean): string[] | undefined {
  const given = directories
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "" && !isUnfilledPlaceholder(entry));
  if (given.length === 0) return undefined;
  if (flagToo)
    throw new ConfigError("give the upload folders either as --allowed-dirs or as arguments, not both.");
  const relative = given.find((entry) => !path.isAbsolute(entry));
  if (relative !== undefined) {
    throw new ConfigError(
      `unexpected argument ${showValue(relative)}: arguments after the options are upload folders ` +
        `(as --allowed-dirs) and must be absolute paths.${didYouMean(relative, ["sandbox", ...Object.keys(COMMANDS)])}`,
    );
  }
  return given.map((entry) => path.resolve(entry));
}

/** The platform's per-user state folder (XDG_STATE_HOME, Application Support, LOCALAPPDATA). */
export function defaultStateDir(env: NodeJS.ProcessEnv, platform: NodeJS.Platform, home: string): string {
  if (platform === "win32") {
    return `${(env["LOCALAPPDATA"] || `${home}\\AppData\\Local`).replace(/[\\/]+$/, "")}\\generation-mcp`;
  }
  if (platform === "darwin") return path.join(home, "Library", "Application Support", "generation-mcp");
  const xdg = env["XDG_STATE_HOME"];
  // The XDG spec says relative values are invalid and must be ignored.
  return path.join(xdg?.startsWith("/") ? xdg : path.join(home, ".local", "state"), "generation-mcp");
}

/**
 * The spec's `{base_url}`: http(s), ending in `/api/v1`, no credentials, query or fragment; else refused at
 * start with the value probably meant, as every call would fail with advice about ids, not addresses.
 */
export function checkBaseUrl(value: string): string {
  const refuse = (problem: string, suggestion?: string): never => {
    const hint = suggestion === undefined ? "" : ` Did you mean ${suggestion}?`;
    throw new ConfigError(
      `GENERATION_BASE_URL (or --base-url): ${problem}; it must be the service address up to and including /api/v1, e.g. https://<service>/api/v1.${hint}`,
    );
  };
  if (!URL.canParse(value)) return refuse(`${showValue(value)} is not a URL`);
  const url = new URL(value);
  const shown = showValue(`${url.protocol}//${url.host}${url.pathname}`);
  if (!/^https?:$/.test(url.protocol)) return refuse(`${shown} does not start with http:// or https://`);
  const trimmed = url.pathname.replace(/\/+$/, "");
  const intended = url.origin + intendedPath(trimmed);
  if (url.username !== "" || url.password !== "") {
    return refuse(
      "the address carries a user name or password (the API key goes in GENERATION_API_KEY)",
      intended,
    );
  }
  if (url.search !== "" || url.hash !== "") return refuse(`${shown} has a query or fragment`, intended);
  return trimmed.endsWith("/api/v1")
    ? url.origin + trimmed
    : refuse(`${shown} does not end in /api/v1`, intended);
}

function intendedPath(path: string): string {
  const inside = path.indexOf("/api/v1/");
  if (inside >= 0) return path.slice(0, inside + "/api/v1".length);
  if (path.endsWith("/api/v1")) return path;
  if (path.endsWith("/api")) return `${path}/v1`;
  return path.endsWith("/v1") ? `${path.slice(0, -"/v1".length)}/api/v1` : `${path}/api/v1`;
}

function showValue(value: string): string {
  // eslint-disable-next-line no-control-regex
  const printable = value.replace(/[\u0000-\u001F\u007F-\u009F]/g, "");
  return JSON.stringify(printable.length > 200 ? `${printable.slice(0, 200)}…` : printable);
}
