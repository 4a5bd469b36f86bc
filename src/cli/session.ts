/**
 * A runtime for one command, and one tool call on it as tools-call.ts makes it for MCP (the schema's check,
 * the cost confirmed on the terminal, the handler under a signal Ctrl-C aborts): what `run` and `check` share.
 */
import { ValidationError } from "../api/errors.js";
import type { Config } from "../config/index.js";
import { Logger } from "../logger.js";
import { costQuestion } from "../mcp/confirm.js";
import { createRuntime } from "../runtime.js";
import { TOOLS } from "../tools/index.js";
import {
  errorResult,
  toolContext,
  toolResult,
  validationMessage,
  type CallToolResult,
} from "../tools/result.js";
import type { ServerDeps } from "../tools/define-tool.js";
import { EXIT, askYesNo, canAsk, progressLine } from "./output.js";
import { openService } from "./service.js";

/** A runtime for one command, against the configured service (or the sandbox), closed when it is done. */
export async function openSession(config: Config, version: string, roots: string[] = []) {
  // Start-up lines and task logs are the server's; a command shows its own progress (output.ts).
  const logger = new Logger("warning");
  const service = await openService(config, logger);
  const runtime = await createRuntime(config, service.target, logger, version, {}, service.hub);
  // The person at the terminal is the client: the folders of the files they named are its roots.
  const deps: ServerDeps = { ...runtime.depsFactory({ clientRoots: async () => roots }), advice: "cli" };
  return {
    call: (tool: string, args: Record<string, unknown>, options: { yes: boolean }) =>
      callTool(deps, tool, args, options),
    async close() {
      await runtime.close();
      await service.close();
    },
  };
}

/** One tool call; "interrupted" once it has said so on stderr. */
async function callTool(
  deps: ServerDeps,
  name: string,
  args: Record<string, unknown>,
  options: { yes: boolean },
): Promise<CallToolResult | "interrupted"> {
  const tool = TOOLS.find((candidate) => candidate.name === name);
  if (tool === undefined) throw new Error(`no tool ${name}`);
  const parsed = tool.input.safeParse(args);
  if (!parsed.success) {
    const error = new ValidationError(validationMessage(tool.name, parsed.error));
    return errorResult(error, deps.redactor, deps.advice);
  }
  const cost = costQuestion(name, parsed.data, deps);
  if (cost !== undefined && !options.yes) {
    if (!canAsk()) return cost.refuse("there is no terminal to ask on and --yes was not given").refused;
    if (!(await askYesNo(cost.message))) return cost.decline().declined;
  }
  const interrupt = new AbortController();
  let videoId: string | undefined;
  const onSigint = () => (interrupt.signal.aborted ? process.exit(EXIT.interrupted) : interrupt.abort());
  process.on("SIGINT", onSigint);
  const progress = progressLine();
  // A link for the person is printed in the result (waiting_for_upload): no client opens it here.
  const context = toolContext(deps, {
    signal: AbortSignal.any([interrupt.signal, deps.stopping]),
    send: (message) => {
      videoId ??= /^video_id (\S+):/.exec(message)?.[1];
      progress.update(message);
    },
  });
  try {
    const result = await toolResult(tool, tool.handler(parsed.data, deps, context), deps, context.signal);
    if (!interrupt.signal.aborted) return result;
    const goOn =
      videoId === undefined
        ? ""
        : ` The task keeps running on the service: \`generation-mcp status ${videoId} --wait\` goes on waiting, ` +
          "and the same command again reuses it (no second charge).";
    process.stderr.write(`Interrupted.${goOn}\n`);
    return "interrupted";
  } finally {
    progress.stop();
    process.off("SIGINT", onSigint);
  }
}
