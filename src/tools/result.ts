/**
 * A tool's run as the result a client gets, in any era: the output checked against the tool's schema, its
 * text mirror, its media items (media/content.ts), all masked; every failure an `isError` result whose text
 * starts with the error code and gives a next step. For plain calls, task runs and resumed tasks alike.
 */
import type { CallToolResult } from "@modelcontextprotocol/server";
import type * as z from "zod";
import { renderAdvice, type AdviceMode } from "../advice.js";
import { AbortedError, GenerationError } from "../api/errors.js";
import { withMedia } from "../media/content.js";
import { PROCESS_REDACTOR, cleanText, type Redactor } from "../redact.js";
import type { ServerDeps, ToolContext, ToolDefinition } from "./define-tool.js";

export type { CallToolResult };

/** A call cut short because the server is shutting down (SIGTERM, the client closed stdin). */
export class StoppingError extends AbortedError {
  constructor() {
    super(
      "the server is shutting down, so this call stopped before it started anything new. Call it again once the server is back.",
    );
  }
}

/** `signal` is the run's (a stop aborts it too); `cancelled` the caller's: a cancel, not a shutdown. */
export async function toolResult(
  tool: ToolDefinition,
  running: Promise<unknown>,
  deps: ServerDeps,
  signal: AbortSignal,
  cancelled = signal,
): Promise<CallToolResult> {
  deps.track?.(running);
  try {
    const returned = await running;
    const result = tool.output.parse(returned) as Record<string, unknown>;
    const text = renderAdvice(tool.summarize(result), deps.advice);
    // The handler's own return value, not the parsed output: media/ also reads fields the schema leaves out.
    const media = { ...deps.config, caller: deps.callerId, allowHosts: deps.mediaAllowHosts };
    const answer = await withMedia(
      { content: [{ type: "text", text }], structuredContent: result },
      returned,
      media,
      signal,
    );
    return masked(answer, deps.redactor);
  } catch (error) {
    if (error instanceof AbortedError && deps.stopping.aborted && !cancelled.aborted) {
      return errorResult(new StoppingError(), deps.redactor, deps.advice);
    }
    if (!(error instanceof Error && "code" in error) && !(error instanceof AbortedError)) {
      deps.logger.error(`${tool.name} failed unexpectedly`, {
        error: String(error instanceof Error ? error.stack : error),
      });
    }
    return errorResult(error, deps.redactor, deps.advice);
  }
}

/** Where a run's progress goes, and what its caller can be asked (defaults: nothing). */
interface RunSurface extends Partial<Pick<ToolContext, "startedAt" | "logger" | "openLink" | "linkAnswer">> {
  signal: AbortSignal;
  send(message: string): void | Promise<void>;
}

/** A tool run's context: its progress masked on its one way out (`send`). */
export function toolContext(deps: Pick<ServerDeps, "logger" | "redactor">, surface: RunSurface): ToolContext {
  return {
    signal: surface.signal,
    startedAt: surface.startedAt ?? Date.now(),
    logger: surface.logger ?? deps.logger,
    progress: async (message) => surface.send(deps.redactor.text(message)),
    openLink: surface.openLink ?? (async () => "unavailable"),
    linkAnswer: surface.linkAnswer,
  };
}

/** The context of a tool run in the background (an MCP task): its progress becomes the task's status. */
export function backgroundContext(
  run: { signal: AbortSignal; progress(message: string): void },
  deps: Pick<ServerDeps, "logger" | "redactor">,
  startedAt = Date.now(),
): ToolContext {
  // Nobody is there to ask: a background run answers with an upload link itself.
  return toolContext(deps, { signal: run.signal, startedAt, send: (message) => run.progress(message) });
}

/** The one way out of a tool's answer, masked (redact.ts); an image's base64 holds no text of ours. */
function masked(result: CallToolResult, redactor: Redactor): CallToolResult {
  const content = result.content.map((item) =>
    item.type === "text"
      ? { ...item, text: redactor.text(item.text) }
      : item.type === "image"
        ? item
        : redactor.value(item),
  );
  const { structuredContent } = result;
  return {
    ...result,
    content,
    ...(structuredContent !== undefined && { structuredContent: redactor.value(structuredContent) }),
  };
}

/** `redactor`: the caller's, where its key is not a process secret; `advice`: how to change a setting. */
export function errorResult(
  error: unknown,
  redactor: Redactor = PROCESS_REDACTOR,
  advice: AdviceMode = "stdio",
): CallToolResult {
  return masked(
    { isError: true, content: [{ type: "text", text: renderAdvice(describeError(error), advice) }] },
    redactor,
  );
}

export function describeError(error: unknown): string {
  if (error instanceof GenerationError) {
    const charge = error.maybeProcessed
      ? "\nA charge is possible: the request may have reached the service before the failure. Do not retry blindly; call list_videos (or get_credits) to check first."
      : "";
    const reference = error.requestId ? ` (request id ${cleanText(error.requestId, 80)})` : "";
    return `${error.code}: ${error.message}${reference}${charge}\nNext step: ${error.nextStep}`;
  }
  if (error instanceof AbortedError) {
    return error instanceof StoppingError
      ? `cancelled: ${error.message}`
      : "cancelled: the call was cancelled by the client.";
  }
  const message = error instanceof Error ? error.message : String(error);
  return (
    `internal_error: generation-mcp hit an unexpected problem (${cleanText(message, 200)}).` +
    "\nNext step: try again; if it repeats, report it with the server's log (stderr)."
  );
}

/** A validation_error naming every offending parameter, for zod's verdict on the arguments. */
export function validationMessage(tool: string, error: z.ZodError): string {
  const problems = error.issues.slice(0, 10).map((issue) => {
    const where = issue.path.length > 0 ? issue.path.map(String).join(".") : "arguments";
    const message =
      issue.code === "unrecognized_keys"
        ? `unknown parameter(s) ${issue.keys.map((key) => cleanText(key, 40)).join(", ")}`
        : issue.message;
    return `${cleanText(where, 80)}: ${message}`;
  });
  return `Invalid arguments for ${tool}: ${problems.join("; ")}.`;
}
