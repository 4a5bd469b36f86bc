/**
 * The tool schemas as clients that render or check forms read them: every input and output schema is valid
 * JSON Schema 2020-12 (the default dialect of MCP tool schemas) under Ajv's strict mode and the meta-schema,
 * and the SDKs' own validators (v1: `@modelcontextprotocol/sdk`, v2: `@modelcontextprotocol/client`) read
 * the conditional rule generate_video's schema states (resolution only with vendor-video-2-0) as the server
 * does. What the server does with a form's empty fields: test/mcp/form-defaults.test.ts.
 */
import { AjvJsonSchemaValidator as ClientValidator } from "@modelcontextprotocol/client/validators/ajv";
import { AjvJsonSchemaValidator as SdkValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import formats from "ajv-formats";
import { describe, expect, it } from "vitest";
import { describeTools } from "../../src/mcp/tool-list.js";
import { TOOLS } from "../../src/tools/index.js";

const tools = describeTools();
const schemaOf = (name: string) => tools.find((tool) => tool.name === name)?.inputSchema ?? {};
const inputOf = (name: string) => TOOLS.find((tool) => tool.name === name)?.input;

describe("the tool schemas", () => {
  it("are valid JSON Schema 2020-12, in Ajv's strict mode", () => {
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    formats.default(ajv);
    for (const tool of tools) {
      for (const schema of [tool.inputSchema, tool.outputSchema ?? {}] as object[]) {
        expect(ajv.validateSchema(schema), `${tool.name}: ${ajv.errorsText()}`).toBe(true);
        expect(() => ajv.compile(schema), tool.name).not.toThrow();
      }
    }
  });

  const validators = [
    ["SDK v1", new SdkValidator()],
    ["SDK v2 client", new ClientValidator()],
  ] as const;
  it.each(validators)("say what the server says of a resolution, as the %s validator reads them", (_, v) => {
    const check = v.getValidator(schemaOf("generate_video"));
    const cases: [Record<string, unknown>, boolean][] = [
      [{ prompt: "a kite", resolution: "720p" }, false],
      [{ prompt: "a kite", model: "vendor-video-2-0-fast", resolution: "720p" }, false],
      [{ prompt: "a kite", model: "vendor-video-2-0", resolution: "720p" }, true],
      [{ prompt: "a kite", model: "vendor-video-2-0-fast" }, true],
    ];
    for (const [args, valid] of cases) {
      expect(check(args).valid, JSON.stringify(args)).toBe(valid);
      expect(inputOf("generate_video")?.safeParse(args).success, JSON.stringify(args)).toBe(valid);
    }
  });

  it("let image_paths be empty, as the contract does (an empty list counts as not given)", () => {
    const check = new ClientValidator().getValidator(schemaOf("generate_image"));
    expect(check({ prompt: "a fox", image_paths: [], images: [] }).valid).toBe(true);
  });
});
