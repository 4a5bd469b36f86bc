/**
 * The only reader of the environment. Precedence: defaults < environment < command-line flags.
 * Every problem names the variable (or flag) to fix.
 */
import { homedir } from "node:os";
import path from "node:path";
import * as z from "zod";
import { defaultStateDir } from "./tasks/journal.js";

export interface Config {
  apiKey: string | undefined;
  baseUrl: string | undefined;
  sandbox: boolean;
  pollIntervalMs: number;
  waitTimeoutS: number;
  outputDir: string;
  /** Undefined = not configured: the documented default folders apply. */
  allowedDirs: string[] | undefined;
  stateDir: string;
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
};

const optionalText = z
  .string()
  .transform((value) => value.trim())
  .optional()
  .transform((value) => (value === "" ? undefined : value));

const numberText = (schema: z.ZodNumber) =>
  z
    .string()
    .regex(/^\d+(\.\d+)?$/, "must be a non-negative number")
    .transform(Number)
    .pipe(schema);

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
});

export interface LoadConfigInput {
  env: NodeJS.ProcessEnv;
  flags?: Record<string, string | true>;
  home?: string;
  platform?: NodeJS.Platform;
}

export function loadConfig({
  env,
  flags = {},
  home = homedir(),
  platform = process.platform,
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
  const absolute = (value: string) =>
    path.resolve(value.startsWith("~/") ? path.join(home, value.slice(2)) : value);
  const config: Config = {
    apiKey: values.GENERATION_API_KEY,
    baseUrl: values.GENERATION_BASE_URL === undefined ? undefined : checkBaseUrl(values.GENERATION_BASE_URL),
    sandbox,
    pollIntervalMs: values.GENERATION_POLL_INTERVAL_MS ?? 5000,
    waitTimeoutS: values.GENERATION_WAIT_TIMEOUT_S ?? 45,
    outputDir: absolute(values.GENERATION_OUTPUT_DIR ?? path.join(home, "Downloads", "generation-mcp")),
    allowedDirs: values.GENERATION_ALLOWED_DIRS?.split(path.delimiter)
      .map((entry) => entry.trim())
      .filter((entry) => entry.length > 0)
      .map(absolute),
    stateDir: absolute(values.GENERATION_STATE_DIR ?? defaultStateDir(env, platform, home)),
  };
  if (!sandbox && (config.apiKey === undefined || config.baseUrl === undefined)) {
    throw new ConfigError(
      "set GENERATION_API_KEY and GENERATION_BASE_URL (the service address ending in /api/v1) to reach the " +
        "real service, or pass --sandbox (GENERATION_SANDBOX=1) to try every tool against the built-in " +
        "sandbox with no account.",
    );
  }
  return config;
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
