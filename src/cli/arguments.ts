/**
 * A command's flags as its tool's arguments (`--aspect-ratio 9:16` is `aspect_ratio: "9:16"`): the names
 * only. Whether a value is allowed is the tool's own check, run on these arguments as on an MCP call's.
 */
import { existsSync, statSync } from "node:fs";
import path from "node:path";
import { isHttpUrl } from "../api/shapes.js";
import { COMMAND_FLAGS, COMMANDS, ConfigError, type Command } from "../config/index.js";

/** A person waits at a terminal longer than a client waits for a tool call (GENERATION_WAIT_TIMEOUT_S). */
export const COMMAND_WAIT_S = 600;

export type Values = Record<string, string | boolean | string[] | undefined>;

/** Where `--out` saves: a folder (an existing one, or a path ending in a separator), or a file name in one. */
export interface OutTarget {
  dir: string;
  file?: string | undefined;
}

export function outTarget(out: string): OutTarget {
  const resolved = path.resolve(out);
  if (/[\\/]$/.test(out) || (existsSync(resolved) && statSync(resolved).isDirectory()))
    return { dir: resolved };
  // Never overwritten: refused now, before anything is sent or spent.
  if (existsSync(resolved))
    throw new ConfigError(`--out ${out}: that file exists; give a new name or a folder.`);
  return { dir: path.dirname(resolved), file: resolved };
}

export function toolArguments(command: Exclude<Command, "check">, values: Values, positionals: string[]) {
  const args: Record<string, unknown> = {};
  const takes = COMMANDS[command].argument;
  if (takes !== "" && positionals.length === 0) {
    throw new ConfigError(`${command} needs ${takes}: generation-mcp ${command} ${takes} [flags]`);
  }
  if (takes === "" && positionals.length > 0) {
    throw new ConfigError(`${command} takes no argument (got ${JSON.stringify(positionals[0])}).`);
  }
  if (command === "video" || command === "image") args["prompt"] = positionals.join(" ");
  if (command === "upload" || command === "status") {
    if (positionals.length > 1)
      throw new ConfigError(`${command} takes one ${takes}; quote it if it has spaces.`);
    args[command === "upload" ? "path" : "video_id"] =
      command === "upload" ? path.resolve(positionals[0] ?? "") : positionals[0];
  }
  for (const [name, flag] of Object.entries(COMMAND_FLAGS)) {
    const value = values[name];
    if (value === undefined) continue;
    if (!flag.commands.includes(command))
      throw new ConfigError(`${command} takes no --${name}.${hint(command)}`);
    if (flag.input !== undefined) args[flag.input] = flag.number ? Number(value) : value;
  }
  const images = (values["image"] as string[] | undefined) ?? [];
  const urls = images.filter(isHttpUrl);
  const paths = images.filter((image) => !isHttpUrl(image)).map((image) => path.resolve(image));
  if (command === "video" && images.length > 1) throw new ConfigError("video takes one --image.");
  if (command === "video")
    Object.assign(args, urls[0] && { image_url: urls[0] }, paths[0] && { image_path: paths[0] });
  if (command === "image")
    Object.assign(args, urls.length && { images: urls }, paths.length && { image_paths: paths });
  if (values["out"] !== undefined) args["download"] = true;
  const waits =
    command === "video" ? args["wait"] !== false && args["dry_run"] !== true : args["wait"] === true;
  if (waits && command !== "image") args["timeout_seconds"] ??= COMMAND_WAIT_S;
  // Files named on the command line are the person's choice: their folders count as the client's roots.
  const local = command === "upload" ? [args["path"] as string] : paths;
  return { tool: COMMANDS[command].tool, args, roots: local.map((file) => path.dirname(file)) };
}

const hint = (command: Command) => ` See generation-mcp ${command} --help.`;
