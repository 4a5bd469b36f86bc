/**
 * A real OAuth 2.1 / OpenID authorization server for the tests: oidc-provider on 127.0.0.1, issuer
 * `http://127.0.0.1:<port>`, configured the way the MCP authorization spec expects of one.
 *
 * - Dynamic client registration (RFC 7591) is open, public clients included (`token_endpoint_auth_method`
 *   `none`); PKCE is required of every client and only S256 exists.
 * - Resource indicators (RFC 8707): a token requested for one of `resources` is a JWT access token (RFC 9068,
 *   signed RS256 with a key made for this run) whose `aud` is that resource and whose `scope` is what was asked
 *   and granted of `generation:read generation:create`; any other resource is `invalid_target`.
 * - People sign in on this server's own pages, with a user name and password, and then allow the client on
 *   a consent page listing the resource and scopes: plain HTML forms, so a browser (Chromium through
 *   playwright-core: oauth-browser.ts) or plain HTTP (`issueToken`, no browser) can go through them.
 *
 * `events` records what happened (registrations, authorization requests, sign-ins, consents), never a
 * secret, so tests can check the flow a client took.
 */
import { generateKeyPairSync, randomBytes, createHash } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import Provider, { errors, type InteractionDetails } from "oidc-provider";

export const GENERATION_SCOPES = ["generation:read", "generation:create"] as const;

export interface OidcUser {
  password: string;
  name: string;
}

/** Two people (two subjects), the default users. */
export const DEFAULT_USERS: Readonly<Record<string, OidcUser>> = {
  alice: { password: "alice-correct-horse", name: "Alice Example" },
  bob: { password: "bob-battery-staple", name: "Bob Example" },
};

export type OidcEvent =
  | {
      type: "registration";
      clientId: string;
      clientName: string | undefined;
      redirectUris: string[];
      tokenEndpointAuthMethod: string;
    }
  | {
      type: "authorization";
      clientId: string;
      scope: string;
      resource: string | string[] | undefined;
      codeChallengeMethod: string | undefined;
      hasCodeChallenge: boolean;
      redirectUri: string;
    }
  | { type: "login"; login: string }
  | { type: "login-refused"; login: string }
  | { type: "consent"; login: string; clientId: string; resources: Record<string, string[]> }
  | { type: "denied"; clientId: string }
  | { type: "token"; clientId: string; grantType: string };

export interface StartOidcOptions {
  /** The resource indicators tokens are issued for (each with both generation scopes). */
  resources: string[];
  users?: Record<string, OidcUser>;
  /** Default 0: an ephemeral port (the issuer is known once listening). */
  port?: number;
  accessTokenTtlSeconds?: number;
}

export interface IssueTokenOptions {
  login: string;
  /** Default: the user's right password. */
  password?: string;
  resource: string;
  /** Default: both generation scopes. */
  scope?: string;
}

export interface OidcServer {
  /** `http://127.0.0.1:<port>` */
  issuer: string;
  port: number;
  users: Readonly<Record<string, OidcUser>>;
  events: OidcEvent[];
  /**
   * The whole authorization code flow with PKCE over plain HTTP, as a browser would go through the pages,
   * but fast: registers a public client, asks for `resource` and `scope`, signs `login` in, allows, and
   * exchanges the code. Returns the access token.
   */
  issueToken(options: IssueTokenOptions): Promise<string>;
  close(): Promise<void>;
}

