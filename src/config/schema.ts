/**
 * The one table of settings (variable, flag, reader, default, what it does): `--help`, the flag mapping,
 * README's table (scripts/config-table.mjs) and the install forms (scripts/distribution.mjs) come from it.
 */
import type { ParseArgsConfig } from "node:util";

export class ConfigError extends Error {
  override name = "ConfigError";
}

/** Claude Desktop passes an MCPB field left blank as its bare placeholder (a cleared one as ""): both unset. */
export const isUnfilledPlaceholder = (value: string): boolean =>
  /^\$\{user_config\.[^}]*\}$/.test(value.trim());

/**
 * How a setting is read: `kind` picks the install form's field; `parse` reads the trimmed value or throws.
 * Plain functions, not zod: a few strings read once at start, and the stdio cold start is measured.
 */
type Kind = "text" | "secret" | "dir" | "dirs" | "switch" | "on-off" | "number" | "credits";
const kind = <T>(name: Kind, parse: (value: string) => T) => ({ kind: name, parse });
const refuse = (problem: string): never => {
  throw new ConfigError(problem);
};
const number = (min: number, max: number, unit?: string) => (value: string) => {
  if (!/^\d+(\.\d+)?$/.test(value)) return refuse("must be a non-negative number");
  const read = Number(value);
  if (unit !== undefined && !Number.isInteger(read)) return refuse(`must be a whole ${unit}`);
  return read >= min && read <= max ? read : refuse(`must be from ${min} to ${max}`);
};
const whole = (min: number, max: number, unit = "number") => kind("number", number(min, max, unit));
const choice = <const T extends string>(name: Kind, values: readonly T[], problem: string) =>
  kind(name, (value): T => {
    const lower = value.toLowerCase();
    return values.find((allowed) => allowed === lower) ?? refuse(problem);
  });
const checked = (test: (value: string) => boolean, problem: string) =>
  kind("text", (value) => (test(value) ? value : refuse(problem)));
const asIs = (name: Kind) => kind(name, (value) => value);
const plain = asIs("text");
const onOff = choice("on-off", ["on", "off", "1", "0", "true", "false"], "must be on or off");
const onSwitch = choice("switch", ["0", "1", "true", "false"], "must be 1, 0, true or false");
/** Estimated credits: halves occur (7.5/s), so any non-negative number up to a billion. */
const credits = kind("credits", number(0, 1_000_000_000));
const isRedisUrl = (value: string) => URL.canParse(value) && /^rediss?:$/.test(new URL(value).protocol);

/** The defaults the code applies, named once for it and for the table. */
export const DEFAULTS = {
  pollIntervalMs: 5000,
  waitTimeoutS: 45,
  /** Four previews of 1024 px fit one result's budget (media/previews.ts). */
  previewMaxSide: 1024,
  httpPort: 8080,
  httpHost: "127.0.0.1",
  /** Below 5 MB, so a shared server refuses large bodies early. */
  httpMaxBodyBytes: 4 * 1024 * 1024,
  httpMaxConcurrent: 16,
  httpMaxConnections: 1024,
  redisPrefix: "generation-mcp:",
  uploadLinkTtlS: 900,
} as const;

/** One setting: its heading, flag with argument (`--port N`; none: variable only), reader, default, text. */
const set = <T>(
  section: string,
  flag: string | undefined,
  read: { kind: Kind; parse: (value: string) => T },
  fallback: string | number,
  description: string,
) => ({ section, flag, ...read, default: String(fallback), description });
type Setting = ReturnType<typeof set>;

