/**
 * The reference servers the bench compares ours with, each the smallest the MCP SDK allows, bundled and
 * minified with the same esbuild settings as our bin (scripts/bundle.mjs: one ESM file, node20, minified):
 *
 * - cold start, on our SDK line (v2, `@modelcontextprotocol/server`): the low-level `Server` with one tool
 *   and no schemas of its own, on `StdioServerTransport` (2025 revisions: initialize), and the same server
 *   served by `serveStdio` (both eras, what our bin uses). The goal is against the faster of the two.
 * - cold start, the previous line (v1, `@modelcontextprotocol/sdk`): the same low-level server, for the
 *   distance between the lines.
 * - HTTP: a stateless v2 server (`createMcpHandler` + `toNodeHandler` on `node:http`, the SDK's documented
 *   entry, its default stateless fallback for 2025-era requests) with one tool, `get_credits`, that proxies
 *   the same `GET /credits` of the same service with the caller's bearer key: what a minimal real server
 *   needs (401 without `Authorization: Bearer`, the key passed through, the answer as text).
 *
 * - HTTP floor: a bare node:http JSON-RPC proxy of the same GET with no MCP SDK at all: what any HTTP proxy
 *   of this call costs at least.
 *
 * The distance between the stdio ones and a bare `node -e` is what the SDK itself costs before any of our
 * code runs.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { build } from "esbuild";

/** The smallest v2 server: low-level Server, one tool, StdioServerTransport (2025 revisions). */
const V2_STDIO = `
import { Server } from "@modelcontextprotocol/server";
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";
const server = new Server({ name: "minimal", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler("tools/list", async () => ({
  tools: [{ name: "noop", inputSchema: { type: "object" } }],
}));
server.setRequestHandler("tools/call", async () => ({ content: [] }));
await server.connect(new StdioServerTransport());
`;

/** The same server served by serveStdio: both eras, the connection's opening exchange decides. */
const V2_SERVE_STDIO = `
import { Server } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
serveStdio(() => {
  const server = new Server({ name: "minimal", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler("tools/list", async () => ({
    tools: [{ name: "noop", inputSchema: { type: "object" } }],
  }));
  server.setRequestHandler("tools/call", async () => ({ content: [] }));
  return server;
});
`;

/** The previous SDK line (v1), same server. */
const V1_STDIO = `
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
const server = new Server({ name: "minimal", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [{ name: "noop", inputSchema: { type: "object" } }],
}));
server.setRequestHandler(CallToolRequestSchema, async () => ({ content: [] }));
await server.connect(new StdioServerTransport());
`;

/**
 * The minimal v2 HTTP proxy: stateless, one tool that GETs UPSTREAM/credits with the caller's key. Prints
 * "listening at <url>" on stderr. Env: UPSTREAM (the service's base URL), PORT (0: any).
 */
const V2_HTTP_PROXY = `
import { createServer } from "node:http";
import { McpServer, createMcpHandler } from "@modelcontextprotocol/server";
import { toNodeHandler } from "@modelcontextprotocol/node";
const upstream = process.env.UPSTREAM;
const handler = toNodeHandler(
  createMcpHandler(({ authInfo }) => {
    const server = new McpServer({ name: "minimal-proxy", version: "1.0.0" });
    server.registerTool("get_credits", { description: "The account's credit balance." }, async () => {
      const res = await fetch(upstream + "/credits", {
        headers: { authorization: "Bearer " + authInfo.token, accept: "application/json" },
      });
      const text = await res.text();
      return { content: [{ type: "text", text }], ...(res.ok ? {} : { isError: true }) };
    });
    return server;
  }),
);
const http = createServer((req, res) => {
  if (req.url !== "/mcp") {
    res.writeHead(404).end();
    return;
  }
  const bearer = /^Bearer\\s+(\\S+)$/i.exec(req.headers.authorization ?? "")?.[1];
  if (bearer === undefined) {
    res.writeHead(401, { "www-authenticate": "Bearer", "content-type": "application/json" });
    res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "unauthorized" }, id: null }));
    return;
  }
  req.auth = { token: bearer, clientId: "bearer", scopes: [] };
  void handler(req, res);
});
http.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  process.stderr.write("listening at http://127.0.0.1:" + http.address().port + "/mcp\\n");
});
process.on("SIGTERM", () => process.exit(0));
`;

