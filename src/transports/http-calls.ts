/**
 * The MCP calls running on `--http`, capped per caller (a batch counts as its calls), and their cancellation:
 * a client that disconnects, or sends `notifications/cancelled` for a call running here, cancels it (its task
 * goes on). Two clients of one key both number their calls from 0, so the answer to `initialize` carries a
 * random `Mcp-Session-Id` (never stored) and a cancel names its call by caller, that id and the request id.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Caller } from "../auth/caller.js";
import type { HttpConfig } from "../config/index.js";
import { messagesOf, type Served, type createMcpHttp } from "../mcp/http.js";
import type { KeyParts, Session } from "../mcp/session.js";
import type { PooledRuntime, RuntimePool } from "../runtime-pool.js";
import { callerSlots, jsonRpcError } from "./http-guards.js";

export type KeyRuntime = KeyParts & PooledRuntime;

export interface CallsOptions {
  config: HttpConfig;
  pool: RuntimePool<KeyRuntime>;
  mcpHttp: ReturnType<typeof createMcpHttp>;
  mediaOrigin: string | undefined;
}

export function runningCalls({ config, pool, mcpHttp, mediaOrigin }: CallsOptions) {
  const running = new Map<string, Set<() => void>>();
  const calls = callerSlots(config.maxConcurrentPerKey);

  /** Serves one checked message of `caller`, as a call that its client's cancel or disconnect ends. */
  return async function serveMcp(
    req: IncomingMessage,
    res: ServerResponse,
    message: unknown,
    caller: Caller,
  ) {
    const sessionId = req.headers["mcp-session-id"];
    // Only an id that could be ours (a UUID) correlates.
    const correlation = `${caller.id}:${typeof sessionId === "string" && /^[0-9a-f-]{36}$/i.test(sessionId) ? sessionId.toLowerCase() : "-"}:`;
    const messages = messagesOf(message);
    for (const entry of messages) {
      if (entry.method !== "notifications/cancelled") continue;
      const id = (entry.params as { requestId?: unknown } | undefined)?.requestId;
      if (typeof id !== "string" && typeof id !== "number") continue;
      const cancels = running.get(correlation + JSON.stringify(id));
      // Two running calls with one id (clients without a session id): cancelling either could be wrong.
      if (cancels?.size === 1) for (const cancel of cancels) cancel();
    }
    const keys = messages
      .filter((entry) => typeof entry.method === "string" && entry.id !== undefined && entry.id !== null)
      .map((entry) => correlation + JSON.stringify(entry.id));
    const slot = calls.take(caller.id, keys.length);
    if (slot === undefined) {
      res.setHeader("retry-after", "1");
      const text = `Too many calls at once for this caller (at most ${config.maxConcurrentPerKey}); retry in a moment.`;
      return jsonRpcError(res, 429, -32000, text);
    }
    let lease: ReturnType<RuntimePool<KeyRuntime>["acquire"]> | undefined;
    let served: Served | undefined;
    let ended = false;
    const release = () =>
      void lease?.then(
        (held) => held.release(),
        () => undefined,
      );
    const session: Session = {
      caller,
      advice: caller.scope === undefined ? "http-key" : "shared",
      mediaOrigin,
      runtime: async () => {
        lease ??= pool.acquire(caller.serviceKey);
        // Asked for after the client went away: the call is being cancelled, and nothing releases it later.
        if (ended) release();
        return (await lease).runtime;
      },
    };
    const end = () => {
      if (ended) return;
      ended = true;
      for (const key of keys) {
        const cancels = running.get(key);
        cancels?.delete(end);
        if (cancels?.size === 0) running.delete(key);
      }
      // Closing aborts the calls still running; a cancelled call sends no answer, but its response must end.
      void (served?.close() ?? Promise.resolve())
        .catch(() => undefined)
        .finally(() => {
          if (res.destroyed || res.writableEnded) return;
          if (!res.headersSent) res.writeHead(202);
          res.end();
        });
      slot();
      release();
    };
    for (const key of keys) running.set(key, (running.get(key) ?? new Set()).add(end));
    res.once("close", end);
    if (messages.some((entry) => entry.method === "initialize"))
      res.setHeader("mcp-session-id", randomUUID());
    try {
      served = await mcpHttp.serve(req, res, message, session);
      // The client went away while the call was being set up: end() found nothing to close then.
      if (ended) void served.close().catch(() => undefined);
      else if (res.destroyed) end();
    } catch (error) {
      end();
      throw error;
    }
  };
}
