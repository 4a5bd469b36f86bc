/**
 * MCP over HTTP (src/mcp/http.ts) answers on the wire exactly as the SDK's own building blocks do, with
 * nothing of ours in between: the same requests go to two servers, ours and one wired from the SDK's stock
 * pieces alone with the same server factory (`createMcpHandler` for 2026-07-28, the Node Streamable HTTP
 * transport in JSON mode for 2025), and their answers must agree byte for byte: status, every header but
 * Date (names, values and order, framing included), and body. The requests cover lists, calls, discovery,
 * errors a handler or the dispatch answers, a bad envelope, headers that disagree or are missing, progress
 * (SSE) and logs. Only where this server differs on purpose is an answer pinned apart: a 2026-07-28 method
 * it does not serve is HTTP 404.
 */
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { NodeStreamableHTTPServerTransport, toNodeHandler, toWebRequest } from "@modelcontextprotocol/node";
import { createMcpHandler, isLegacyRequest } from "@modelcontextprotocol/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { digestOf, type Caller } from "../../src/auth/caller.js";
import { Logger } from "../../src/logger.js";
import { createMcpHttp, type Served } from "../../src/mcp/http.js";
import { MODERN, type Revision } from "../../src/mcp/revisions.js";
import { createMcpServer } from "../../src/mcp/server.js";
import type { Session } from "../../src/mcp/session.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { VIEWER_URI } from "../../src/ui/viewer.js";
import { testConfig } from "../helpers/harness.js";
import { tempRoot } from "../helpers/http-calls.js";
import { REVISION, envelope } from "../helpers/modern.js";

interface Answer {
  status: number;
  headers: string[];
  body: string;
}

interface Exchange {
  method: string;
  params?: Record<string, unknown>;
  id?: string | number;
  headers?: Record<string, string | undefined>;
}

let sandbox: SandboxHandle;
let root: Awaited<ReturnType<typeof tempRoot>>;
let runtime: Runtime;
let ours: Server;
let stock: Server;

/** A server on a port of its own that hands each POST's parsed body to `serve`. */
async function listen(
  serve: (req: IncomingMessage, res: ServerResponse, body: unknown) => void,
): Promise<Server> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = "";
    req.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
    req.on("end", () => serve(req, res, JSON.parse(text)));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

/** What transports/http.ts does around McpHttp for one POST. */
function serveOurs(session: Session): Promise<Server> {
  const mcpHttp = createMcpHttp({ version: "test", logger: new Logger("error", () => {}) });
  return listen((req, res, body) => {
    let served: Served | undefined;
    res.once("close", () => void served?.close());
    void mcpHttp.serve(req, res, body, session).then((answer) => (served = answer));
  });
}

/** The SDK's stock pieces with the same server factory: the wire ours must match. */
function serveStock(session: Session): Promise<Server> {
  const logger = new Logger("error", () => {});
  const modern = toNodeHandler(
    createMcpHandler(() => createMcpServer({ version: "test", session, revision: MODERN, logger }), {
      legacy: "reject",
    }),
  );
  return listen((req, res, body) => {
    const request = { method: "POST", url: "/mcp", headers: req.headers, async *[Symbol.asyncIterator]() {} };
    void (async () => {
      // The SDK's documented hand-wired routing: its own predicate picks the era.
      if (!(await isLegacyRequest(await toWebRequest(request, body), body)))
        return modern(request, res, body);
      const legacy: Revision = { era: "legacy", version: "2025-11-25" };
      const server = createMcpServer({ version: "test", session, revision: legacy, logger });
      const transport = new NodeStreamableHTTPServerTransport({ enableJsonResponse: true });
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
    })();
  });
}