/**
 * The floor of an HTTP proxy of this GET: a bare node:http server with no MCP SDK that answers any
 * JSON-RPC request (initialize with a minimal result; any other request by GETting UPSTREAM/credits with
 * the caller's Authorization, on an undici keep-alive pool as ours does), notifications with 202. Same
 * stderr line and env as the proxy above.
 */
const HTTP_FLOOR = `
import { createServer } from "node:http";
import { Agent, request } from "undici";
const upstream = process.env.UPSTREAM;
const agent = new Agent({ keepAliveTimeout: 10_000 });
const http = createServer((req, res) => {
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", async () => {
    const send = (status, message) => {
      const body = message === undefined ? "" : JSON.stringify(message);
      res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      res.end(body);
    };
    if (req.method !== "POST" || req.headers.authorization === undefined) return send(405);
    const message = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    if (message.id === undefined) return send(202);
    if (message.method === "initialize") {
      const { protocolVersion } = message.params;
      return send(200, { jsonrpc: "2.0", id: message.id, result: { protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "floor", version: "1.0.0" } } });
    }
    const answer = await request(upstream + "/credits", {
      dispatcher: agent,
      headers: { authorization: req.headers.authorization, accept: "application/json" },
    });
    const text = await answer.body.text();
    const result = { content: [{ type: "text", text }], ...(answer.statusCode === 200 ? {} : { isError: true }) };
    send(200, { jsonrpc: "2.0", id: message.id, result });
  });
});
http.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  process.stderr.write("listening at http://127.0.0.1:" + http.address().port + "/mcp\\n");
});
process.on("SIGTERM", () => process.exit(0));
`;

export const REFERENCES = {
  v2Stdio: {
    file: "min-sdk-v2-stdio.mjs",
    source: V2_STDIO,
    name: "minimal MCP SDK v2 server (Server + StdioServerTransport), bundled",
  },
  v2ServeStdio: {
    file: "min-sdk-v2-serve-stdio.mjs",
    source: V2_SERVE_STDIO,
    name: "minimal MCP SDK v2 server (Server + serveStdio), bundled",
  },
  v1Stdio: {
    file: "min-sdk-v1-stdio.mjs",
    source: V1_STDIO,
    name: "minimal MCP SDK v1 server (Server + StdioServerTransport), bundled",
  },
  v2HttpProxy: {
    file: "min-sdk-v2-http-proxy.mjs",
    source: V2_HTTP_PROXY,
    name: "minimal MCP SDK v2 HTTP proxy (createMcpHandler, stateless)",
  },
  httpFloor: {
    file: "http-floor-proxy.mjs",
    source: HTTP_FLOOR,
    name: "bare node:http JSON-RPC proxy, no MCP SDK (floor)",
  },
};

/** Builds one reference into `dir` with our bin's esbuild settings; returns its entry file. */
async function buildOne(root, dir, { file, source }) {
  const outfile = path.join(dir, file);
  await build({
    stdin: { contents: source, resolveDir: root, loader: "js" },
    outfile,
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    minify: true,
    legalComments: "none",
    banner: {
      js: 'import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);',
    },
    logLevel: "warning",
  });
  return outfile;
}

/** Builds every reference into `dir`; returns { key: entry file } (keys of REFERENCES). */
export async function buildMinimalSdkServers(root, dir) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, "README"), "Generated by bench/min-sdk-server.mjs; safe to delete.\n");
  const out = {};
  for (const [key, ref] of Object.entries(REFERENCES)) out[key] = await buildOne(root, dir, ref);
  return out;
}
