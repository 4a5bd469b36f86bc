/** Spawns the built bin as a real stdio MCP server and records every message it sends. */
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { ClientCapabilities, JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

export const CLI = path.resolve(import.meta.dirname, "../../dist/bundle/cli.js");

export interface StdioSession {
  client: Client;
  /** The server process. */
  pid: number;
  /** Every JSON-RPC message the server wrote to stdout, serialized. */
  messages: string[];
  stderr: () => string;
  close(): Promise<void>;
}

export async function connectStdio(
  args: string[],
  env: Record<string, string>,
  capabilities: ClientCapabilities = {},
): Promise<StdioSession> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, ...args],
    env: { PATH: process.env["PATH"] ?? "", HOME: env["HOME"] ?? process.env["HOME"] ?? "/tmp", ...env },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  const client = new Client({ name: "e2e", version: "1.0.0" }, { capabilities });
  const messages: string[] = [];
  // The client installs its handler just before start(): wrap it there so even `initialize` is recorded.
  const start = transport.start.bind(transport);
  transport.start = async () => {
    const deliver = transport.onmessage;
    transport.onmessage = (message: JSONRPCMessage) => {
      messages.push(JSON.stringify(message));
      deliver?.(message);
    };
    return start();
  };
  await client.connect(transport);
  return {
    client,
    pid: transport.pid ?? -1,
    messages,
    stderr: () => stderr,
    close: () => client.close(),
  };
}
