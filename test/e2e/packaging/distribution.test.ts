/**
 * The distribution files (mcpb/manifest.json, server.json) are what scripts/distribution.mjs makes of
 * package.json, its variables table and the built server's tool list, byte for byte; server.json passes the
 * MCP Registry's published schema (kept in schemas/); and both agree with package.json and with CONTRACT.md's
 * variable table. Needs `npm run build` first (pretest): the tool list comes from dist/.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { Ajv } from "ajv";
import formats from "ajv-formats";
import { describe, expect, it } from "vitest";
// @ts-expect-error -- a plain ESM script run by npm and here
import { REGISTRY_SCHEMA, VARIABLES, renderDistribution } from "../../../scripts/distribution.mjs";
import { SETTINGS } from "../../../src/config/schema.js";

interface Variable {
  name: string;
  key?: string;
  kind: string;
  secret?: boolean;
  min?: number;
  in: string[];
}
interface RegistryInput {
  name: string;
  isSecret?: boolean;
}
interface RegistryPackage {
  registryType: string;
  identifier: string;
  version: string;
  transport: { type: string; url?: string; headers?: RegistryInput[] };
  environmentVariables?: RegistryInput[];
}
interface ServerJson {
  $schema: string;
  name: string;
  description: string;
  version: string;
  packages: RegistryPackage[];
  remotes?: unknown[];
}
interface Manifest {
  name: string;
  version: string;
  description: string;
  server: { mcp_config: { args: string[]; env: Record<string, string> } };
  user_config: Record<string, { sensitive?: boolean }>;
}

const repo = path.resolve(import.meta.dirname, "../../..");
const read = (file: string) => readFileSync(path.join(repo, file), "utf8");
const pkg = JSON.parse(read("package.json")) as {
  name: string;
  version: string;
  description: string;
  mcpName: string;
};
const serverJson = JSON.parse(read("server.json")) as ServerJson;
const manifest = JSON.parse(read("mcpb/manifest.json")) as Manifest;
const variables = VARIABLES as Variable[];
/** The sha256 of https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json (schemas/README.md). */
const SCHEMA_SHA256 = "3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0";

function registryValidator() {
  const schemaText = read("schemas/server.schema.json");
  const schema = JSON.parse(schemaText) as { $id: string };
  // strict: false, because the registry's schema carries OpenAPI's "example" annotations.
  const ajv = new Ajv({ strict: false, allErrors: true });
  formats.default(ajv);
  return { schemaText, schema, validate: ajv.compile(schema) };
}

describe("the distribution files", () => {
  it("are exactly what scripts/distribution.mjs generates (run it with --write after a change)", async () => {
    const files = (await renderDistribution(repo)) as Record<string, string>;
    expect(Object.keys(files).sort()).toEqual(["mcpb/manifest.json", "server.json"]);
    for (const [file, text] of Object.entries(files)) expect(read(file), file).toBe(text);
  });

  it("server.json passes the registry's published schema, which is the pinned 2025-12-11 file", () => {
    const { schemaText, schema, validate } = registryValidator();
    expect(createHash("sha256").update(schemaText).digest("hex")).toBe(SCHEMA_SHA256);
    expect(schema.$id).toBe(REGISTRY_SCHEMA);
    expect(serverJson.$schema).toBe(schema.$id);
    expect(validate(serverJson), JSON.stringify(validate.errors, null, 2)).toBe(true);
    // The validator does refuse: the registry's limits on name and description hold.
    expect(validate({ ...serverJson, description: "x".repeat(101) })).toBe(false);
    expect(validate({ ...serverJson, name: "generation-mcp" })).toBe(false);
  });

  it("agree with package.json: registry name, npm package, version, description", () => {
    expect(serverJson).toMatchObject({
      name: pkg.mcpName,
      version: pkg.version,
      description: pkg.description,
    });
    expect(serverJson.name).toMatch(/^io\.github\.[\w-]+\/generation-mcp$/);
    for (const entry of serverJson.packages) {
      expect(entry).toMatchObject({ registryType: "npm", identifier: pkg.name, version: pkg.version });
    }
    expect(serverJson.packages.map((entry) => entry.transport.type)).toEqual(["stdio", "streamable-http"]);
    expect(manifest).toMatchObject({ name: pkg.name, version: pkg.version, description: pkg.description });
  });

  // CONTRACT.md lives beside the repository (../shared, as CI checks it out), not in a clone: without it
  // this check is reported as skipped, never passed silently.
  const contract = path.resolve(repo, "..", "shared", "CONTRACT.md");
  it.skipIf(!existsSync(contract))("name only variables of CONTRACT.md's table", () => {
    const named = new Set([
      ...serverJson.packages.flatMap((entry) =>
        (entry.environmentVariables ?? []).map((input) => input.name),
      ),
      ...Object.keys(manifest.server.mcp_config.env),
      ...variables.map((variable) => variable.name),
    ]);
    const table = readFileSync(contract, "utf8")
      .split("\n")
      .filter((line) => line.startsWith("| GENERATION_"))
      .flatMap((line) => line.split("|")[1]?.match(/GENERATION_[A-Z_]+/g) ?? []);
    expect([...named].filter((name) => !table.includes(name))).toEqual([]);
  });

  it("keep the API key secret everywhere", () => {
    for (const entry of serverJson.packages) {
      const key = entry.environmentVariables?.find((input) => input.name === "GENERATION_API_KEY");
      if (key) expect(key.isSecret).toBe(true);
      for (const header of entry.transport.headers ?? []) expect(header.isSecret).toBe(true);
    }
    expect(manifest.user_config["api_key"]?.sensitive).toBe(true);
  });

  it("offer every setting of the table where the table says", () => {
    const { args, env } = manifest.server.mcp_config;
    for (const variable of variables.filter((entry) => entry.in.includes("mcpb"))) {
      const placeholder = `\${user_config.${variable.key}}`;
      expect(manifest.user_config[variable.key ?? ""], variable.name).toBeDefined();
      expect(env[variable.name] === placeholder || args.includes(placeholder), variable.name).toBe(true);
    }
    const [stdio, http] = serverJson.packages;
    const names = (entry: RegistryPackage | undefined) =>
      entry?.environmentVariables?.map((input) => input.name);
    expect(names(stdio)).toEqual(
      variables.filter((entry) => entry.in.includes("stdio")).map((entry) => entry.name),
    );
    expect(names(http)).toEqual(
      variables.filter((entry) => entry.in.includes("http")).map((entry) => entry.name),
    );
    // Over --http each caller sends its own key: the server refuses one of its own there (CONTRACT.md).
    expect(names(http)).not.toContain("GENERATION_API_KEY");
    // The URL's {placeholders} are the package's own variables, as the schema's package context requires.
    for (const [, variable] of (http?.transport.url ?? "").matchAll(/\{(\w+)\}/g)) {
      expect(names(http)).toContain(variable);
    }
  });

  it("offer settings of the one table (src/config/schema.ts), each as the kind of field the table says", () => {
    const fields: Record<string, string> = {
      switch: "boolean",
      credits: "number",
      dir: "directory",
      dirs: "directories",
    };
    for (const variable of variables) {
      const setting = SETTINGS[variable.name as keyof typeof SETTINGS];
      expect(setting, variable.name).toBeDefined();
      expect(variable.kind, variable.name).toBe(
        fields[setting.kind] ?? (setting.kind === "number" ? "number" : "string"),
      );
      expect(variable.secret === true, variable.name).toBe(setting.kind === "secret");
      if (setting.kind === "credits") expect(variable.min, variable.name).toBe(0);
    }
  });
});
