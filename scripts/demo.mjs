#!/usr/bin/env node
// A newcomer's first minute: drives the built server through a real MCP client over stdio, in sandbox
// mode (no account, no credits), and prints what an assistant would see: tools, prompts, credits, progress,
// the URL. The sandbox's clip is always the same 2 s test pattern, whatever the prompt: the end says so.
// Usage: npm run demo            (or: node scripts/demo.mjs [a prompt])
/* global fetch */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const cli = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../dist/bundle/cli.js");
const prompt = process.argv.slice(2).join(" ") || "a paper boat drifting on a rainy street, cinematic";
const out = (line = "") => process.stdout.write(`${line}\n`);

const transport = new StdioClientTransport({
  command: process.execPath,
  args: [cli, "--sandbox"],
  env: { ...process.env, GENERATION_POLL_INTERVAL_MS: process.env.GENERATION_POLL_INTERVAL_MS ?? "2000" },
  stderr: "ignore",
});
const client = new Client({ name: "generation-mcp-demo", version: "1.0.0" });
await client.connect(transport);
const text = (result) => result.content.map((part) => (part.type === "text" ? part.text : "")).join("\n");

try {
  const { tools } = await client.listTools();
  out(
    `Connected to ${client.getServerVersion()?.name} ${client.getServerVersion()?.version} (sandbox mode).`,
  );
  out(`Tools: ${tools.map((tool) => tool.name).join(", ")}`);
  const { prompts } = await client.listPrompts();
  out(`Prompts: ${prompts.map((entry) => entry.name).join(", ")}`);
  out();
  out(`> get_credits`);
  out(text(await client.callTool({ name: "get_credits", arguments: {} })));
  out();
  out(`> generate_video { prompt: "${prompt}", duration: 5 }`);
  const started = Date.now();
  const result = await client.callTool(
    { name: "generate_video", arguments: { prompt, duration: 5 } },
    undefined,
    {
      onprogress: (update) =>
        out(`  [${((Date.now() - started) / 1000).toFixed(1)} s] progress: ${update.message}`),
      timeout: 120_000,
    },
  );
  out(text(result));
  out();
  out("structuredContent:");
  out(JSON.stringify(result.structuredContent, null, 2));
  const url = result.structuredContent?.video_url;
  if (url) {
    // The embedded sandbox serves a real MP4 while the server runs.
    const response = await fetch(url);
    const bytes = Buffer.from(await response.arrayBuffer());
    out();
    out(
      `GET ${url} -> ${response.status} ${response.headers.get("content-type")}, ${bytes.length} bytes (MP4 box "${bytes.subarray(4, 8)}")`,
    );
    out(
      "(The sandbox's clip is the same 2 s, 320x180 test pattern whatever the prompt: a real service renders it.)",
    );
  }
  out();
  out(`The same from the command line: node dist/bundle/cli.js video "${prompt}" --sandbox --out ./`);
} finally {
  await client.close();
}
