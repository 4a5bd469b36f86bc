/** Turns any failure into an `isError` tool result whose text starts with the error code and a next step. */
import type { CallToolResult } from "@modelcontextprotocol/server";
import { renderAdvice, type AdviceMode } from "../advice.js";
import type * as z from "zod";
import { AbortedError, GenerationError } from "../api/errors.js";
import { PROCESS_REDACTOR, cleanText, type Redactor } from "../redact.js";

/** A call cut short because the server is shutting down (SIGTERM, the client closed stdin). */
export class StoppingError extends AbortedError {
  constructor() {
    super(
      "the server is shutting down, so this call stopped before it started anything new. Call it again once the server is back.",
    );
  }
}

/**
 * `redactor`: the caller's, when its key is not one of the process's own secrets (redact.ts); `advice`: how
 * the user of this call changes a setting (advice.ts).
 */
export function errorResult(
  error: unknown,
  redactor: Redactor = PROCESS_REDACTOR,
  advice: AdviceMode = "stdio",
): CallToolResult {
  return {
    isError: true,
    content: [{ type: "text", text: redactor.text(renderAdvice(describeError(error), advice)) }],
  };
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