beforeAll(async () => {
  [sandbox, root] = await Promise.all([
    startSandbox({ timings: { queuedMs: 40, processingMs: 160 } }),
    tempRoot("wire-paths-"),
  ]);
  const key = sandbox.keys.paid;
  const config = testConfig(root.dir, { apiKey: key, baseUrl: sandbox.baseUrl, previews: false });
  runtime = await createRuntime(
    config,
    { baseUrl: sandbox.baseUrl, apiKey: key, callerKey: true },
    new Logger("error", () => {}),
    "test",
  );
  const caller: Caller = { id: digestOf(key), serviceKey: key, scope: undefined };
  const session: Session = {
    caller,
    advice: "http-key",
    mediaOrigin: new URL(sandbox.baseUrl).origin,
    runtime: async () => runtime,
  };
  [ours, stock] = await Promise.all([serveOurs(session), serveStock(session)]);
});
afterAll(async () => {
  for (const server of [ours, stock]) server?.close();
  await runtime?.close();
  await sandbox?.close();
  await root?.remove();
});

/** One raw POST: its status, headers (but Date) as sent, and body. */
function post(server: Server, headers: Record<string, string>, body: string): Promise<Answer> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const outgoing = request({ host: "127.0.0.1", port, path: "/mcp", method: "POST", headers }, (res) => {
      let text = "";
      res.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
      res.on("end", () => {
        const pairs: string[] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) {
          const name = res.rawHeaders[i] ?? "";
          if (name.toLowerCase() !== "date") pairs.push(`${name}: ${res.rawHeaders[i + 1] ?? ""}`);
        }
        resolve({ status: res.statusCode ?? 0, headers: pairs, body: text });
      });
    });
    outgoing.on("error", reject);
    outgoing.end(body);
  });
}

/** The headers a 2026-07-28 client sends with `method` (Mcp-Name mirroring the body's name, uri or taskId). */
function modernHeaders(method: string, params: Record<string, unknown>): Record<string, string> {
  const name = params["name"] ?? params["uri"] ?? params["taskId"];
  return {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": REVISION,
    "mcp-method": method,
    ...(typeof name === "string" && { "mcp-name": name }),
  };
}

let nextId = 1;

/** Sends `exchange` to both servers; returns both answers. */
async function both(exchange: Exchange, era: "2026" | "2025" = "2026") {
  const params = exchange.params ?? {};
  const base =
    era === "2026"
      ? modernHeaders(exchange.method, params)
      : {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-11-25",
        };
  const headers: Record<string, string> = { ...base };
  for (const [name, value] of Object.entries(exchange.headers ?? {})) {
    if (value === undefined) delete headers[name];
    else headers[name] = value;
  }
  const message = { jsonrpc: "2.0", id: exchange.id ?? nextId++, method: exchange.method, params };
  const body = JSON.stringify(message);
  const [mine, sdk] = await Promise.all([post(ours, headers, body), post(stock, headers, body)]);
  return { mine, sdk };
}

const meta = (options: Parameters<typeof envelope>[0] = {}) => ({ _meta: envelope(options) });

