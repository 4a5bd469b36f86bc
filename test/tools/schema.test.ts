/** The tool list: the six tools, honest annotations, every parameter described (the schemas: toolsnaps.test.ts). */
import { describe, expect, it } from "vitest";
import { describeTools } from "../../src/mcp/tool-list.js";

describe("tool list", () => {
  const tools = describeTools();

  it("has exactly the six tools of CONTRACT.md", () => {
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      "generate_image",
      "generate_video",
      "get_credits",
      "get_status",
      "list_videos",
      "upload_image",
    ]);
  });

  it("declares honest annotations", () => {
    const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool.annotations]));
    for (const name of ["list_videos", "get_credits"]) expect(byName[name]?.readOnlyHint).toBe(true);
    // get_status writes a file with download: true; saving the same video again returns the same file.
    expect(byName["get_status"]).toMatchObject({
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: true,
    });
    for (const name of ["generate_video", "generate_image"]) {
      expect(byName[name]).toMatchObject({ readOnlyHint: false, idempotentHint: false, openWorldHint: true });
    }
  });

  it("describes every parameter and declares an object output schema", () => {
    for (const tool of tools) {
      expect(tool.title).toBeTruthy();
      expect(tool.outputSchema?.type).toBe("object");
      const properties = (tool.inputSchema.properties ?? {}) as Record<string, { description?: string }>;
      for (const [name, property] of Object.entries(properties)) {
        expect(property.description, `${tool.name}.${name}`).toBeTruthy();
      }
    }
  });
});