const D = DEFAULTS;
// One line per setting, so the table reads as one.
// prettier-ignore
export const SETTINGS = {
  GENERATION_API_KEY:               set("Most people set these", undefined, asIs("secret"), "none", "the service API key, sent as `Authorization: Bearer`; from the environment only, never a flag (with `--http`: only beside gateway tokens or OAuth)"),
  GENERATION_BASE_URL:              set("Most people set these", "--base-url URL", plain, "none", "the service address up to and including `/api/v1` (checked at start)"),
  GENERATION_SANDBOX:               set("Most people set these", "--sandbox", onSwitch, "off", "use the built-in sandbox instead of the service (`1` or `true`): no account, no credits"),
  GENERATION_ALLOWED_DIRS:          set("Most people set these", "--allowed-dirs DIRS", asIs("dirs"), "`~/Pictures`, `~/Downloads`, `~/Desktop` and the output folder (none with `--http`)", "folders whose images may be uploaded (`:`-separated, `;` on Windows); the client's MCP roots count too"),
  GENERATION_POLL_INTERVAL_MS:      set("The service", "--poll-interval-ms N", whole(100, 600_000, "number of milliseconds"), D.pollIntervalMs, "milliseconds between status polls while waiting (100-600000)"),
  GENERATION_WAIT_TIMEOUT_S:        set("The service", "--wait-timeout-s N", kind("number", number(0, 3600)), D.waitTimeoutS, "seconds one call waits before answering \"still processing\" (0-3600)"),
  GENERATION_SETTINGS_FORM:         set("The service", "--settings-form env|mcpb", choice("text", ["env", "mcpb"], "must be env or mcpb"), "`env`", "where advice tells the user to change settings: `env` (the client's configuration) or `mcpb` (Claude Desktop's form)"),
  GENERATION_OUTPUT_DIR:            set("Local files", "--output-dir DIR", asIs("dir"), "`~/Downloads/generation-mcp`", "where `download: true` saves media (with `--http`: only when set)"),
  GENERATION_STATE_DIR:             set("Local files", "--state-dir DIR", asIs("dir"), "the platform's user state folder", "where the journal of started tasks, MCP task records and the day's spend are kept"),
  GENERATION_UPLOAD_LINK_TTL_S:     set("Local files", "--upload-link-ttl-s N", whole(5, 86_400, "number of seconds"), D.uploadLinkTtlS, "seconds an upload link (`upload_image` with `from_user`) stays open (5-86400)"),
  GENERATION_PREVIEWS:              set("Previews and links", "--previews on|off", onOff, "on", "MCP `image` previews of finished images, video stills and a sheet of each finished video's frames"),
  GENERATION_PREVIEW_MAX_SIDE:      set("Previews and links", "--preview-max-side N", whole(64, 2000, "number of pixels"), D.previewMaxSide, "longest side of a preview in pixels (64-2000; Claude refuses larger images among many)"),
  GENERATION_FFMPEG_PATH:           set("Previews and links", "--ffmpeg-path FILE", plain, "`ffmpeg` on `PATH`", "the ffmpeg binary that makes the frame sheet of a finished video (without it: a note, no frames)"),
  GENERATION_RESOURCE_LINKS:        set("Previews and links", "--resource-links on|off", onOff, "off", "a `resource_link` item for each finished video and image"),
  GENERATION_MAX_CREDITS_PER_CALL:  set("Spend limits", "--max-credits-per-call N", credits, "none", "a call estimated above it is refused with `budget_exceeded` unless the user confirms it"),
  GENERATION_DAILY_CREDITS:         set("Spend limits", "--daily-credits N", credits, "none", "estimated credits one caller may start per UTC day"),
  GENERATION_CONFIRM_ABOVE_CREDITS: set("Spend limits", "--confirm-above-credits N", credits, "none", "above it the user is asked to confirm the cost first (at most the per-call cap)"),
  GENERATION_HTTP:                  set("HTTP (--http)", "--http", onSwitch, "off", "serve MCP Streamable HTTP at `/mcp` instead of stdio"),
  GENERATION_HTTP_PORT:             set("HTTP (--http)", "--port N", whole(0, 65_535, "port number"), D.httpPort, "port to listen on (0: any free port)"),
  GENERATION_HTTP_HOST:             set("HTTP (--http)", "--host H", plain, `\`${D.httpHost}\``, "address to bind"),
  GENERATION_HTTP_ALLOWED_HOSTS:    set("HTTP (--http)", "--allowed-hosts LIST", plain, "the loopback names", "`Host` values served (`name` or `name:port`, comma-separated); required off loopback"),
  GENERATION_HTTP_ALLOWED_ORIGINS:  set("HTTP (--http)", "--allowed-origins LIST", plain, "none", "browser origins accepted besides the server's own, answered with CORS headers"),
  GENERATION_HTTP_TOKENS:           set("HTTP (--http)", undefined, plain, "none: each caller brings its own key", "gateway mode: the SHA-256 hashes of the callers' tokens (or the file below)"),
  GENERATION_HTTP_TOKENS_FILE:      set("HTTP (--http)", "--tokens-file FILE", plain, "none", "gateway mode: a file of those hashes, one per line (`#` comments allowed)"),
  GENERATION_HTTP_MAX_BODY_BYTES:   set("HTTP (--http)", "--max-body-bytes N", whole(1024, 64 * 1024 * 1024, "number of bytes"), `${D.httpMaxBodyBytes} (4 MiB)`, "largest request body in bytes (1024-67108864)"),
  GENERATION_HTTP_MAX_CONCURRENT:   set("HTTP (--http)", "--max-concurrent N", whole(1, 10_000), D.httpMaxConcurrent, "calls one caller may have in flight (1-10000; a batch counts as its calls)"),
  GENERATION_HTTP_MAX_CONNECTIONS:  set("HTTP (--http)", "--max-connections N", whole(16, 100_000), D.httpMaxConnections, "connections held open at once (16-100000); past it new ones are closed"),
  GENERATION_METRICS:               set("HTTP (--http)", undefined, onOff, "off", "`on`: serve Prometheus metrics at `GET /metrics`"),
  GENERATION_METRICS_TOKEN:         set("HTTP (--http)", undefined, asIs("secret"), "none: open", "with metrics on, scrapes must send it as `Authorization: Bearer` (16+ characters)"),
  GENERATION_PUBLIC_URL:            set("Sign-in (OAuth, --http)", "--public-url URL", plain, "none: the listening address", "this server's public address (a path prefix is kept); the OAuth resource is `<public url>/mcp`, upload links are `<public url>/upload/...`"),
  GENERATION_OAUTH_ISSUER:          set("Sign-in (OAuth, --http)", "--oauth-issuer URL", plain, "none: no OAuth", "your OAuth 2.1 / OpenID issuer (`https://`, or `http://` on loopback); set: callers sign in there"),
  GENERATION_OAUTH_AUDIENCE:        set("Sign-in (OAuth, --http)", "--oauth-audience A", plain, "the resource, `<public url>/mcp`", "what every access token's `aud` must contain (only with the issuer)"),
  GENERATION_REDIS_URL:             set("Replicas (Redis)", "--redis-url URL", checked(isRedisUrl, "must be a redis:// or rediss:// address, e.g. redis://127.0.0.1:6379"), "none: state is per process", "Redis shared by several `--http` replicas (`redis://` or `rediss://`)"),
  GENERATION_REDIS_PREFIX:          set("Replicas (Redis)", "--redis-prefix P", checked((value) => /^[A-Za-z0-9:_.-]{1,64}$/.test(value), "must be 1 to 64 letters, digits or : _ . -"), `\`${D.redisPrefix}\``, "prefix of every Redis key and channel (1-64 of `A-Za-z0-9:_.-`)"),
  GENERATION_REDIS_WHEN_DOWN:       set("Replicas (Redis)", "--redis-when-down refuse|alone", choice("text", ["refuse", "alone"], "must be refuse or alone"), "`refuse`", "while Redis takes no writes: send no start (`refuse`) or let each replica decide alone (`alone`)"),
};

