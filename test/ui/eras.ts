/**
 * The two protocol eras a host may speak to the server while it shows the viewer, each with the client a
 * host of that era would use:
 *
 * - 2025-11-25: the SDK v1 client (`initialize` handshake), over stdio.
 * - 2026-07-28: the SDK v2 client pinned to that revision (`server/discover`, the per-request `_meta`
 *   envelope; no `initialize`), over stdio or HTTP. Pinned, not `auto`: the v2 client's default is the
 *   2025 handshake, and a pinned client fails to connect rather than fall back silently.
 *
 * Both declare the MCP Apps extension (`io.modelcontextprotocol/ui`) as an ext-apps 2.x host does; the
 * server answers the same either way. What each era's host calls is reduced to `EraHost`, so one test
 * reads for both.
 */
import { spawn } from "node:child_process";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import type { McpUiClientCapabilities } from "@modelcontextprotocol/ext-apps";
import { EXTENSION_ID, RESOURCE_MIME_TYPE } from "@modelcontextprotocol/ext-apps/server";
import { CLI, connectStdio } from "../helpers/stdio.js";

export const LEGACY = "2025-11-25";
export const MODERN = "2026-07-28";
export type Era = typeof LEGACY | typeof MODERN;

/** What an MCP Apps host announces (SEP-1865): it renders `text/html;profile=mcp-app` resources. */
export const UI_CAPABILITIES = {
  extensions: { [EXTENSION_ID]: { mimeTypes: [RESOURCE_MIME_TYPE] } satisfies McpUiClientCapabilities },
};

export interface ToolResult {
  content: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  [key: string]: unknown;
}

/** The host's side of one connection, in either era. */
export interface EraHost {
  era: Era;
  /** The revision the connection actually runs, as the client negotiated it. */
  protocolVersion: string | undefined;
  listTools(): Promise<{ tools: Array<{ name: string; _meta?: Record<string, unknown> | undefined }> }>;
  resourcesCapability(): unknown;
  listResources(): Promise<{
    resources: Array<{
      uri: string;
      mimeType?: string | undefined;
      _meta?: Record<string, unknown> | undefined;
    }>;
  }>;
  listResourceTemplates(): Promise<{ resourceTemplates: unknown[] }>;
  readResource(uri: string): Promise<{ contents: Array<Record<string, unknown>> }>;
  callTool(name: string, args?: Record<string, unknown>): Promise<ToolResult>;
  close(): Promise<void>;
}

/** The 2025-11-25 host: SDK v1 over stdio. */
export async function legacyStdioHost(env: Record<string, string>): Promise<EraHost> {
  const session = await connectStdio([], env, UI_CAPABILITIES);
  const { client } = session;
  // The SDK v1 client keeps the negotiated revision to itself: read it off the initialize answer.
  const init = session.messages.map((m) => JSON.parse(m) as { result?: { protocolVersion?: string } });
  return {
    era: LEGACY,
    protocolVersion: init.find((m) => m.result?.protocolVersion !== undefined)?.result?.protocolVersion,
    listTools: () => client.listTools(),
    resourcesCapability: () => client.getServerCapabilities()?.resources,
    listResources: () => client.listResources(),
    listResourceTemplates: () => client.listResourceTemplates(),
    readResource: (uri) => client.readResource({ uri }),
    callTool: async (name, args) => (await client.callTool({ name, arguments: args })) as ToolResult,
    close: () => client.close(),
  };
}

function modernHost(client: Client): EraHost {
  return {
    era: MODERN,
    protocolVersion: client.getProtocolEra() === "modern" ? client.getNegotiatedProtocolVersion() : undefined,
    listTools: () => client.listTools(),
    resourcesCapability: () => client.getServerCapabilities()?.resources,
    listResources: () => client.listResources(),
    listResourceTemplates: () => client.listResourceTemplates(),
    readResource: (uri) => client.readResource({ uri }),
    callTool: async (name, args) => (await client.callTool({ name, arguments: args })) as ToolResult,
    close: () => client.close(),
  };
}

const modernClient = () =>
  new Client(
    { name: "viewer-host-2026", version: "1.0.0" },
    { capabilities: UI_CAPABILITIES, versionNegotiation: { mode: { pin: MODERN } } },
  );

/** The 2026-07-28 host: SDK v2 over stdio, pinned to that revision. */
export async function modernStdioHost(env: Record<string, string>): Promise<EraHost> {
  const client = modernClient();
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [CLI],
      env: { PATH: process.env["PATH"] ?? "", ...env },
      stderr: "ignore",
    }),
  );
  return modernHost(client);
}

/** The 2026-07-28 host: SDK v2 over Streamable HTTP with the caller's key, pinned to that revision. */
export async function modernHttpHost(url: string, key: string): Promise<EraHost> {
  const client = modernClient();
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  );
  return modernHost(client);
}

/**
 * `generation-mcp --http --port 0` with `env`, once it says where it serves. Spawned here rather than with
 * test/helpers/http.ts, which does not typecheck under the DOM library this folder's tsconfig adds.
 */
export async function startHttpServer(
  env: Record<string, string>,
): Promise<{ url: string; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [CLI, "--http", "--port", "0"], {
    env: { PATH: process.env["PATH"] ?? "", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let stderr = "";
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`no "serving MCP at" line in time:\n${stderr}`));
    }, 15_000);
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
      const found = /serving MCP at (http:\/\/\S+\/mcp)/.exec(stderr)?.[1];
      if (found === undefined) return;
      clearTimeout(timer);
      resolve(found);
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`the server exited before serving:\n${stderr}`));
    });
  });
  return {
    url,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}
