/**
 * `generation-mcp check`: before a first paid call, the settings set (never a secret), whether the service
 * takes the key (get_credits), upload folders, ffmpeg, the first thing to fix; exit 0 if a call would work.
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { ConfigError, SETTINGS, loadConfig, type Config } from "../config/index.js";
import { unknownVariables } from "../config/did-you-mean.js";
import { existingUploadFolders } from "../files/allowed-dirs.js";
import { ffprobeBeside } from "../media/ffmpeg.js";
import { EXIT, textOf } from "./output.js";
import { openSession } from "./session.js";

const say = (line = "") => process.stdout.write(`${line}\n`);

export async function runCheck(flags: Record<string, string | true>, version: string): Promise<number> {
  say(`generation-mcp ${version}: check`);
  say("Settings that are set:");
  let set = 0;
  for (const [name, setting] of Object.entries(SETTINGS)) {
    const flag = setting.flag?.split(" ")[0];
    const given = flag === undefined ? undefined : flags[flag];
    const value = given ?? process.env[name];
    if (value === undefined || (value !== true && value.trim() === "")) continue;
    set += 1;
    const shown = setting.kind === "secret" ? "(set, not shown)" : value === true ? "on" : value;
    say(`  ${name} = ${shown}${given === undefined ? "" : ` (${flag})`}`);
  }
  if (set === 0) say("  none: every setting has its default");
  const problems: string[] = [];
  const warnings = unknownVariables(process.env);
  try {
    const config = loadConfig({ env: process.env, flags });
    await checkService(config, version, problems);
    warnings.push(...(await checkLocal(config)));
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(error.message);
  }
  for (const warning of warnings) say(`Warning: ${warning}`);
  say();
  if (problems[0] !== undefined) {
    say(`Fix first: ${problems[0]}`);
    return EXIT.failed;
  }
  say("Ready: a generation call would work.");
  return EXIT.done;
}

/** GET /credits with the key, through get_credits: its text lists the models and whether each is usable. */
async function checkService(config: Config, version: string, problems: string[]): Promise<void> {
  const session = await openSession(config, version);
  try {
    const result = await session.call("get_credits", {}, { yes: false });
    if (result === "interrupted") throw new ConfigError("interrupted");
    const text = textOf(result);
    if (result.isError) return void problems.push(text);
    const where = config.sandbox ? "the built-in sandbox (--sandbox)" : config.baseUrl;
    say(`The service at ${where} accepts the key.`);
    say(text.replace(/^/gm, "  "));
  } finally {
    await session.close();
  }
}

/** The upload folders that exist, ffmpeg and ffprobe: missing ones only make a call poorer, never fail it. */
async function checkLocal(config: Config): Promise<string[]> {
  const warnings: string[] = [];
  const folders = await existingUploadFolders(config);
  say(`Upload folders that exist: ${folders.length > 0 ? folders.join(", ") : "none"}`);
  if (folders.length === 0) {
    warnings.push(
      "no upload folder exists, so an MCP client can send local images only from its roots: set GENERATION_ALLOWED_DIRS " +
        "(or --allowed-dirs). The commands take any file you name.",
    );
  }
  // The frame sheet runs both: ffprobe finds the stream, ffmpeg decodes it (media/frames.ts).
  const ffmpeg = config.ffmpegPath ?? "ffmpeg";
  for (const binary of [ffmpeg, ffprobeBeside(ffmpeg)]) {
    const found = await promisify(execFile)(binary, ["-version"], { timeout: 10_000 }).then(
      ({ stdout }) => stdout.split("\n")[0],
      () => undefined,
    );
    say(`${path.basename(binary)}: ${found ?? `not found (${binary})`}`);
    if (found !== undefined) continue;
    warnings.push(
      `${binary} was not found, so finished videos come without a sheet of their frames: install ffmpeg, which ` +
        "brings ffprobe (apt install ffmpeg, brew install ffmpeg, winget install ffmpeg), or set GENERATION_FFMPEG_PATH.",
    );
    break;
  }
  return warnings;
}