/** The commands (`generation-mcp video ...`, src/cli/): the positional argument, the tool each runs. */
// prettier-ignore
export const COMMANDS = {
  video:   { argument: "<prompt>",   tool: "generate_video", summary: "start a video (generate_video) and wait for it" },
  image:   { argument: "<prompt>",   tool: "generate_image", summary: "make an image (generate_image)" },
  upload:  { argument: "<path>",     tool: "upload_image",   summary: "upload a reference image (upload_image); prints its URL" },
  status:  { argument: "<video_id>", tool: "get_status",     summary: "a video's status (get_status); --wait keeps waiting" },
  list:    { argument: "",           tool: "list_videos",    summary: "your video history (list_videos)" },
  credits: { argument: "",           tool: "get_credits",    summary: "credits, and the models this account may use (get_credits)" },
  check:   { argument: "",           tool: undefined,        summary: "checks the configuration and the key against the service" },
} as const;
export type Command = keyof typeof COMMANDS;

/** A command flag: its argument (none: a switch), the commands taking it, the tool input it fills. */
const cmd = (flag: string, commands: string, description: string, input?: string, number = false) => ({
  flag,
  commands: commands.split(" ") as Command[],
  description,
  input,
  number,
});
// prettier-ignore
export const COMMAND_FLAGS = {
  image:             cmd("--image PATH|URL", "video image", "a reference image: a local file (uploaded first) or an http(s) URL; repeatable for `image`"),
  model:             cmd("--model ID", "video image", "the model (`credits` lists those this account may use)", "model"),
  duration:          cmd("--duration S", "video", "seconds of video (default 5)", "duration", true),
  "aspect-ratio":    cmd("--aspect-ratio W:H", "video image", "e.g. 16:9 (video default), 1:1 (image default)", "aspect_ratio"),
  resolution:        cmd("--resolution R", "video image", "video: 480p, 720p, 1080p (vendor-video-2-0 only); image: 1k, 2k, 4k", "resolution"),
  format:            cmd("--format F", "image", "png (default), jpg or webp", "output_format"),
  page:              cmd("--page N", "list", "page of the history (from 1)", "page", true),
  limit:             cmd("--limit N", "list", "videos per page (1-50, default 20)", "limit", true),
  wait:              cmd("--wait, --no-wait", "video status", "wait for the finished video (video: on by default; status: off)", "wait"),
  "timeout-seconds": cmd("--timeout-seconds S", "video status", "how long to wait before exit 3, still processing (0-3600, default 600)", "timeout_seconds", true),
  out:               cmd("--out PATH", "video image status", "save the media: into a folder, or as a file name (the frame sheet goes beside a video as `<file>.frames.jpg`)"),
  "dry-run":         cmd("--dry-run", "video image", "only show the estimated cost and the request; start nothing", "dry_run"),
  "allow-duplicate": cmd("--allow-duplicate", "video image", "start a new task even when an identical one started in the last 10 minutes", "allow_duplicate"),
  yes:               cmd("--yes", "video image", "accept a cost above the confirm threshold or the per-call cap without asking"),
  json:              cmd("--json", "video image upload status list credits", "print the tool's structuredContent as one JSON document on stdout, nothing else"),
};

