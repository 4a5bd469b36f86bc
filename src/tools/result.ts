/**
 * A tool's run as the result a client gets, whatever protocol era it speaks: the output checked against the
 * tool's schema, its text mirror, secrets masked, then its media items (previews, links: media/content.ts);
 * every failure an `isError` result. Used by plain calls, by task runs, and by a task taken up again after
 * a restart.
 */
import type { CallToolResult } from "@modelcontextprotocol/server";
import { AbortedError } from "../api/errors.js";
import { renderAdvice } from "../advice.js";
import { withMedia, type MediaSettings } from "../media/content.js";
import type { ServerDeps, ToolContext, ToolDefinition } from "./define-tool.js";
import { StoppingError, errorResult } from "./format.js";

export type { CallToolResult };

/**
 * `cancelled` is the caller's own signal: an abort from it is a cancellation, one from `deps.stopping` alone
 * a shutdown.
 */
export async function toolResult(
  tool: ToolDefinition,
  running: Promise<unknown>,
  deps: ServerDeps,
  cancelled: AbortSignal,
): Promise<CallToolResult> {
  deps.track?.(running);
  try {
    const returned = await running;
    const result = tool.output.parse(returned) as Record<string, unknown>;
    const answer: CallToolResult = {
      content: [
        { type: "text", text: deps.redactor.text(renderAdvice(tool.summarize(result), deps.advice)) },
      ],
      structuredContent: deps.redactor.value(result),
    };
    return await withMedia(
      answer,
      returned,
      mediaSettings(deps),
      AbortSignal.any([cancelled, deps.stopping]),
    );
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

/** The context of a tool run in the background (an MCP task): its progress becomes the task's status. */
export function backgroundContext(
  run: { signal: AbortSignal; progress(message: string): void },
  deps: Pick<ServerDeps, "logger" | "redactor">,
  startedAt = Date.now(),
): ToolContext {
  return {
    signal: run.signal,
    startedAt,
    logger: deps.logger,
    progress: async (message) => run.progress(deps.redactor.text(message)),
  };
}

function mediaSettings(deps: ServerDeps): MediaSettings {
  const { previews, previewMaxSide, resourceLinks } = deps.config;
  return { previews, previewMaxSide, resourceLinks, allowHosts: deps.mediaAllowHosts };
}
