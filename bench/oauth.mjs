/**
 * What checking an OAuth access token adds to a request (issue 20: p50 < 0.2 ms with the issuer's keys
 * cached). Measured in process on the built gate (dist/auth/oauth.js, as src/cli.ts loads it):
 * `createOAuthGate(...).authenticate("Bearer <jwt>")` against a real issuer on 127.0.0.1 (discovery document
 * and JWKS served with jose's keys, fetched once at start), interleaved call by call with two baselines of
 * the same run: an empty async function (the floor: what an awaited check costs at all) and the gateway
 * token check (`authFor` in gateway mode: a SHA-256 and a constant-time compare, the other shared-key mode).
 *
 * Run alone: `node bench/oauth.mjs` (after `npm run build`); `npm run bench` runs it as section "oauth".
 */
import { createServer } from "node:http";
import { pathToFileURL } from "node:url";
import { SignJWT, exportJWK, generateKeyPair } from "jose";
import { createOAuthGate } from "../dist/auth/oauth.js";
import { authFor } from "../dist/auth/bearer.js";
import { digestOf } from "../dist/auth/caller.js";
import { Logger } from "../dist/logger.js";
import { now, quantile, summary } from "./lib.mjs";

const PUBLIC_URL = "https://mcp.example.test";

/** A discovery document and a JWKS on 127.0.0.1, and tokens signed with its key (RS256, as most issuers). */
async function startIssuer() {
  const { privateKey, publicKey } = await generateKeyPair("RS256");
  const jwk = { ...(await exportJWK(publicKey)), kid: "bench-key", alg: "RS256", use: "sig" };
  let issuer = "";
  const server = createServer((req, res) => {
    const body =
      req.url === "/.well-known/openid-configuration"
        ? { issuer, jwks_uri: `${issuer}/jwks` }
        : req.url === "/jwks"
          ? { keys: [jwk] }
          : undefined;
    if (body === undefined) return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  issuer = `http://127.0.0.1:${server.address().port}`;
  const nowS = Math.floor(Date.now() / 1000);
  const token = await new SignJWT({
    scope: "generation:read generation:create",
    client_id: "bench-client",
  })
    .setProtectedHeader({ alg: "RS256", typ: "at+jwt", kid: "bench-key" })
    .setIssuer(issuer)
    .setAudience(`${PUBLIC_URL}/mcp`)
    .setSubject("bench-person")
    .setIssuedAt(nowS)
    .setExpirationTime(nowS + 3600)
    .sign(privateKey);
  return { issuer, token, close: () => new Promise((resolve) => server.close(resolve)) };
}

/**
 * `rounds` rounds of `iterations` interleaved calls (empty, gateway, oauth) after `warmup` of each; per
 * round the p50 and p95 of each, and the OAuth check's added p50 over the empty baseline.
 */
export async function oauthBench({ rounds = 5, iterations = 20_000, warmup = 5_000, log = () => {} } = {}) {
  const issuer = await startIssuer();
  const resource = `${PUBLIC_URL}/mcp`;
  const gate = await createOAuthGate(
    {
      issuer: issuer.issuer,
      publicUrl: PUBLIC_URL,
      resource,
      audience: resource,
      metadataUrl: `${PUBLIC_URL}/.well-known/oauth-protected-resource/mcp`,
    },
    "service-key-held-by-the-server",
    new Logger("error"),
  );
  try {
    const header = `Bearer ${issuer.token}`;
    const gatewayToken = "a-gateway-token-of-32-characters";
    const { authenticate: gateway } = await authFor(
      { tokenHashes: [digestOf(gatewayToken)] },
      "service-key-held-by-the-server",
      new Logger("error"),
    );
    const gatewayHeader = `Bearer ${gatewayToken}`;
    const sides = {
      empty: async () => ({ id: "x" }),
      gateway: async () => gateway(gatewayHeader),
      oauth: () => gate.authenticate(header),
    };
    const first = await sides.oauth();
    // A Caller (src/auth/caller.ts) with the token's grants, not a Refusal.
    if (!("grants" in first) || first.grants === undefined) {
      throw new Error(`the bench token was not accepted: ${JSON.stringify(first)}`);
    }
    for (let i = 0; i < warmup; i++) for (const run of Object.values(sides)) await run();
    const perRound = [];
    for (let r = 0; r < rounds; r++) {
      const times = { empty: [], gateway: [], oauth: [] };
      for (let i = 0; i < iterations; i++) {
        for (const [name, run] of Object.entries(sides)) {
          const t = now();
          await run();
          times[name].push(now() - t);
        }
      }
      const stats = Object.fromEntries(
        Object.entries(times).map(([name, values]) => [
          name,
          { p50: quantile(values, 0.5), p95: quantile(values, 0.95) },
        ]),
      );
      perRound.push({ ...stats, addedP50: stats.oauth.p50 - stats.empty.p50 });
      log(`  oauth round ${r + 1}/${rounds}: added p50 ${(stats.oauth.p50 - stats.empty.p50).toFixed(4)} ms`);
    }
    const pick = (get) => summary(perRound.map(get));
    return {
      measured:
        "createOAuthGate(...).authenticate('Bearer <RS256 JWT>') from dist/auth/oauth.js, keys cached (fetched once from a JWKS on 127.0.0.1), interleaved call by call with an empty async function and the gateway token check (authFor in dist/auth/bearer.js)",
      iterations,
      warmup,
      addedP50Ms: pick((x) => x.addedP50),
      oauthP50Ms: pick((x) => x.oauth.p50),
      oauthP95Ms: pick((x) => x.oauth.p95),
      gatewayP50Ms: pick((x) => x.gateway.p50),
      gatewayP95Ms: pick((x) => x.gateway.p95),
      emptyP50Ms: pick((x) => x.empty.p50),
      emptyP95Ms: pick((x) => x.empty.p95),
    };
  } finally {
    gate.close();
    await issuer.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const quick = process.env.BENCH_QUICK === "1";
  const result = await oauthBench({
    rounds: quick ? 2 : 5,
    iterations: quick ? 5_000 : 20_000,
    log: (line) => process.stderr.write(`${line}\n`),
  });
  const ms = (s) => `${s.median.toFixed(4)} ms (${s.min.toFixed(4)} – ${s.max.toFixed(4)})`;
  for (const [name, value] of Object.entries(result)) {
    if (typeof value === "object") process.stdout.write(`${name.padEnd(14)} ${ms(value)}\n`);
  }
}