export async function startOidc(options: StartOidcOptions): Promise<OidcServer> {
  const users = options.users ?? DEFAULT_USERS;
  const resources = new Set(options.resources);
  const events: OidcEvent[] = [];
  /** Set once the port, hence the issuer, is known. */
  const app: { provider?: Provider; handler?: (req: IncomingMessage, res: ServerResponse) => void } = {};

  const server = createServer((req, res) => {
    const { provider, handler } = app;
    if (provider === undefined || handler === undefined) {
      res.writeHead(503).end();
      return;
    }
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const interaction = /^\/interaction\/([\w-]+)(?:\/(login|confirm|abort))?$/.exec(path);
    if (interaction === null) return handler(req, res);
    interact(provider, req, res, interaction[2]).catch((error: unknown) => {
      if (!res.headersSent) {
        res.writeHead(400, { "content-type": "text/html; charset=utf-8" });
        res.end(page("Sign-in failed", `<p>${escape(String(error))}</p>`));
      } else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const issuer = `http://127.0.0.1:${port}`;

  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const jwk = {
    ...privateKey.export({ format: "jwk" }),
    kid: randomBytes(6).toString("hex"),
    alg: "RS256",
    use: "sig",
  };
  const ttl = options.accessTokenTtlSeconds ?? 600;

  const provider = new Provider(issuer, {
    jwks: { keys: [jwk] },
    cookies: { keys: [randomBytes(32).toString("base64url")] },
    scopes: ["openid", "offline_access", ...GENERATION_SCOPES],
    claims: { openid: ["sub"], profile: ["name"] },
    clientDefaults: {
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    },
    // OAuth 2.1: the code flow only (no implicit, no hybrid).
    responseTypes: ["code"],
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: (_ctx: unknown, _client: unknown, oneOf?: string[]) => oneOf,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, indicator: string) => {
          if (!resources.has(indicator)) throw new errors.InvalidTarget("unknown resource");
          return {
            audience: indicator,
            scope: GENERATION_SCOPES.join(" "),
            accessTokenFormat: "jwt",
            accessTokenTTL: ttl,
            jwt: { sign: { alg: "RS256" } },
          };
        },
      },
    },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    findAccount: (_ctx: unknown, id: string) => {
      const user = users[id];
      if (user === undefined) return undefined;
      return { accountId: id, claims: () => ({ sub: id, name: user.name }) };
    },
    ttl: {
      AccessToken: ttl,
      AuthorizationCode: 60,
      ClientCredentials: ttl,
      Grant: 3600,
      IdToken: 600,
      Interaction: 600,
      RefreshToken: 3600,
      Session: 3600,
    },
  });
  provider.on("registration_create.success", (_ctx, client) => {
    const metadata = (client as { metadata(): Record<string, unknown> }).metadata();
    events.push({
      type: "registration",
      clientId: String(metadata["client_id"]),
      clientName: metadata["client_name"] as string | undefined,
      redirectUris: (metadata["redirect_uris"] as string[] | undefined) ?? [],
      tokenEndpointAuthMethod: String(metadata["token_endpoint_auth_method"]),
    });
  });
  provider.on("grant.success", (ctx) => {
    const oidc = (ctx as { oidc: { client?: { clientId: string }; params?: { grant_type?: string } } }).oidc;
    events.push({
      type: "token",
      clientId: oidc.client?.clientId ?? "",
      grantType: oidc.params?.grant_type ?? "",
    });
  });
  app.provider = provider;
  app.handler = provider.callback();

  async function interact(
    provider: Provider,
    req: IncomingMessage,
    res: ServerResponse,
    action: string | undefined,
  ): Promise<void> {
    const details = await provider.interactionDetails(req, res);
    const { uid, prompt, params } = details;
    const clientId = String(params["client_id"]);
    if (action === undefined && req.method === "GET") {
      if (prompt.name === "login") {
        events.push({
          type: "authorization",
          clientId,
          scope: String(params["scope"] ?? ""),
          resource: params["resource"] as string | string[] | undefined,
          codeChallengeMethod: params["code_challenge_method"] as string | undefined,
          hasCodeChallenge: typeof params["code_challenge"] === "string",
          redirectUri: String(params["redirect_uri"]),
        });
        return html(res, 200, loginPage(uid, clientName(await provider.Client.find(clientId), clientId)));
      }
      if (prompt.name === "consent") {
        const client = await provider.Client.find(clientId);
        return html(res, 200, consentPage(uid, clientName(client, clientId), details));
      }
      return html(res, 501, page("Not supported", `<p>Unsupported prompt ${escape(prompt.name)}.</p>`));
    }
    if (req.method !== "POST") return html(res, 405, page("Not allowed", "<p>POST only.</p>"));
    const form = new URLSearchParams(await readBody(req));
    if (action === "abort") {
      events.push({ type: "denied", clientId });
      return provider.interactionFinished(
        req,
        res,
        { error: "access_denied", error_description: "The user did not allow the client." },
        { mergeWithLastSubmission: false },
      );
    }
    if (action === "login" && prompt.name === "login") {
      const login = form.get("username") ?? "";
      const user = users[login];
      if (user === undefined || !sameText(user.password, form.get("password") ?? "")) {
        events.push({ type: "login-refused", login });
        const client = await provider.Client.find(clientId);
        return html(res, 200, loginPage(uid, clientName(client, clientId), "Wrong user name or password."));
      }
      events.push({ type: "login", login });
      return provider.interactionFinished(
        req,
        res,
        { login: { accountId: login, remember: false } },
        { mergeWithLastSubmission: false },
      );
    }
    if (action === "confirm" && prompt.name === "consent") {
      const accountId = details.session?.accountId;
      if (accountId === undefined) throw new Error("no signed-in user for this consent");
      const grant =
        (details.grantId !== undefined ? await provider.Grant.find(details.grantId) : undefined) ??
        new provider.Grant({ accountId, clientId });
      const missing = prompt.details as {
        missingOIDCScope?: string[];
        missingOIDCClaims?: string[];
        missingResourceScopes?: Record<string, string[]>;
      };
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
      if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
      for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
        grant.addResourceScope(indicator, scopes.join(" "));
      }
      events.push({
        type: "consent",
        login: accountId,
        clientId,
        resources: missing.missingResourceScopes ?? {},
      });
      const grantId = await grant.save();
      return provider.interactionFinished(
        req,
        res,
        { consent: { grantId } },
        { mergeWithLastSubmission: true },
      );
    }
    return html(
      res,
      400,
      page("Out of step", "<p>This page is out of step with the sign-in; start again.</p>"),
    );
  }

  const issueToken = async (request: IssueTokenOptions): Promise<string> => {
    const redirectUri = "http://127.0.0.1:9/callback";
    const registered = await jsonFetch(`${issuer}/reg`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        client_name: `test client for ${request.login}`,
        redirect_uris: [redirectUri],
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
      }),
    });
    const clientId = String(registered["client_id"]);
    const verifier = randomBytes(32).toString("base64url");
    const challenge = createHash("sha256").update(verifier).digest("base64url");
    const state = randomBytes(8).toString("hex");
    const authorize = new URL(`${issuer}/auth`);
    for (const [name, value] of Object.entries({
      client_id: clientId,
      response_type: "code",
      redirect_uri: redirectUri,
      scope: request.scope ?? GENERATION_SCOPES.join(" "),
      resource: request.resource,
      code_challenge: challenge,
      code_challenge_method: "S256",
      state,
    })) {
      authorize.searchParams.set(name, value);
    }
    const jar = new Map<string, string>();
    let next: { url: string; init?: RequestInit } = { url: authorize.href };
    for (let step = 0; step < 12; step += 1) {
      const response = await fetch(next.url, {
        ...next.init,
        redirect: "manual",
        headers: { ...(next.init?.headers as Record<string, string>), cookie: cookieHeader(jar) },
      });
      remember(jar, response.headers.getSetCookie());
      const location = response.headers.get("location");
      if (location !== null) {
        const target = new URL(location, next.url);
        if (target.href.startsWith(redirectUri)) {
          const error = target.searchParams.get("error");
          if (error !== null)
            throw new Error(
              `authorization refused: ${error} ${target.searchParams.get("error_description") ?? ""}`,
            );
          if (target.searchParams.get("state") !== state) throw new Error("the state came back changed");
          const code = target.searchParams.get("code");
          if (code === null) throw new Error(`no code in ${target.href}`);
          const tokens = await jsonFetch(`${issuer}/token`, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            body: new URLSearchParams({
              grant_type: "authorization_code",
              code,
              redirect_uri: redirectUri,
              code_verifier: verifier,
              client_id: clientId,
              resource: request.resource,
            }),
          });
          return String(tokens["access_token"]);
        }
        next = { url: target.href };
        continue;
      }
      const body = await response.text();
      const form = /<form[^>]*action="([^"]+\/(login|confirm))"/.exec(body);
      if (form === null)
        throw new Error(`sign-in stopped at ${next.url} (HTTP ${response.status}): ${body.slice(0, 300)}`);
      const fields =
        form[2] === "login"
          ? {
              username: request.login,
              password: request.password ?? users[request.login]?.password ?? "",
            }
          : {};
      if (form[2] === "login" && /Wrong user name or password/.test(body)) throw new Error("login refused");
      next = {
        url: new URL(unescape(form[1] ?? ""), next.url).href,
        init: {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams(fields).toString(),
        },
      };
    }
    throw new Error("the sign-in did not end in a redirect to the client");
  };

  return {
    issuer,
    port,
    users,
    events,
    issueToken,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function clientName(client: { clientName?: string } | undefined, clientId: string): string {
  return client?.clientName ?? clientId;
}

function loginPage(uid: string, client: string, error?: string): string {
  return page(
    "Sign in",
    `<p>Sign in to continue to <strong>${escape(client)}</strong>.</p>
${error === undefined ? "" : `<p class="error" role="alert">${escape(error)}</p>`}
<form method="post" action="/interaction/${escape(uid)}/login" autocomplete="off">
  <label>User name <input name="username" type="text" required autofocus></label>
  <label>Password <input name="password" type="password" required></label>
  <button type="submit">Sign in</button>
</form>`,
  );
}

function consentPage(uid: string, client: string, details: InteractionDetails): string {
  const missing = details.prompt.details as {
    missingOIDCScope?: string[];
    missingResourceScopes?: Record<string, string[]>;
  };
  const items = Object.entries(missing.missingResourceScopes ?? {})
    .map(
      ([resource, scopes]) =>
        `<li>${escape(resource)}<ul>${scopes.map((scope) => `<li><code>${escape(scope)}</code></li>`).join("")}</ul></li>`,
    )
    .join("");
  return page(
    "Allow access",
    `<p><strong>${escape(client)}</strong> asks to act for <strong>${escape(details.session?.accountId ?? "")}</strong> on:</p>
<ul>${items === "" ? "<li>(nothing new)</li>" : items}</ul>
<form method="post" action="/interaction/${escape(uid)}/confirm"><button type="submit">Allow</button></form>
<form method="post" action="/interaction/${escape(uid)}/abort"><button type="submit">Deny</button></form>`,
  );
}

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title>
<style>body{font:16px system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}
label{display:block;margin:.6rem 0}input{display:block;width:100%;padding:.4rem}button{margin:.6rem .4rem 0 0;
padding:.4rem 1rem}.error{color:#b00}</style></head><body><h1>${escape(title)}</h1>${body}</body></html>`;
}

function html(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    // No form-action: Chromium applies it to the redirect that ends the flow at the client's callback.
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'",
  });
  res.end(body);
}

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

