/**
 * Previews and media links through the built bin over stdio, in sandbox mode, with the flags that mirror
 * GENERATION_PREVIEW_MAX_SIDE and GENERATION_RESOURCE_LINKS; sharp comes from the project's node_modules.
 */
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { CallToolResult, ImageContent } from "@modelcontextprotocol/sdk/types.js";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectStdio, type StdioSession } from "../helpers/stdio.js";

let session: StdioSession;
let root: string;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "generation-mcp-previews-"));
  session = await connectStdio(["--sandbox", "--preview-max-side", "512", "--resource-links", "on"], {
    HOME: root,
    GENERATION_STATE_DIR: path.join(root, "state"),
  });
});

afterAll(async () => {
  await session?.close();
  await rm(root, { recursive: true, force: true });
});

describe("the bin's previews", () => {
  it("answers generate_image with a decodable preview of the set size and a link to the image", async () => {
    const result = (await session.client.callTool(
      { name: "generate_image", arguments: { prompt: "a red kite", resolution: "2k", aspect_ratio: "4:3" } },
      undefined,
      { timeout: 60_000 },
    )) as CallToolResult;
    expect(result.isError, JSON.stringify(result.content[0])).toBeFalsy();
    const [preview] = result.content.filter((item): item is ImageContent => item.type === "image");
    expect(preview?.mimeType).toBe("image/jpeg");
    const metadata = await sharp(Buffer.from(preview?.data ?? "", "base64")).metadata();
    expect([metadata.format, metadata.width, metadata.height]).toEqual(["jpeg", 512, 384]);
    const url = (result.structuredContent?.["image_urls"] as string[])[0];
    expect(result.content).toContainEqual(expect.objectContaining({ type: "resource_link", uri: url }));
    expect(Buffer.byteLength(JSON.stringify(result))).toBeLessThan(1_000_000);
  }, 90_000);

  it("decodes in a worker process: the server never maps libvips, and a killed worker costs no later preview", async () => {
    const server = session.pid;
    const workers = () =>
      readFileSync(`/proc/${server}/task/${server}/children`, "utf8")
        .trim()
        .split(/\s+/)
        .filter(Boolean)
        .map(Number)
        .filter((pid) => readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("preview-worker.js"));
    const preview = async (prompt: string) => {
      const result = (await session.client.callTool(
        { name: "generate_image", arguments: { prompt, resolution: "1k" } },
        undefined,
        { timeout: 60_000 },
      )) as CallToolResult;
      const image = result.content.find((item): item is ImageContent => item.type === "image");
      expect(image, JSON.stringify(result.content).slice(0, 600)).toBeDefined();
      return image;
    };

    await preview("a green kite");
    const [worker] = workers();
    expect(worker).toEqual(expect.any(Number));
    expect(readFileSync(`/proc/${worker}/maps`, "utf8")).toMatch(/libvips/);
    expect(readFileSync(`/proc/${server}/maps`, "utf8")).not.toMatch(/libvips/);

    process.kill(worker ?? -1, "SIGKILL");
    const until = Date.now() + 5000;
    while (workers().includes(worker ?? -1) && Date.now() < until)
      await new Promise((r) => setTimeout(r, 20));
    await preview("a yellow kite");
    expect(workers()).not.toContain(worker);
    expect(workers()).toHaveLength(1);
  }, 90_000);
});
