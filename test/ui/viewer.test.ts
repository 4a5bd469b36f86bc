/**
 * The MCP Apps viewer as a host discovers it, from the built bin over stdio against a sandbox, in both
 * protocol eras (2025-11-25 through the SDK v1 client, 2026-07-28 through the SDK v2 client): which tools
 * name it (read as an ext-apps 2.x host reads them, getToolUiResourceUri), the resource's MIME type and CSP
 * (exactly the service's media origin), and a page that is self-contained, small and the same in both.
 * What it shows in a browser: viewer.browser.test.ts.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { getToolUiResourceUri } from "@modelcontextprotocol/ext-apps/app-bridge";
import { RESOURCE_MIME_TYPE, RESOURCE_URI_META_KEY } from "@modelcontextprotocol/ext-apps/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { VIEWER_URI } from "../../src/ui/viewer.js";
import { LEGACY, MODERN, legacyStdioHost, modernStdioHost, type Era, type EraHost } from "./eras.js";

const MIME = "text/html;profile=mcp-app";
const EXPECTED_CSP = () => ({ resourceDomains: [new URL(sandbox.baseUrl).origin], connectDomains: [] });

let sandbox: SandboxHandle;
let root: string;
const hosts = {} as Record<Era, EraHost>;
/** The page as each era's resources/read returned it. */
const pages = {} as Record<Era, string>;

beforeAll(async () => {
  sandbox = await startSandbox();
  root = await mkdtemp(path.join(tmpdir(), "generation-mcp-viewer-"));
  const env = {
    HOME: root,
    GENERATION_API_KEY: sandbox.keys.paid,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_STATE_DIR: path.join(root, "state"),
  };
  [hosts[LEGACY], hosts[MODERN]] = await Promise.all([legacyStdioHost(env), modernStdioHost(env)]);
}, 30_000);

afterAll(async () => {
  await Promise.all(Object.values(hosts).map((host) => host.close()));
  await sandbox?.close();
  await rm(root, { recursive: true, force: true });
});

it("is what the ext-apps 2.x constants say: the MIME type and the flat key", () => {
  expect(RESOURCE_MIME_TYPE).toBe(MIME);
  expect(RESOURCE_URI_META_KEY).toBe("ui/resourceUri");
});

describe.each([LEGACY, MODERN] as const)("the MCP Apps viewer resource, %s", (era) => {
  const host = () => hosts[era];

  it("runs on a connection of that revision", () => {
    expect(host().protocolVersion).toBe(era);
  });

  it("is named by generate_video, get_status and generate_image only, in both _meta keys", async () => {
    const { tools } = await host().listTools();
    const withViewer = tools.filter((tool) => getToolUiResourceUri(tool) === VIEWER_URI);
    expect(withViewer.map((tool) => tool.name).sort()).toEqual([
      "generate_image",
      "generate_video",
      "get_status",
    ]);
    expect(tools.filter((tool) => tool._meta !== undefined)).toHaveLength(3);
    for (const tool of withViewer) {
      expect(tool._meta).toEqual({ ui: { resourceUri: VIEWER_URI }, [RESOURCE_URI_META_KEY]: VIEWER_URI });
    }
  });

  it("is listed as one ui:// resource of the MCP Apps MIME type, its CSP the service's origin", async () => {
    expect(host().resourcesCapability()).toEqual({});
    const { resources } = await host().listResources();
    expect(resources).toEqual([
      expect.objectContaining({ uri: VIEWER_URI, mimeType: MIME, _meta: { ui: expect.anything() } }),
    ]);
    expect((resources[0]?._meta?.["ui"] as { csp: unknown }).csp).toEqual(EXPECTED_CSP());
    expect((await host().listResourceTemplates()).resourceTemplates).toEqual([]);
  });

  it("reads as one self-contained, small HTML page whose CSP allows exactly the media origin", async () => {
    const { contents } = await host().readResource(VIEWER_URI);
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
    pages[era] = page.text;
  });

  it("answers an unknown resource with -32602, naming it (SEP-2164, as the SDK v2 answers it in every revision)", async () => {
    const error = (await host()
      .readResource("ui://generation-mcp/nope.html")
      .catch((e: unknown) => e)) as { code?: unknown; message?: unknown };
    expect(error).toBeInstanceOf(Error);
    expect(error.code).toBe(-32602);
    expect(error.message).toContain("Resource not found: ui://generation-mcp/nope.html");
  });
});

it("is the same page in both eras", () => {
  expect(pages[LEGACY]).toBeDefined();
  expect(pages[MODERN]).toBe(pages[LEGACY]);
});
