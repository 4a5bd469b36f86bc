/**
 * The built bin in `--http` OAuth mode (GENERATION_OAUTH_ISSUER, GENERATION_PUBLIC_URL) in front of a
 * separately started sandbox, with the sandbox's paid key as the one service key the server holds.
 */
import path from "node:path";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { startHttpBin, type HttpServerProcess } from "./http.js";
import { freePort } from "./redis.js";

export interface OAuthBin {
  server: HttpServerProcess;
  /** `http://127.0.0.1:<port>/mcp`: the protected resource, and the default audience of its tokens. */
  resource: string;
  publicUrl: string;
}

/** Starts a server on a port chosen first, so its public URL (the resource) can be known to the issuer first. */
export async function startOAuthBin(options: {
  sandbox: SandboxHandle;
  issuer: string;
  dir: string;
  port?: number;
  /** Default `http://127.0.0.1:<port>`; replicas behind one address share theirs. */
  publicUrl?: string;
  env?: Record<string, string>;
}): Promise<OAuthBin> {
  const port = options.port ?? (await freePort());
  const publicUrl = options.publicUrl ?? `http://127.0.0.1:${port}`;
  const server = await startHttpBin(["--port", String(port)], {
    HOME: options.dir,
    GENERATION_BASE_URL: options.sandbox.baseUrl,
    GENERATION_API_KEY: options.sandbox.keys.paid,
    GENERATION_STATE_DIR: path.join(options.dir, "state"),
    GENERATION_POLL_INTERVAL_MS: "100",
    GENERATION_OAUTH_ISSUER: options.issuer,
    GENERATION_PUBLIC_URL: publicUrl,
    ...options.env,
  });
  return { server, resource: `${publicUrl}/mcp`, publicUrl };
}

/** The status of the server's readiness probe. */
export async function readyz(bin: OAuthBin): Promise<number> {
  return (await fetch(new URL("/readyz", bin.server.url))).status;
}