type Settings = typeof SETTINGS;
/** Each variable read; undefined when unset or blank. */
export type ConfigValues = { [K in keyof Settings]: ReturnType<Settings[K]["parse"]> | undefined };

const flagName = (setting: Setting) => setting.flag?.split(" ")[0];
const flagged = Object.entries(SETTINGS).filter(([, setting]) => setting.flag !== undefined);

/** Flags that mirror a variable (`--poll-interval-ms 2000` = GENERATION_POLL_INTERVAL_MS=2000). */
export const FLAG_TO_ENV: Readonly<Record<string, string>> = Object.fromEntries(
  flagged.map(([name, setting]) => [flagName(setting), name]),
);

/** The options of node:util's parseArgs: a switch is a boolean flag, everything else takes a value. */
export const FLAG_OPTIONS: ParseArgsConfig["options"] = Object.fromEntries(
  flagged.map(([, setting]) => [
    flagName(setting)?.slice(2),
    { type: setting.kind === "switch" ? ("boolean" as const) : ("string" as const) },
  ]),
);

/** The setting flags among parsed values, as readSettings takes them (`--port`: "8080", a switch: true). */
export const settingFlags = (values: Record<string, unknown>): Record<string, string | true> =>
  Object.fromEntries(
    Object.entries(values).flatMap(([name, value]) =>
      name in (FLAG_OPTIONS ?? {}) && (typeof value === "string" || value === true)
        ? [[`--${name}`, value]]
        : [],
    ),
  );

