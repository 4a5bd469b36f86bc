/**
 * Log lines as MCP log notifications (`notifications/message`), by each era's rules:
 * - 2025 revisions, over stdio (one client, one session): the runtime's lines, nothing before the client's
 *   `notifications/initialized` (what was logged before is dropped, not replayed: stderr has it), and only
 *   warnings and above until the client sets a level with `logging/setLevel` (some clients report every
 *   info line as an error), then exactly the level it asked for. The SDK's own `logging/setLevel` handler is
 *   replaced, so this rule is the only one.
 * - 2026-07-28: a request opts in with `_meta` `io.modelcontextprotocol/logLevel`; the lines of that call
 *   (and only those) ride its own stream, at or above that level.
 * Over HTTP in the 2025 revisions nothing is sent: a runtime serves every request of its key, and a
 * stateless request has no session to hold a level.
 */
import type { LoggingLevel, Server, ServerContext } from "@modelcontextprotocol/server";
import * as z from "zod";
import type { LogLevel, LogSink, Logger } from "../logger.js";

const SEVERITY: Record<LoggingLevel, number> = {
  debug: 0,
  info: 1,
  notice: 2,
  warning: 3,
  error: 4,
  critical: 5,
  alert: 6,
  emergency: 7,
};

/** The level sent to a 2025 client that never called `logging/setLevel`. */
export const DEFAULT_CLIENT_LOG_LEVEL: LoggingLevel = "warning";

const LEVEL = {
  params: z.looseObject({ level: z.enum(Object.keys(SEVERITY) as [LoggingLevel, ...LoggingLevel[]]) }),
};

/**
 * Sends `logger`'s lines to the client of a 2025-era stdio `server` (which declares the `logging`
 * capability). Returns a function that stops it; it also stops by itself once the server's transport closed.
 */
export function attachSessionLogging(server: Server, logger: Logger, name: string): () => void {
  let initialized = false;
  let threshold = SEVERITY[DEFAULT_CLIENT_LOG_LEVEL];
  const previous = server.oninitialized;
  server.oninitialized = () => {
    initialized = true;
    previous?.();
  };
  server.setRequestHandler("logging/setLevel", LEVEL, async ({ level }) => {
    threshold = SEVERITY[level];
    return {};
  });
  const detach = logger.addSink((level, message, data) => {
    if (!initialized || SEVERITY[level] < threshold) return;
    if (server.transport === undefined) {
      // Closed: a server made per connection must not stay attached to a long-lived logger.
      detach();
      return;
    }
    void server
      .notification({
        method: "notifications/message",
        params: { level, logger: name, data: data ? { message, ...data } : message },
      })
      .catch(() => undefined);
  });
  return detach;
}

/**
 * The sink that sends one 2026-07-28 call's own log lines on its stream, when the request asked for them
 * (`_meta` `io.modelcontextprotocol/logLevel`); undefined when it did not.
 */
export function requestLogSink(ctx: ServerContext, name: string): LogSink | undefined {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const asked = envelope?.["io.modelcontextprotocol/logLevel"] as LoggingLevel | undefined;
  if (asked === undefined || SEVERITY[asked] === undefined) return undefined;
  const threshold = SEVERITY[asked];
  return (level: LogLevel, message, data) => {
    if (SEVERITY[level] < threshold || ctx.mcpReq.signal.aborted) return;
    void ctx.mcpReq
      .notify({
        method: "notifications/message",
        params: { level, logger: name, data: data ? { message, ...data } : message },
      })
      .catch(() => undefined);
  };
}
