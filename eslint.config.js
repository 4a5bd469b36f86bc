import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "bench/results/", "bench/.peers/", "coverage/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: "readonly", console: "readonly", Buffer: "readonly" } },
    rules: {
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      eqeqeq: ["error", "smart"],
      // A library's internals by path; the layering and the rest of the import rules are in .dependency-cruiser.mjs.
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              // Except where a library documents the path as its entry: ajv's draft 2020-12 validator.
              regex: "^(?!ajv/dist/2020(\\.js)?$)(@[^/.][^/]*/)?[^/.][^/]*/(.+/)?(lib|dist|src)(/|$)",
              message: "A library's internals: import what its package exports.",
            },
          ],
        },
      ],
    },
  },
  {
    files: ["src/tools/**/*.ts"],
    rules: {
      "no-restricted-globals": [
        "error",
        { name: "fetch", message: "Tools never call fetch: the network is api/'s and files/'." },
      ],
    },
  },
  {
    // The main test project runs files one after another over one module graph (vitest.config.ts).
    files: ["test/**/*.ts"],
    rules: {
      "no-restricted-properties": [
        "error",
        ...["mock", "doMock", "stubGlobal", "stubEnv"].map((property) => ({
          object: "vi",
          property,
          message: "Files share their modules and globals: pass a clock, a signal or a config instead.",
        })),
      ],
    },
  },
  {
    files: ["src/**/*.ts"],
    ignores: ["src/cli.ts"],
    rules: { "no-console": "error" },
  },
);
