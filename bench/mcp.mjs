/** Spawns our built server as a real stdio MCP server and connects the SDK client to it. */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/**
 * The package's bin (the bundle's launcher); BENCH_BIN names another build's (e.g. one from
 * `node scripts/bundle.mjs --readable DIR`, for profiles).
 */
export const BIN =
  process.env.BENCH_BIN === undefined
    ? path.join(ROOT, "dist", "bundle", "cli.js")
    : path.resolve(process.env.BENCH_BIN);
/** The unbundled tsc output, for reference. */
export const TSC_ENTRY = path.join(ROOT, "dist", "cli.js");

/** env: the variables the server gets (PATH and HOME added). */
export async function connectServer(env, { entry = BIN, args = [] } = {}) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [entry, ...args],
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk) => {
    stderr += chunk;
    if (stderr.length > 20_000) stderr = stderr.slice(-10_000);
  });
  const client = new Client({ name: "generation-mcp-bench", version: "1.0.0" }, { capabilities: {} });
  await client.connect(transport);
  return {
    client,
    pid: transport.pid,
    stderr: () => stderr,
    close: () => client.close(),
  };
}

/** Calls a tool and throws when the result is an error. */
export async function call(client, name, args = {}, options) {
  const result = await client.callTool({ name, arguments: args }, undefined, options);
  if (result.isError) {
    throw new Error(`${name} failed: ${result.content?.map((c) => c.text).join(" ")}`);
  }
  return result;
}