function unescape(text: string): string {
  return text.replace(/&#(\d+);/g, (_match, code: string) => String.fromCharCode(Number(code)));
}

function sameText(a: string, b: string): boolean {
  const left = createHash("sha256").update(a).digest();
  const right = createHash("sha256").update(b).digest();
  return left.equals(right);
}

async function readBody(req: IncomingMessage): Promise<string> {
  let body = "";
  for await (const chunk of req) {
    body += (chunk as Buffer).toString("utf8");
    if (body.length > 64 * 1024) throw new Error("form too large");
  }
  return body;
}

async function jsonFetch(url: string, init: RequestInit): Promise<Record<string, unknown>> {
  const response = await fetch(url, init);
  const text = await response.text();
  if (!response.ok) throw new Error(`${init.method ?? "GET"} ${url}: HTTP ${response.status} ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

function remember(jar: Map<string, string>, cookies: string[]): void {
  for (const cookie of cookies) {
    const [pair = "", ...attributes] = cookie.split(";");
    const at = pair.indexOf("=");
    const name = pair.slice(0, at).trim();
    const value = pair.slice(at + 1).trim();
    const expired = attributes.some((attribute) =>
      /^\s*(max-age=0|expires=thu, 01 jan 1970)/i.test(attribute),
    );
    if (value === "" || expired) jar.delete(name);
    else jar.set(name, value);
  }
}

function cookieHeader(jar: Map<string, string>): string {
  return [...jar].map(([name, value]) => `${name}=${value}`).join("; ");
}
