/**
 * MCP Streamable HTTP at `/mcp`, stateless: every POST is served by a fresh MCP server (mcp/http.ts), so any
 * replica can answer any request; one runtime per service key (runtime-pool.ts). What it answers, in order:
 * http-routes.ts; the calls and their cancellation: http-calls.ts; the checks: http-guards.ts. Connections,
 * the time to send a request and the bodies being read are bounded before anyone is trusted.
 */
import { once } from "node:events";
import { createServer as createHttpServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { authFor } from "../auth/bearer.js";
import { digestOf } from "../auth/caller.js";
import type { HttpConfig } from "../config/index.js";
import type { Logger } from "../logger.js";
import { createMcpHttp } from "../mcp/http.js";
import { startMetrics } from "../metrics.js";
import { registerSecret } from "../redact.js";
import { RuntimePool } from "../runtime-pool.js";
import type { UploadDesk } from "../uploads/desk.js";
import { runningCalls, type KeyRuntime } from "./http-calls.js";
import { effectiveHosts, jsonRpcError } from "./http-guards.js";
import { routeSteps, type RouteParts } from "./http-routes.js";

export interface HttpServing {
  http: HttpConfig;
  version: string;
  logger: Logger;
  /** The key the server holds (gateway and OAuth callers are served with it). */
  serviceKey: string;
  mediaOrigin: string | undefined;
  /** Makes the runtime of one service key; `callerKey`: the key is a caller's own (passthrough). */
  makeRuntime(apiKey: string, callerKey: boolean): Promise<KeyRuntime>;
  /** False while the state shared with other replicas (Redis) is unreachable: `/readyz` says not ready. */
  sharedStateReady?: (() => boolean) | undefined;
  /** The process's upload links, served here. */
  uploads: UploadDesk;
}

/** `--http`: the caller's authentication as configured, the metrics when on, and the server. */
export async function serveHttp(options: HttpServing) {
  const { http: config, logger, uploads } = options;
  registerSecret(config.metrics?.token);
  // Loads prom-client only now; every other mode keeps the no-op recorder (src/metrics.ts).
  const metrics =
    config.metrics === undefined
      ? undefined
      : await startMetrics({
          tools: (await import("../tools/index.js")).TOOLS.map((tool) => tool.name),
          sharedStateReady: options.sharedStateReady,
        });
  const auth = await authFor(config, options.serviceKey, logger);
  const pool = new RuntimePool<KeyRuntime>({
    create: (apiKey) => options.makeRuntime(apiKey, auth.callerKeys),
  });
  if (!auth.callerKeys) {
    // Every link's picture goes to the server's own key, whose runtime may be closed (idle) when it comes.
    uploads.register(digestOf(options.serviceKey), async (image) => {
      const { runtime, release } = await pool.acquire(options.serviceKey);
      const { api } = runtime.depsFactory({ clientRoots: async () => [] });
      return (await api.upload(image, { priority: "foreground" }).finally(release)).url;
    });
  }
  const open = new Set<ServerResponse>();
  const state: RouteParts["state"] = { phase: "starting", allowedHosts: new Set<string>() };
  const steps = routeSteps({
    config,
    auth,
    metrics,
    uploads,
    logger,
    state,
    sharedStateReady: () => options.sharedStateReady?.() ?? true,
    serveMcp: runningCalls({
      config,
      pool,
      mcpHttp: createMcpHttp({ version: options.version, logger }),
      mediaOrigin: options.mediaOrigin,
    }),
  });

  const server = createHttpServer(
    {
      headersTimeout: 10_000,
      requestTimeout: 30_000,
      keepAliveTimeout: 5_000,
      // How often Node checks those two: the limits hold to within this.
      connectionsCheckingInterval: 1000,
    },
    (req, res) => {
      open.add(res);
      res.once("close", () => open.delete(res));
      const path = (req.url ?? "/").split("?")[0] ?? "/";
      (async () => {
        for (const step of steps) if (await step(req, res, path)) return;
      })().catch((error: unknown) => {
        // Only a bug gets here: its details go to stderr, never into the answer.
        logger.error("HTTP request failed unexpectedly", { error: String(error) });
        if (!res.headersSent) jsonRpcError(res, 500, -32603, "internal error");
        else res.destroy();
      });
    },
  );
  server.maxConnections = config.maxConnections;

  server.listen(config.port, config.host);
  await once(server, "listening").catch((error: unknown) => {
    auth.oauth?.close();
    throw error;
  });
  const port = (server.address() as AddressInfo).port;
  state.allowedHosts = effectiveHosts(config, port);
  state.phase = "ready";
  const origin = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${port}`;
  const url = `${origin}/mcp`;
  const linkBase = config.publicUrl ?? origin;
  uploads.serveAt({ base: async () => linkBase, hold: () => undefined, release: () => undefined });
  logger.info(`generation-mcp ${options.version} serving MCP at ${url} (${auth.mode})`);
  if (metrics !== undefined) {
    const access = config.metrics?.token === undefined ? "no auth" : "Bearer GENERATION_METRICS_TOKEN";
    logger.info(`Prometheus metrics at ${url.replace(/\/mcp$/, "/metrics")} (${access})`);
  }

  return {
    /** Stops accepting, lets every running call answer with what it has, then closes every connection. */
    async close(graceMs = 3000) {
      state.phase = "stopping";
      server.close();
      // Running calls answer now (waits end with their video_id); then the last answers are written.
      await pool.close(graceMs);
      const deadline = Date.now() + 2000;
      while (open.size > 0 && Date.now() < deadline) await sleep(20);
      server.closeAllConnections();
      auth.oauth?.close();
    },
  };
}
