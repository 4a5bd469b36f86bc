/**
 * Previews reach every way a result leaves the server: here the built bin over Streamable HTTP, with
 * generate_image run as an MCP task, so the preview arrives through tasks/result.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  type ImageContent,
} from "@modelcontextprotocol/sdk/types.js";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { connectHttp, startHttpBin, type HttpServerProcess } from "../helpers/http.js";

let sandbox: SandboxHandle;
let server: HttpServerProcess;
let client: Client;
let dir: string;

beforeAll(async () => {
  sandbox = await startSandbox();
  dir = await mkdtemp(path.join(tmpdir(), "generation-mcp-previews-http-"));
  server = await startHttpBin([], {
    HOME: dir,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_STATE_DIR: path.join(dir, "state"),
    GENERATION_RESOURCE_LINKS: "on",
  });
  client = await connectHttp(server.url, sandbox.keys.paid);
});

afterAll(async () => {
  await client?.close();
  await server?.stop();
  await sandbox?.close();
  await rm(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("previews over Streamable HTTP, as an MCP task's result", () => {
  it("carries the preview and the link in tasks/result", async () => {
    const { task } = await client.request(
      {
        method: "tools/call",
        params: {
          name: "generate_image",
          arguments: { prompt: "a task with a preview", resolution: "2k" },
          task: {},
        },
      },
      CreateTaskResultSchema,
    );
    for (let i = 0; i < 200; i++) {
      if ((await client.experimental.tasks.getTask(task.taskId)).status !== "working") break;
      await sleep(50);
    }
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError).toBeFalsy();
    const preview = result.content.find((item): item is ImageContent => item.type === "image");
    const metadata = await sharp(Buffer.from(preview?.data ?? "", "base64")).metadata();
    expect([metadata.format, metadata.width, metadata.height]).toEqual(["jpeg", 1024, 1024]);
    const url = (result.structuredContent?.["image_urls"] as string[])[0];
    expect(result.content).toContainEqual(expect.objectContaining({ type: "resource_link", uri: url }));
  }, 60_000);
});
