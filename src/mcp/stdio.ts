/**
 * MCP over stdio in either era, decided once per connection by its opening exchange (the SDK's
 * `serveStdio`): `initialize` opens a 2025 session, a request with the per-request envelope (or a
 * `server/discover` probe followed by one) a 2026-07-28 one. Our own line transport carries it (message size
 * limits that fail loudly: transports/stdio.ts).
 */
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import type { Logger } from "../logger.js";
import { StdioTransport } from "../transports/stdio.js";
import { LEGACY_REVISIONS, MODERN } from "./revisions.js";
import { createMcpServer } from "./server.js";
import type { Session } from "./session.js";

export interface StdioServing {
  close(): Promise<void>;
  /** Resolves once the connection has ended (the client closed stdin, or stdout broke). */
  finished: Promise<void>;
}

export function serveMcpOverStdio(options: {
  version: string;
  session: Session;
  /** The runtime's log: relayed to a 2025-era client as log notifications. */
  sessionLog: Logger;
  logger: Logger;
}): StdioServing {
  const transport = new StdioTransport({ logger: options.logger });
  const handle = serveStdio(
    ({ era }) =>
      createMcpServer({
        version: options.version,
        session: options.session,
        // A 2025 session's revision is what `initialize` negotiates; until then, the newest.
        revision: era === "modern" ? MODERN : { era: "legacy", version: LEGACY_REVISIONS[0] },
        negotiates: era !== "modern",
        logger: options.logger,
        ...(era !== "modern" && { sessionLog: options.sessionLog }),
      }),
    {
      transport,
      onerror: (error) =>
        options.logger.debug("stdio: a message could not be handled", { error: String(error) }),
    },
  );
  return { close: async () => handle.close(), finished: transport.finished };
}
