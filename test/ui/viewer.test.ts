/**
 * The MCP Apps viewer as a host discovers it, from the built bin over stdio against a sandbox: which tools
 * name it, the resource's MIME type and CSP (exactly the service's media origin), and a page that is
 * self-contained and small. What it shows in a browser: viewer.browser.test.ts.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { VIEWER_URI } from "../../src/ui/viewer.js";
import { connectStdio, type StdioSession } from "../helpers/stdio.js";

const MIME = "text/html;profile=mcp-app";
const EXPECTED_CSP = () => ({ resourceDomains: [new URL(sandbox.baseUrl).origin], connectDomains: [] });

let sandbox: SandboxHandle;
let session: StdioSession;
let root: string;

beforeAll(async () => {
  sandbox = await startSandbox();
  root = await mkdtemp(path.join(tmpdir(), "generation-mcp-viewer-"));
  session = await connectStdio([], {
    HOME: root,
    GENERATION_API_KEY: sandbox.keys.paid,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_STATE_DIR: path.join(root, "state"),
  });
});

afterAll(async () => {
  await session?.close();
  await sandbox?.close();
  await rm(root, { recursive: true, force: true });
});

describe("the MCP Apps viewer resource", () => {
  it("is named by generate_video, get_status and generate_image only", async () => {
    const { tools } = await session.client.listTools();
    const withViewer = tools.filter((tool) => {
      const ui = tool._meta?.["ui"] as { resourceUri?: string } | undefined;
      return ui?.resourceUri === VIEWER_URI;
    });
    expect(withViewer.map((tool) => tool.name).sort()).toEqual([
      "generate_image",
      "generate_video",
      "get_status",
    ]);
    expect(tools.filter((tool) => tool._meta !== undefined)).toHaveLength(3);
  });

  it("is listed as one ui:// resource of the MCP Apps MIME type, its CSP the service's origin", async () => {
    expect(session.client.getServerCapabilities()?.resources).toEqual({});
    const { resources } = await session.client.listResources();
    expect(resources).toEqual([
      expect.objectContaining({ uri: VIEWER_URI, mimeType: MIME, _meta: { ui: expect.anything() } }),
    ]);
    expect((resources[0]?._meta?.["ui"] as { csp: unknown }).csp).toEqual(EXPECTED_CSP());
    expect((await session.client.listResourceTemplates()).resourceTemplates).toEqual([]);
  });

  it("reads as one self-contained, small HTML page whose CSP allows exactly the media origin", async () => {
    const { contents } = await session.client.readResource({ uri: VIEWER_URI });
    expect(contents).toHaveLength(1);
    const page = contents[0] as {
      uri: string;
      mimeType: string;
      text: string;
      _meta: Record<string, unknown>;
    };
    expect(page.uri).toBe(VIEWER_URI);
    expect(page.mimeType).toBe(MIME);
    expect((page._meta["ui"] as { csp: unknown }).csp).toEqual(EXPECTED_CSP());
    expect(page.text).toMatch(/^<!doctype html>/);
    // Everything is inline: no script, style or font fetched from anywhere, no address at all in the page.
    expect(page.text).not.toMatch(/<script[^>]*\ssrc=|<link\b|@import|https?:\/\//i);
    expect(page.text).toContain("ui/initialize");
    expect(Buffer.byteLength(page.text)).toBeLessThan(12 * 1024);
  });

  it("answers an unknown resource with -32602, naming it (SEP-2164, as the SDK v2 answers it in every revision)", async () => {
    const error = await session.client.readResource({ uri: "ui://generation-mcp/nope.html" }).catch((e) => e);
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(-32602);
    expect((error as McpError).message).toContain("Resource not found: ui://generation-mcp/nope.html");
  });
});
