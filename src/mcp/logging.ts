/**
 * Log lines as MCP log notifications, by each era's rules. 2025 over stdio: the runtime's lines, none before
 * `notifications/initialized`, and only warnings and above until `logging/setLevel` (some clients report
 * every info line as an error). 2026-07-28: a request opts in with `_meta` and gets its own call's lines.
 * 2025 over HTTP: nothing, as a stateless request has no session to hold a level.
 */
import {
  LOG_LEVEL_META_KEY,
  type LoggingLevel,
  type Server,
  type ServerContext,
} from "@modelcontextprotocol/server";
import * as z from "zod";
import type { LogSink, Logger } from "../logger.js";

export const LOGGER_NAME = "generation-mcp";

/** The levels, least severe first. */
const LEVELS = z.enum(["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]);
const severity = (level: LoggingLevel) => LEVELS.options.indexOf(level);
const LEVEL = { params: z.looseObject({ level: LEVELS }) };

function message(level: LoggingLevel, text: string, data: Record<string, unknown> | undefined) {
  return {
    method: "notifications/message" as const,
    params: { level, logger: LOGGER_NAME, data: data ? { message: text, ...data } : text },
  };
}

/** Relays `logger`'s lines to a 2025-era stdio client until its transport closes; else answers setLevel only. */
export function attachSessionLogging(server: Server, logger: Logger | undefined): void {
  let initialized = false;
  let threshold = severity("warning");
  // With nothing to relay (HTTP) the level is still checked, so a bad one is a clean -32602.
  server.setRequestHandler("logging/setLevel", LEVEL, async ({ level }) => {
    threshold = severity(level);
    return {};
  });
  if (logger === undefined) return;
  server.oninitialized = () => {
    initialized = true;
  };
  const detach = logger.addSink((level, text, data) => {
    if (!initialized || severity(level) < threshold) return;
    // Closed: a server made per connection must not stay attached to a long-lived logger.
    if (server.transport === undefined) return detach();
    void server.notification(message(level, text, data)).catch(() => undefined);
  });
}

/** The sink of one 2026-07-28 call's own log lines, when the request asked for them; else undefined. */
export function requestLogSink(ctx: ServerContext): LogSink | undefined {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const asked = LEVELS.safeParse(envelope?.[LOG_LEVEL_META_KEY]);
  if (!asked.success) return undefined;
  const threshold = severity(asked.data);
  return (level, text, data) => {
    if (severity(level) < threshold || ctx.mcpReq.signal.aborted) return;
    void ctx.mcpReq.notify(message(level, text, data)).catch(() => undefined);
  };
}
