/**
 * The tools as MCP lists them, from their zod schemas. Inlined into the bundle by the build (the JSON Schema
 * conversion was a third of the start-up work); also read by unbundled runs, tests, README and the manifest.
 */
import type { Tool } from "@modelcontextprotocol/server";
import * as z from "zod";
import { TOOLS } from "../tools/index.js";
import { viewerToolMeta } from "../ui/viewer.js";

export function describeTools(): Tool[] {
  return TOOLS.map((tool) => ({
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: toJsonSchema(tool.input, "input") as Tool["inputSchema"],
    outputSchema: toJsonSchema(tool.output, "output") as NonNullable<Tool["outputSchema"]>,
    annotations: { title: tool.title, ...tool.annotations },
    // "optional", never "required": a client without task support calls these tools as before.
    ...(tool.task !== undefined && { execution: { taskSupport: "optional" as const } }),
    ...(tool.viewer === true && { _meta: viewerToolMeta() }),
  }));
}

function toJsonSchema(schema: z.ZodType, io: "input" | "output"): Record<string, unknown> {
  const { $schema: _ignored, ...json } = z.toJSONSchema(schema, { io, unrepresentable: "any" });
  return json;
}
