/**
 * Per-call overhead: `get_credits` through MCP over stdio (SDK client -> our server -> sandbox) against a
 * direct HTTP GET of the same sandbox endpoint (undici, keep-alive) made from the bench process. Calls are
 * interleaved (direct, MCP, direct, MCP ...) so both see the same machine load.
 */
import { Agent, request } from "undici";
import { call } from "./mcp.mjs";
import { now, quantile } from "./lib.mjs";

export function directGetter(baseUrl, apiKey) {
  const agent = new Agent({ keepAliveTimeout: 10_000 });
  const url = `${baseUrl}/credits`;
  const headers = { authorization: `Bearer ${apiKey}`, accept: "application/json" };
  return {
    async get() {
      const res = await request(url, { dispatcher: agent, headers });
      const body = await res.body.json();
      if (res.statusCode !== 200)
        throw new Error(`direct GET /credits: ${res.statusCode} ${JSON.stringify(body)}`);
      return body;
    },
    close: () => agent.close(),
  };
}

/** One round: `calls` interleaved pairs at concurrency 1, then throughput at concurrency 1 and 16. */
export async function overheadRound(client, direct, { calls, throughputCalls }) {
  const mcp = [];
  const http = [];
  for (let i = 0; i < calls; i++) {
    let t = now();
    await direct.get();
    http.push(now() - t);
    t = now();
    await call(client, "get_credits");
    mcp.push(now() - t);
  }
  const rate = async (fn, concurrency) => {
    let left = throughputCalls;
    const t = now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (left-- > 0) await fn();
      }),
    );
    return throughputCalls / ((now() - t) / 1000);
  };
  const mcpCall = () => call(client, "get_credits");
  const httpCall = () => direct.get();
  const mcpRps1 = await rate(mcpCall, 1);
  const httpRps1 = await rate(httpCall, 1);
  const mcpRps16 = await rate(mcpCall, 16);
  const httpRps16 = await rate(httpCall, 16);
  return {
    mcpP50: quantile(mcp, 0.5),
    mcpP99: quantile(mcp, 0.99),
    httpP50: quantile(http, 0.5),
    httpP99: quantile(http, 0.99),
    addedP50: quantile(mcp, 0.5) - quantile(http, 0.5),
    addedP99: quantile(mcp, 0.99) - quantile(http, 0.99),
    mcpRps1,
    httpRps1,
    mcpRps16,
    httpRps16,
  };
}
