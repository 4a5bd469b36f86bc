/**
 * OAuth mode in both protocol eras, with the MCP Apps viewer (issue 20): the built bin in `--http` OAuth
 * mode, trusting a small issuer of the test's own (jwks-issuer.ts). A 2025-11-25 host (SDK v1 client) and a
 * 2026-07-28 host (SDK v2 client pinned to that revision, test/ui/eras.ts) each send the access token as
 * `Authorization: Bearer`, list the tools, run generate_video and read the viewer the tools name. A
 * 2026-07-28 request without a token gets the 401 challenge pointing at the Protected Resource Metadata;
 * a read-only token gets 403 `insufficient_scope` on generate_video in that era too.
 */
import { RESOURCE_MIME_TYPE } from "@modelcontextprotocol/ext-apps/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { callTool, expectTheTools, tempRoot } from "../helpers/http-calls.js";
import { connectHttp } from "../helpers/http.js";
import { startJwksIssuer, type JwksIssuer } from "../helpers/jwks-issuer.js";
import { REVISION, modernHttp } from "../helpers/modern.js";
import { startOAuthBin, type OAuthBin } from "../helpers/oauth-bin.js";
import { freePort } from "../helpers/redis.js";
import { modernHttpHost, type EraHost } from "../ui/eras.js";

let sandbox: SandboxHandle;
let root: Awaited<ReturnType<typeof tempRoot>>;
let issuer: JwksIssuer;
let bin: OAuthBin;
let token: string;

beforeAll(async () => {
  const port = await freePort();
  [sandbox, root, issuer] = await Promise.all([
    startSandbox({
      timings: { queuedMs: 100, processingMs: 300 },
      rateLimit: { limit: 100_000, windowMs: 60_000 },
    }),
    tempRoot("generation-mcp-oauth-eras-"),
    startJwksIssuer({ audience: `http://127.0.0.1:${port}/mcp` }),
  ]);
  bin = await startOAuthBin({ sandbox, issuer: issuer.issuer, dir: root.dir, port });
  token = await issuer.sign(issuer.claims({ sub: "eras" }));
}, 30_000);

afterAll(async () => {
  await bin?.server.stop();
  await Promise.all([issuer?.stop(), sandbox?.close()]);
  await root?.remove();
});

/** The viewer's `ui://` address, as generate_video's `_meta.ui.resourceUri` names it. */
function viewerUri(tools: Array<{ name: string; _meta?: Record<string, unknown> | undefined }>): string {
  const meta = tools.find((tool) => tool.name === "generate_video")?._meta;
  const uri = (meta?.["ui"] as { resourceUri?: unknown } | undefined)?.resourceUri;
  if (typeof uri !== "string") throw new Error(`generate_video names no viewer: ${JSON.stringify(meta)}`);
  expect(uri).toMatch(/^ui:\/\//);
  return uri;
}

const generates = () => sandbox.requests.filter((request) => request.route === "generate").length;

describe("a 2026-07-28 host, signed in", () => {
  let host: EraHost;
  beforeAll(async () => {
    host = await modernHttpHost(bin.server.url, token);
  });
  afterAll(async () => host?.close());

  it("runs the revision, lists the tools, completes generate_video and reads the viewer", async () => {
    expect(host.protocolVersion).toBe(REVISION);
    const { tools } = await host.listTools();
    expectTheTools(tools);
    const result = await host.callTool("generate_video", {
      prompt: "a lighthouse at dusk, 2026 era, signed in",
      duration: 1,
      wait: true,
      timeout_seconds: 30,
    });
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ status: "completed" });

    const uri = viewerUri(tools);
    const { contents } = await host.readResource(uri);
    expect(contents[0]).toMatchObject({ uri, mimeType: RESOURCE_MIME_TYPE });
    expect(String(contents[0]?.["text"])).toMatch(/<html/i);
  });

  it("answers a request without a token with the 401 challenge", async () => {
    const answer = await modernHttp(
      bin.server.url,
      "unused",
      "tools/list",
      {},
      { headers: { authorization: undefined } },
    );
    expect(answer.status).toBe(401);
    const raw = await fetch(bin.server.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": REVISION,
        "mcp-method": "tools/list",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
    });
    expect(raw.status).toBe(401);
    expect(raw.headers.get("www-authenticate")).toBe(
      `Bearer realm="generation-mcp", resource_metadata="${bin.publicUrl}/.well-known/oauth-protected-resource/mcp", scope="generation:read generation:create"`,
    );
  });

  it("gives a read-only token 403 insufficient_scope on generate_video, and reads for it", async () => {
    const reader = await issuer.sign(issuer.claims({ sub: "eras-reader", scope: "generation:read" }));
    const before = generates();
    const refused = await modernHttp(bin.server.url, reader, "tools/call", {
      name: "generate_video",
      arguments: { prompt: "not allowed, 2026 era", duration: 1, wait: false },
    });
    expect(refused.status).toBe(403);
    expect(refused.error?.message).toMatch(/insufficient_scope: this call needs the scope generation:create/);
    expect(generates()).toBe(before);
    const reads = await modernHttp(bin.server.url, reader, "tools/call", {
      name: "get_credits",
      arguments: {},
    });
    expect(reads.status).toBe(200);
    expect(reads.result?.["isError"]).toBeUndefined();
    // The challenge itself, as the 2026-07-28 client reads it for step-up.
    const raw = await fetch(bin.server.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${reader}`,
        "mcp-protocol-version": REVISION,
        "mcp-method": "tools/call",
        "mcp-name": "upload_image",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 2,
        method: "tools/call",
        params: { name: "upload_image", arguments: {} },
      }),
    });
    expect(raw.status).toBe(403);
    const challenge = raw.headers.get("www-authenticate") ?? "";
    expect(challenge).toContain('error="insufficient_scope"');
    expect(challenge).toContain('scope="generation:create"');
  });
});

describe("a 2025-11-25 host, signed in", () => {
  it("lists the tools, completes generate_video and reads the viewer", async () => {
    const client = await connectHttp(bin.server.url, token);
    try {
      const { tools } = await client.listTools();
      const { result, structured } = await callTool(client, "generate_video", {
        prompt: "a lighthouse at dusk, 2025 era, signed in",
        duration: 1,
        wait: true,
        timeout_seconds: 30,
      });
      expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
      expect(structured).toMatchObject({ status: "completed" });
      const uri = viewerUri(tools);
      const { contents } = await client.readResource({ uri });
      expect(contents[0]).toMatchObject({ uri, mimeType: RESOURCE_MIME_TYPE });
    } finally {
      await client.close();
    }
  });

  it("keeps both eras one caller: the same subject lists both videos", async () => {
    const answer = await modernHttp(bin.server.url, token, "tools/call", {
      name: "list_videos",
      arguments: {},
    });
    const items = (answer.result?.["structuredContent"] as { items: unknown[] } | undefined)?.items;
    expect(items).toHaveLength(2);
  });
});
