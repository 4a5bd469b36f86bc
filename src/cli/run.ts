/**
 * The command line (`generation-mcp video|image|upload|status|list|credits|check`): a thin face over the
 * runtime the MCP server uses. A command's flags become its tool's arguments, and the tool runs as an MCP
 * call runs it (session.ts), the spend gate asking on the terminal: nothing here decides what a tool may do.
 */
import {
  COMMANDS,
  COMMAND_OPTIONS,
  FLAG_OPTIONS,
  describeCommands,
  loadConfig,
  settingFlags,
  type Command,
} from "../config/index.js";
import { parseFlags } from "../config/did-you-mean.js";
import { outTarget, toolArguments, type Values } from "./arguments.js";
import { EXIT, fieldsOf, placeMedia, printResult } from "./output.js";
import { openSession } from "./session.js";

export async function runCommand(command: Command, argv: string[], version: string): Promise<number> {
  const options = { ...FLAG_OPTIONS, ...COMMAND_OPTIONS, help: { type: "boolean", short: "h" } } as const;
  const parsed = parseFlags(argv, options, true);
  const { positionals } = parsed;
  const values = parsed.values as Values;
  if (values["help"] === true) {
    const { argument } = COMMANDS[command];
    process.stdout.write(
      `Usage: generation-mcp ${command} ${argument ? `${argument} ` : ""}[flags]\n\n${describeCommands(command)}\n\n` +
        "Every setting of the server applies too (flags or GENERATION_* variables): generation-mcp --help\n",
    );
    return EXIT.done;
  }
  const settings = settingFlags(values);
  if (command === "check") return (await import("./check.js")).runCheck(settings, version);
  const call = toolArguments(command, values, positionals);
  const out = typeof values["out"] === "string" ? outTarget(values["out"]) : undefined;
  const config = loadConfig({
    env: process.env,
    flags: { ...settings, ...(out !== undefined && { "--output-dir": out.dir }) },
  });
  const session = await openSession(config, version, call.roots);
  try {
    const result = await session.call(call.tool, call.args, { yes: values["yes"] === true });
    if (result === "interrupted") return EXIT.interrupted;
    const lines = await placeMedia(result, out);
    if (config.sandbox && fieldsOf(result)["video_id"] !== undefined) lines.push(SANDBOX_CLIP);
    return printResult(result, { json: values["json"] === true, lines });
  } finally {
    await session.close();
  }
}

const SANDBOX_CLIP =
  "Sandbox: every clip is the same 2 s test pattern (320x180), whatever the prompt and duration; no credits are real.";
