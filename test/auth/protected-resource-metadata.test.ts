/**
 * Where the Protected Resource Metadata is (issue 26): the built bin in `--http` OAuth mode with a public URL
 * that has a path, `http://127.0.0.1:<port>/gen`, as behind a reverse proxy at `/gen`. The resource is then
 * `.../gen/mcp`, and RFC 9728 §3.1 puts its metadata at `/.well-known/oauth-protected-resource/gen/mcp` (the
 * well-known prefix between the host and the resource's path): the 401 challenge points there, and the
 * server answers there. A proxy that forwards that path as it is reaches it; one that strips `/gen` after
 * the prefix sends `/.well-known/oauth-protected-resource/mcp`, answered too, as is the root form. Nothing
 * outside the well-known paths answers.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { tempRoot } from "../helpers/http-calls.js";
import { startJwksIssuer, type JwksIssuer } from "../helpers/jwks-issuer.js";
import { startOAuthBin, type OAuthBin } from "../helpers/oauth-bin.js";
import { rpc } from "../helpers/red-team.js";
import { freePort } from "../helpers/redis.js";

let sandbox: SandboxHandle;
let root: Awaited<ReturnType<typeof tempRoot>>;
let issuer: JwksIssuer;
let bin: OAuthBin;
let origin: string;

beforeAll(async () => {
  const port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  [sandbox, root, issuer] = await Promise.all([
    startSandbox({ rateLimit: { limit: 100_000, windowMs: 60_000 } }),
    tempRoot("generation-mcp-oauth-prm-"),
    startJwksIssuer({ audience: `${origin}/gen/mcp` }),
  ]);
  bin = await startOAuthBin({
    sandbox,
    issuer: issuer.issuer,
    dir: root.dir,
    port,
    publicUrl: `${origin}/gen`,
  });
}, 30_000);

afterAll(async () => {
  await bin?.server.stop();
  await Promise.all([issuer?.stop(), sandbox?.close()]);
  await root?.remove();
});

/** The metadata document a path answers with, or its status when it answers none. */
async function metadataAt(path: string): Promise<Record<string, unknown> | number> {
  const answer = await fetch(`${origin}${path}`);
  if (answer.status !== 200) return answer.status;
  expect(answer.headers.get("access-control-allow-origin")).toBe("*");
  return (await answer.json()) as Record<string, unknown>;
}

describe("a public URL with a path (a proxy at /gen)", () => {
  it("points the challenge at /.well-known/oauth-protected-resource/gen/mcp, and serves the metadata there", async () => {
    const refused = await rpc(`${origin}/mcp`, undefined, "tools/list");
    expect(refused.status).toBe(401);
    const challenge = refused.headers.get("www-authenticate") ?? "";
    const advertised = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
    expect(advertised).toBe(`${origin}/.well-known/oauth-protected-resource/gen/mcp`);

    const answer = await fetch(advertised ?? "");
    expect(answer.status).toBe(200);
    const metadata = (await answer.json()) as Record<string, unknown>;
    expect(metadata).toMatchObject({
      resource: `${origin}/gen/mcp`,
      authorization_servers: [issuer.issuer],
      scopes_supported: ["generation:read", "generation:create"],
    });
  });

  it("answers the forms a prefix-stripping proxy forwards, and the root form, with the same document", async () => {
    const expected = await metadataAt("/.well-known/oauth-protected-resource/gen/mcp");
    expect(typeof expected).toBe("object");
    for (const path of [
      "/.well-known/oauth-protected-resource/mcp",
      "/.well-known/oauth-protected-resource",
    ]) {
      expect(await metadataAt(path), path).toEqual(expected);
    }
  });

  it("answers nothing outside the well-known paths, nor for another resource", async () => {
    for (const path of [
      "/gen/.well-known/oauth-protected-resource/mcp",
      "/gen/.well-known/oauth-protected-resource",
      "/.well-known/oauth-protected-resource/other/mcp",
      "/.well-known/oauth-protected-resource/gen",
    ]) {
      expect(await metadataAt(path), path).toBe(404);
    }
  });

  it("serves a token for the resource .../gen/mcp at /mcp (the proxy strips /gen)", async () => {
    const token = await issuer.sign(issuer.claims());
    const answer = await rpc(`${origin}/mcp`, token, "tools/call", { name: "get_credits", arguments: {} });
    expect(answer.status, answer.text).toBe(200);
  });
});
