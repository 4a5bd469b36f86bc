/**
 * A small token issuer of the tests' own, on 127.0.0.1, built with jose: it serves an OpenID discovery
 * document and a JWKS, and signs access tokens with whatever the test asks (another key, another `kid`,
 * claims left out or shifted in time, a header of any size). Unlike oidc-provider (test/helpers/oidc.ts)
 * it goes through no login: it exists to make tokens the server must refuse, and to misbehave as an issuer
 * does: its keys rotate, it can be stopped and started again on the same port, answer slowly, or answer 500.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type CryptoKey, type JWK } from "jose";

export interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
}

/** How the issuer answers: normally, after `slowMs` (longer than a client's timeout), or HTTP 500. */
export type IssuerFault = "slow" | "error" | undefined;

export interface SignOptions {
  /** Default: the current key. */
  key?: SigningKey;
  /** The `kid` the header names (default: the key's own). */
  kid?: string;
  /** Extra protected header members (a huge one, another `typ` ...). */
  header?: Record<string, unknown>;
}

export interface JwksIssuer {
  /** `http://127.0.0.1:<port>` */
  issuer: string;
  port: number;
  /** The key tokens are signed with; `published` are the keys the JWKS lists. */
  current: SigningKey;
  published: SigningKey[];
  fault: IssuerFault;
  /** Paths asked of the issuer, in order (to see when the server fetched the keys). */
  requests: string[];
  /** The claims of a token for `sub` that this server should accept, with `overrides` applied (undefined drops). */
  claims(overrides?: Record<string, unknown>): Record<string, unknown>;
  /** A signed JWT with exactly `claims`. */
  sign(claims: Record<string, unknown>, options?: SignOptions): Promise<string>;
  /** A key the issuer does not publish. */
  newKey(kid?: string): Promise<SigningKey>;
  /** A new key is published and signs from now on; the previous one stays published until `retire`. */
  rotate(): Promise<SigningKey>;
  retire(kid: string): void;
  /** The current key's public key as PEM (what an algorithm-confusion attacker would use as an HMAC secret). */
  publicPem(): Promise<string>;
  stop(): Promise<void>;
  /** Starts again on the same port. */
  start(): Promise<void>;
}

const SLOW_MS = 8000;
let keyCount = 0;

async function makeKey(kid = `key-${++keyCount}`): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair("RS256", { extractable: true });
  return { kid, privateKey, publicKey };
}

/** Starts the issuer; tokens are for `audience` unless a test says otherwise. */
export async function startJwksIssuer(options: { audience: string; port?: number }): Promise<JwksIssuer> {
  let server: Server | undefined;
  let port = options.port ?? 0;
  const first = await makeKey();

  const answer = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    state.requests.push(path);
    if (state.fault === "slow") await new Promise((resolve) => setTimeout(resolve, SLOW_MS));
    if (res.destroyed) return;
    if (state.fault === "error") {
      res.writeHead(500, { "content-type": "text/plain" }).end("internal error");
      return;
    }
    if (path === "/.well-known/openid-configuration") {
      return send(res, {
        issuer: state.issuer,
        jwks_uri: `${state.issuer}/jwks`,
        token_endpoint: `${state.issuer}/token`,
        response_types_supported: ["code"],
        id_token_signing_alg_values_supported: ["RS256"],
      });
    }
    if (path === "/jwks") {
      const keys: JWK[] = await Promise.all(
        state.published.map(async (key) => ({
          ...(await exportJWK(key.publicKey)),
          kid: key.kid,
          alg: "RS256",
          use: "sig",
        })),
      );
      return send(res, { keys });
    }
    res.writeHead(404).end();
  };

  const listen = async (): Promise<void> => {
    server = createServer((req, res) => void answer(req, res).catch(() => res.destroy()));
    await new Promise<void>((resolve, reject) => {
      server?.once("error", reject);
      server?.listen(port, "127.0.0.1", () => resolve());
    });
    port = (server.address() as AddressInfo).port;
  };
  await listen();

  const state: JwksIssuer = {
    issuer: `http://127.0.0.1:${port}`,
    port,
    current: first,
    published: [first],
    fault: undefined,
    requests: [],
    claims(overrides = {}) {
      const now = Math.floor(Date.now() / 1000);
      const claims: Record<string, unknown> = {
        iss: state.issuer,
        aud: options.audience,
        sub: "alice",
        scope: "generation:read generation:create",
        iat: now,
        exp: now + 300,
        ...overrides,
      };
      for (const [name, value] of Object.entries(claims)) if (value === undefined) delete claims[name];
      return claims;
    },
    async sign(claims, signOptions = {}) {
      const key = signOptions.key ?? state.current;
      return new SignJWT(claims)
        .setProtectedHeader({
          alg: "RS256",
          typ: "at+jwt",
          kid: signOptions.kid ?? key.kid,
          ...signOptions.header,
        })
        .sign(key.privateKey);
    },
    newKey: makeKey,
    async rotate() {
      const next = await makeKey();
      state.published.push(next);
      state.current = next;
      return next;
    },
    retire(kid) {
      state.published = state.published.filter((key) => key.kid !== kid);
    },
    publicPem: () => exportSPKI(state.current.publicKey),
    async stop() {
      const closing = server;
      server = undefined;
      if (closing === undefined) return;
      closing.closeAllConnections();
      await new Promise<void>((resolve) => closing.close(() => resolve()));
    },
    async start() {
      if (server === undefined) await listen();
    },
  };
  return state;
}

function send(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" });
  res.end(JSON.stringify(body));
}
