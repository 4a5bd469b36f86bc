/**
 * Clients that fill forms send every field the form shows: MCPJam Inspector sends `image_paths: []`,
 * `images: []` and empty strings for the fields left alone, MCP Inspector similar, some `null`. CONTRACT:
 * an optional input given so counts as not given, so such a first call starts a task; a required input keeps
 * its rules. Against the built bin over stdio, with the SDK's client and 2025-11-25 tasks, as such an
 * inspector calls it. The schemas they render from: tool-schemas.test.ts.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  type CallToolResult,
} from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { connectStdio } from "../helpers/stdio.js";

/** generate_video as MCPJam Inspector's form sends it with only the prompt typed in. */
const VIDEO_FORM = {
  model: "",
  generation_type: "",
  image_url: "",
  image_path: "",
  aspect_ratio: "",
  duration: null,
  resolution: "",
  timeout_seconds: null,
  download: false,
  dry_run: false,
  allow_duplicate: false,
};
/** generate_image as such a form sends it. */
const IMAGE_FORM = {
  model: "",
  resolution: "",
  aspect_ratio: "",
  output_format: "",
  images: [],
  image_paths: [],
  download: null,
  dry_run: false,
  allow_duplicate: false,
};

let sandbox: SandboxHandle;
let dir: string;
let client: Client;

beforeAll(async () => {
  sandbox = await startSandbox({ timings: { queuedMs: 100, processingMs: 400 } });
  dir = await mkdtemp(path.join(tmpdir(), "generation-mcp-forms-"));
  const env = {
    HOME: dir,
    GENERATION_API_KEY: sandbox.keys.paid,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_STATE_DIR: path.join(dir, "state"),
    GENERATION_POLL_INTERVAL_MS: "100",
  };
  ({ client } = await connectStdio([], env, { tasks: {} }));
});

afterAll(async () => {
  await client?.close();
  await sandbox?.close();
  await rm(dir, { recursive: true, force: true });
});

const textOf = (result: CallToolResult) =>
  result.content.map((part) => (part.type === "text" ? part.text : "")).join("\n");
const started = (route: string) => sandbox.requests.filter((r) => r.route === route).length;

/** A task-augmented call, then its result once the task is over. */
async function asTask(name: string, args: Record<string, unknown>) {
  const { task } = await client.request(
    { method: "tools/call", params: { name, arguments: args, task: {} } },
    CreateTaskResultSchema,
  );
  const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
  return { task, result };
}

describe("a form's empty fields count as not given", () => {
  it("generate_video with the form's defaults starts a task, and the service gets no empty field", async () => {
    const before = started("generate");
    const { task, result } = await asTask("generate_video", { prompt: "a kite from a form", ...VIDEO_FORM });
    // A refused call is a task too, but one that is over at once: this one was started at the service.
    expect(task.status).toBe("working");
    expect(started("generate")).toBe(before + 1);
    expect(result.isError ?? false, textOf(result)).toBe(false);
    expect(result.structuredContent).toMatchObject({ status: "completed", video_url: expect.any(String) });

    // What was sent: the defaults, as if the fields had not been there.
    const dry = await client.callTool({
      name: "generate_video",
      arguments: { prompt: "a kite from a form", ...VIDEO_FORM, dry_run: true },
    });
    expect(dry.structuredContent).toMatchObject({
      dry_run: true,
      request: { generation_type: "text_to_video", aspect_ratio: "16:9", duration: 5 },
    });
    const request = (dry.structuredContent as { request: Record<string, unknown> }).request;
    expect(Object.keys(request).sort()).toEqual(["aspect_ratio", "duration", "generation_type", "prompt"]);
  });

  it("generate_image with `images: []`, `image_paths: []`, empty strings and a null makes the image", async () => {
    const before = started("generate-image");
    const { result } = await asTask("generate_image", { prompt: "a fox from a form", ...IMAGE_FORM });
    expect(result.isError ?? false, textOf(result)).toBe(false);
    expect(started("generate-image")).toBe(before + 1);
    expect((result.structuredContent as { image_urls: string[] }).image_urls).toHaveLength(1);
    // Nothing uploaded for the empty image_paths, and no reference image sent for the empty images.
    expect(sandbox.requests.filter((r) => r.route === "upload")).toEqual([]);
    expect(result.structuredContent).toMatchObject({ result: { output_format: "png", model: "image-2" } });
  });

  it("a required input keeps its rules: an empty or null prompt, an empty video_id are refused", async () => {
    const before = sandbox.requests.length;
    for (const [name, args, expected] of [
      ["generate_video", { prompt: "", ...VIDEO_FORM }, /^validation_error: .*prompt: must not be empty/],
      ["generate_image", { prompt: null, ...IMAGE_FORM }, /^validation_error: .*prompt: /],
      ["get_status", { video_id: "", wait: false }, /^validation_error: .*video_id: must not be empty/],
    ] as const) {
      const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
      expect(result.isError, name).toBe(true);
      expect(textOf(result)).toMatch(expected);
    }
    expect(sandbox.requests.length).toBe(before);
  });

  it("a resolution with the default model is refused in one line that names the fix", async () => {
    const result = (await client.callTool({
      name: "generate_video",
      arguments: { prompt: "a kite", ...VIDEO_FORM, resolution: "480p" },
    })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(textOf(result).split("\n")[0]).toBe(
      "validation_error: Invalid arguments for generate_video: resolution: is only accepted with model " +
        "vendor-video-2-0 (set it, or leave resolution out).",
    );
  });
});
