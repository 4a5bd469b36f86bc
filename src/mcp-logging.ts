/**
 * The logger's lines as MCP log notifications (`notifications/message`), sent by the rules of the
 * protocol rather than as soon as something is logged:
 * - nothing before the client's `notifications/initialized` (a client must see the initialize result
 *   first); what was logged before is dropped, not replayed (stderr has it);
 * - `info` and above until the client sets a level with `logging/setLevel`, then the client's level.
 *
 * The SDK answers `logging/setLevel` itself and filters per transport session; that handler is replaced
 * here, so this module's rule is the only one, whatever transport the server runs on.
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { SetLevelRequestSchema, type LoggingLevel } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "./logger.js";

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

/** The level sent to a client that never called `logging/setLevel`. */
export const DEFAULT_CLIENT_LOG_LEVEL: LoggingLevel = "info";

/**
 * Sends `logger`'s lines to the client connected to `server` (which must declare the `logging`
 * capability). Keeps any `oninitialized` callback set before. Returns a function that stops it; it also
 * stops by itself at the first line logged after the server's transport closed.
 */
export function attachMcpLogging(server: Server, logger: Logger, name = "generation-mcp"): () => void {
  let initialized = false;
  let threshold = SEVERITY[DEFAULT_CLIENT_LOG_LEVEL];

  const previous = server.oninitialized;
  server.oninitialized = () => {
    initialized = true;
    previous?.();
  };
  server.setRequestHandler(SetLevelRequestSchema, async (request) => {
    threshold = SEVERITY[request.params.level];
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