/** Every variable checked, flags winning (`--sandbox` alone = 1); a problem names the variable and flag. */
export function readSettings(env: NodeJS.ProcessEnv, flags: Record<string, string | true>): ConfigValues {
  const values: Record<string, unknown> = {};
  for (const [name, setting] of Object.entries(SETTINGS) as [string, Setting][]) {
    const flag = flagName(setting);
    const given = flag === undefined ? undefined : flags[flag];
    const value = (given === true ? "1" : (given ?? env[name]))?.trim();
    if (value === undefined || value === "" || isUnfilledPlaceholder(value)) continue;
    try {
      values[name] = setting.parse(value);
    } catch (error) {
      throw new ConfigError(`${name}${flag ? ` (or ${flag})` : ""}: ${(error as Error).message}`);
    }
  }
  return values as ConfigValues;
}

/** The options part of `--help`, section by section. */
export function describeOptions(): string {
  const lines: string[] = [];
  let section = "";
  for (const [name, setting] of Object.entries(SETTINGS) as [string, Setting][]) {
    if (setting.section !== section) lines.push("", `${(section = setting.section)}:`);
    const fallback = setting.default === "none" ? "" : `; default ${setting.default}`;
    lines.push(
      `  ${(setting.flag ?? "(variable only)").padEnd(31)}${name}`,
      `      ${setting.description}${fallback}`.replaceAll("`", ""),
    );
  }
  return lines.join("\n");
}

/** A command flag takes a value when its argument is named in capitals (`--out PATH`); else it is a switch. */
export const COMMAND_OPTIONS: ParseArgsConfig["options"] = Object.fromEntries(
  Object.entries(COMMAND_FLAGS).map(([name, { flag }]) => [
    name,
    / [A-Z]/.test(flag)
      ? { type: "string" as const, ...(name === "image" && { multiple: true }) }
      : { type: "boolean" as const },
  ]),
);

/** The commands part of `--help`: one line per command, then every command flag and who takes it. */
export function describeCommands(only?: Command): string {
  const commands = Object.entries(COMMANDS).filter(([name]) => only === undefined || name === only);
  const flags = Object.values(COMMAND_FLAGS).filter(
    (flag) => only === undefined || flag.commands.includes(only),
  );
  return [
    "Commands (the tools' own checks, spend limits and journal; settings as below):",
    ...commands.map(([name, { argument, summary }]) => `  ${`${name} ${argument}`.padEnd(31)}${summary}`),
    "",
    "Command flags:",
    ...flags.map(({ flag, commands: takers, description }) =>
      `  ${flag.padEnd(31)}${only === undefined ? `(${takers.join(", ")}) ` : ""}${description}`.replaceAll(
        "`",
        "",
      ),
    ),
    "",
    "Exit codes: 0 done; 1 the service or the tool failed; 2 usage (or a validation_error: nothing was sent);",
    "3 still processing when the wait ended (`status <video_id> --wait` goes on); 4 refused by a spend limit or declined.",
  ].join("\n");
}
