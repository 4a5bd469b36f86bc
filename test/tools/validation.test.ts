/**
 * Every input rule of CONTRACT.md is refused with `validation_error` before any request leaves: the
 * sandbox's request log proves that nothing was sent (so no credits and no rate budget were spent).
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { VALIDATION_CASES, fileCases, fixturePaths, prepareFileFixtures } from "../helpers/contract-cases.js";
import { startHarness, type Harness } from "../helpers/harness.js";

// Known before the tests are collected, so the cases can name the files.
const root = mkdtempSync(path.join(tmpdir(), "generation-mcp-validation-"));
const files = fixturePaths(path.join(root, "images"));
let h: Harness;

beforeAll(async () => {
  mkdirSync(files.imagesDir);
  await prepareFileFixtures(files);
  h = await startHarness({ config: { allowedDirs: [files.imagesDir] } });
});

afterAll(async () => {
  await h.close();
  rmSync(root, { recursive: true, force: true });
});

describe("input rules are enforced before any request", () => {
  it.each(VALIDATION_CASES)("%s: %s", async (tool, _title, args, pattern) => {
    const mark = h.sandbox.requests.length;
    const { result, text } = await h.call(tool, args);
    expect(result.isError).toBe(true);
    expect(text.startsWith("validation_error: ")).toBe(true);
    expect(text).toMatch(pattern);
    expect(h.requestsSince(mark)).toEqual([]);
  });
});

describe("local files are checked before any request", () => {
  it.each(fileCases(files))("generate_video refuses %s", async (_title, args, pattern) => {
    const mark = h.sandbox.requests.length;
    const { result, text } = await h.call("generate_video", args);
    expect(result.isError).toBe(true);
    expect(text.startsWith("validation_error: ")).toBe(true);
    expect(text).toMatch(pattern);
    expect(h.requestsSince(mark)).toEqual([]);
  });

  it("upload_image and generate_image apply the same checks", async () => {
    const mark = h.sandbox.requests.length;
    const upload = await h.call("upload_image", { path: files.outside });
    const image = await h.call("generate_image", { prompt: "a", image_paths: [files.png, files.textAsPng] });
    expect(upload.text).toMatch(/^validation_error: path: /);
    expect(image.text).toMatch(/^validation_error: image_paths\[1\]: /);
    expect(h.requestsSince(mark)).toEqual([]);
  });

  it("a file inside the allowed folder passes the checks (dry run sends nothing)", async () => {
    const mark = h.sandbox.requests.length;
    const { result, structured } = await h.call("generate_video", {
      prompt: "a cat",
      image_path: files.png,
      dry_run: true,
    });
    expect(result.isError).toBeFalsy();
    expect(structured?.["request"]).toMatchObject({ generation_type: "image_to_video" });
    expect(h.requestsSince(mark)).toEqual([]);
  });
});

describe("malformed tools/call requests still get a validation_error result", () => {
  it.each([
    ["arguments as an array", { name: "get_credits", arguments: [1, 2] }, /arguments: /],
    ["arguments as a string", { name: "list_videos", arguments: "page=1" }, /arguments: /],
    ["a name that is not a string", { name: 42, arguments: {} }, /Unknown tool/],
  ])("%s", async (_title, params, pattern) => {
    const mark = h.sandbox.requests.length;
    const result = await h.client.request({ method: "tools/call", params } as never, CallToolResultSchema);
    const text = result.content.map((part) => (part.type === "text" ? part.text : "")).join("");
    expect(result.isError).toBe(true);
    expect(text).toMatch(/^validation_error: /);
    expect(text).toMatch(pattern);
    expect(h.requestsSince(mark)).toEqual([]);
  });

  it("an unknown method is still a JSON-RPC error", async () => {
    await expect(h.client.request({ method: "tools/nope" } as never, CallToolResultSchema)).rejects.toThrow(
      /Method not found/,
    );
  });
});