describe("2026-07-28: ours answers as the SDK's entry does", () => {
  const cases: Array<[string, Exchange]> = [
    ["server/discover", { method: "server/discover", params: meta() }],
    ["tools/list", { method: "tools/list", params: meta() }],
    [
      "tools/call get_credits",
      { method: "tools/call", params: { name: "get_credits", arguments: {}, ...meta() } },
    ],
    [
      "tools/call get_credits with a string id",
      { method: "tools/call", id: "call-1", params: { name: "get_credits", arguments: {}, ...meta() } },
    ],
    [
      "tools/call of a dry run, from a client with the tasks extension",
      {
        method: "tools/call",
        params: {
          name: "generate_video",
          arguments: { prompt: "a lighthouse at dusk", dry_run: true },
          ...meta({ tasks: true }),
        },
      },
    ],
    [
      "tools/call refused (a validation_error result)",
      { method: "tools/call", params: { name: "get_status", arguments: { video_id: 7 }, ...meta() } },
    ],
    [
      "tools/call of an unknown tool",
      { method: "tools/call", params: { name: "no_such_tool", arguments: {}, ...meta() } },
    ],
    ["resources/list", { method: "resources/list", params: meta() }],
    ["resources/templates/list", { method: "resources/templates/list", params: meta() }],
    ["resources/read of the viewer", { method: "resources/read", params: { uri: VIEWER_URI, ...meta() } }],
    [
      "resources/read of an unknown resource (a handler's error)",
      { method: "resources/read", params: { uri: "ui://nothing/here", ...meta() } },
    ],
    [
      "tasks/get of an unknown task",
      { method: "tasks/get", params: { taskId: "no-such-task", ...meta({ tasks: true }) } },
    ],
    [
      "tools/list with params its schema refuses (an error in band)",
      { method: "tools/list", params: { cursor: 42, ...meta() } },
    ],
  ];

  const refusals: Array<[string, Exchange]> = [
    [
      "a bad envelope",
      {
        method: "tools/call",
        params: {
          name: "get_credits",
          arguments: {},
          _meta: { "io.modelcontextprotocol/protocolVersion": REVISION },
        },
      },
    ],
    [
      "an Mcp-Name header that disagrees with the body",
      {
        method: "tools/call",
        params: { name: "get_credits", arguments: {}, ...meta() },
        headers: { "mcp-name": "generate_video" },
      },
    ],
    [
      "a missing Mcp-Name header",
      {
        method: "tools/call",
        params: { name: "get_credits", arguments: {}, ...meta() },
        headers: { "mcp-name": undefined },
      },
    ],
    [
      "a missing Mcp-Method header",
      { method: "tools/list", params: meta(), headers: { "mcp-method": undefined } },
    ],
    [
      "an MCP-Protocol-Version header that disagrees with the envelope",
      { method: "tools/list", params: meta(), headers: { "mcp-protocol-version": "2025-11-25" } },
    ],
    [
      "a call with a progress token (an SSE answer)",
      {
        method: "tools/call",
        params: {
          name: "get_status",
          arguments: { video_id: "no-such-video", wait: true },
          ...meta({ progressToken: "p-1" }),
        },
      },
    ],
    [
      "a call that asks for log lines",
      {
        method: "tools/call",
        params: { name: "get_credits", arguments: {}, ...meta({ logLevel: "debug" }) },
      },
    ],
    [
      "a Base64 Mcp-Name",
      {
        method: "tools/call",
        params: { name: "get_credits", arguments: {}, ...meta() },
        headers: { "mcp-name": `=?base64?${Buffer.from("get_credits").toString("base64")}?=` },
      },
    ],
  ];
  for (const [name, exchange] of [...cases, ...refusals]) {
    it(`${name}: the same wire`, async () => {
      const { mine, sdk } = await both(exchange);
      expect(mine).toEqual(sdk);
    });
  }

  it("compares answers of every kind: JSON and SSE, 200 and 4xx", async () => {
    const ok = await both(cases[2]![1]);
    expect(ok.sdk.status).toBe(200);
    expect(ok.sdk.headers).toContain("content-type: application/json");
    expect(ok.sdk.headers).toContain("Transfer-Encoding: chunked");
    expect(JSON.parse(ok.sdk.body)).toMatchObject({ result: { resultType: "complete" } });
    const streamed = await both(refusals[5]![1]);
    expect(streamed.sdk.headers).toContain("content-type: text/event-stream");
    const refused = await both(refusals[1]![1]);
    expect(refused.sdk.status).toBe(400);
  });

  it("a method this server does not serve: HTTP 404 with -32601", async () => {
    const { mine } = await both({ method: "completion/complete", params: meta() });
    expect(mine.status).toBe(404);
    expect(JSON.parse(mine.body)).toMatchObject({ error: { code: -32601 } });
  });
});

describe("2025-11-25: ours answers as the SDK's transport does", () => {
  const cases: Array<[string, Exchange]> = [
    ["tools/list", { method: "tools/list" }],
    ["tools/call get_credits", { method: "tools/call", params: { name: "get_credits", arguments: {} } }],
    ["an unknown method", { method: "completion/complete" }],
    [
      "a request whose envelope names 2026-07-28 under a 2025 header",
      { method: "tools/list", params: meta() },
    ],
  ];
  for (const [name, exchange] of cases) {
    it(`${name}: the same wire`, async () => {
      const { mine, sdk } = await both(exchange, "2025");
      expect(mine).toEqual(sdk);
    });
  }
});
