/**
 * Signing in as a person would: the MCP SDK (v1) client's OAuth support, with an `OAuthClientProvider`
 * whose `redirectToAuthorization(url)` opens the authorization URL in headless Chromium (playwright-core,
 * Debian's chromium), types the user name and password into the authorization server's sign-in page,
 * presses "Allow" on its consent page, and lets the browser follow the redirect to a loopback callback
 * (a small HTTP server on 127.0.0.1), which hands the code to the SDK (`transport.finishAuth(code)`).
 *
 * `signInInBrowser` drives the pages alone, for clients that open the browser themselves (mcp-remote).
 * Screenshots of each page go to `screenshots.dir` when given (test-artifacts/oauth/).
 */
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { UnauthorizedError, type OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import { chromium, type Browser, type Page } from "playwright-core";

const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--no-first-run",
  "--disable-sync",
];
/** Longest one page of the sign-in may take to appear. */
const PAGE_TIMEOUT_MS = 15_000;

export interface Person {
  username: string;
  password: string;
}

export interface Screenshots {
  dir: string;
  /** File name prefix: `<name>-login.png`, `<name>-consent.png`, `<name>-done.png`. */
  name: string;
}

/** Chromium: CHROMIUM_PATH, /usr/bin/chromium, or `chromium`/`chromium-browser` on PATH. */
export function findChromium(): string {
  const named = process.env["CHROMIUM_PATH"];
  if (named !== undefined && named !== "") return named;
  const candidates = ["/usr/bin/chromium"];
  for (const dir of (process.env["PATH"] ?? "").split(path.delimiter)) {
    if (dir !== "") candidates.push(path.join(dir, "chromium"), path.join(dir, "chromium-browser"));
  }
  const found = candidates.find((candidate) => existsSync(candidate));
  if (found === undefined) {
    throw new Error(
      "Chromium not found: the OAuth sign-in tests need Debian's chromium (apt-get install -y chromium) " +
        "on PATH, or CHROMIUM_PATH set to a Chromium binary.",
    );
  }
  return found;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: findChromium(), args: CHROMIUM_ARGS });
}

export interface SignInResult {
  /** The URL the browser ended on (the client's callback, with the code in its query). */
  finalUrl: string;
  /** Text of the consent page, as the person read it. */
  consentText: string;
}

/**
 * Opens `authorizationUrl` in a fresh browser context (a person with no session yet), signs `person` in,
 * presses Allow (or Deny), and waits until the browser has left the authorization server for the client's
 * redirect URI and that page has loaded.
 */
export async function signInInBrowser(
  browser: Browser,
  authorizationUrl: string,
  person: Person,
  options: { screenshots?: Screenshots | undefined; consent?: "allow" | "deny" } = {},
): Promise<SignInResult> {
  const shots = options.screenshots;
  if (shots !== undefined) await mkdir(shots.dir, { recursive: true });
  const shot = async (page: Page, step: string) => {
    if (shots !== undefined)
      await page.screenshot({ path: path.join(shots.dir, `${shots.name}-${step}.png`) });
  };
  const context = await browser.newContext({ viewport: { width: 640, height: 520 } });
  context.setDefaultTimeout(PAGE_TIMEOUT_MS);
  try {
    const page = await context.newPage();
    const issuerOrigin = new URL(authorizationUrl).origin;
    await page.goto(authorizationUrl);
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await page.getByLabel("User name").fill(person.username);
    await page.getByLabel("Password").fill(person.password);
    await shot(page, "login");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Allow access" }).waitFor();
    const consentText = await page.locator("body").innerText();
    await shot(page, "consent");
    await page.getByRole("button", { name: options.consent === "deny" ? "Deny" : "Allow" }).click();
    await page.waitForURL((url) => url.origin !== issuerOrigin, { waitUntil: "load" });
    await shot(page, "done");
    return { finalUrl: page.url(), consentText };
  } finally {
    await context.close();
  }
}

export interface CallbackServer {
  /** `http://127.0.0.1:<port>/callback` */
  url: string;
  /** The query of the next request to the callback (resolves at once for one already received). */
  next(): Promise<URLSearchParams>;
  close(): Promise<void>;
}

/** A loopback redirect URI (RFC 8252 §7.3): answers the browser with a plain page, passes the query on. */
export async function startCallbackServer(): Promise<CallbackServer> {
  const received: URLSearchParams[] = [];
  const waiting: Array<(query: URLSearchParams) => void> = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname !== "/callback") {
      res.writeHead(404).end();
      return;
    }
    const failed = url.searchParams.has("error");
    res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
    res.end(
      `<!doctype html><meta charset="utf-8"><title>${failed ? "Not signed in" : "Signed in"}</title>` +
        `<body style="font:16px system-ui;margin:3rem"><h1>${failed ? "Not signed in" : "Signed in"}</h1>` +
        "<p>You can close this window and return to the application.</p>",
    );
    const resolve = waiting.shift();
    if (resolve !== undefined) resolve(url.searchParams);
    else received.push(url.searchParams);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/callback`,
    next: () => {
      const ready = received.shift();
      if (ready !== undefined) return Promise.resolve(ready);
      return new Promise((resolve) => waiting.push(resolve));
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface BrowserOAuthOptions {
  browser: Browser;
  person: Person;
  callback: CallbackServer;
  clientName?: string;
  screenshots?: Screenshots | undefined;
  consent?: "allow" | "deny";
}

/**
 * The client side of one person's session, held in memory: what the SDK registers, the PKCE verifier, the
 * tokens. Its `redirectToAuthorization` runs the browser; `authorizationCode()` yields the code the
 * callback received (after checking `state`).
 */
export class BrowserOAuthProvider implements OAuthClientProvider {
  /** Every authorization URL the SDK sent the browser to. */
  readonly authorizationUrls: URL[] = [];
  signIn: SignInResult | undefined;
  private client: OAuthClientInformationMixed | undefined;
  private saved: OAuthTokens | undefined;
  private verifier: string | undefined;
  private expectedState: string | undefined;
  private browsing: Promise<SignInResult> | undefined;

  constructor(private readonly options: BrowserOAuthOptions) {}

  get redirectUrl(): string {
    return this.options.callback.url;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.options.clientName ?? "generation-mcp sign-in test",
      redirect_uris: [this.options.callback.url],
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }

  state(): string {
    this.expectedState = randomBytes(16).toString("base64url");
    return this.expectedState;
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.client;
  }

  saveClientInformation(information: OAuthClientInformationMixed): void {
    this.client = information;
  }

  tokens(): OAuthTokens | undefined {
    return this.saved;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.saved = tokens;
  }

  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }

  codeVerifier(): string {
    if (this.verifier === undefined) throw new Error("no PKCE verifier saved");
    return this.verifier;
  }

  redirectToAuthorization(url: URL): void {
    this.authorizationUrls.push(url);
    this.browsing = signInInBrowser(this.options.browser, url.href, this.options.person, {
      screenshots: this.options.screenshots,
      consent: this.options.consent ?? "allow",
    });
    // Awaited in authorizationCode(); kept from being an unhandled rejection meanwhile.
    this.browsing.catch(() => undefined);
  }

  /** The authorization code the browser brought back to the callback. */
  async authorizationCode(): Promise<string> {
    if (this.browsing === undefined) throw new Error("the SDK never sent the browser to sign in");
    const [signIn, query] = await Promise.all([this.browsing, this.options.callback.next()]);
    this.signIn = signIn;
    if (query.get("state") !== this.expectedState) throw new Error("the callback's state is not ours");
    const error = query.get("error");
    if (error !== null) throw new Error(`sign-in refused: ${error}: ${query.get("error_description") ?? ""}`);
    const code = query.get("code");
    if (code === null) throw new Error("the callback carried no code");
    return code;
  }
}

export interface Exchange {
  method: string;
  url: string;
  status: number;
  /** Whether the request carried an Authorization header. */
  authorized: boolean;
  /** The answer's body, read from a clone. */
  body: Promise<string>;
}

/** A fetch for the SDK's transport that records every exchange (MCP and OAuth alike). */
export function recordingFetch(): { fetch: typeof fetch; exchanges: Exchange[] } {
  const exchanges: Exchange[] = [];
  const recording: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const response = await fetch(input, init);
    exchanges.push({
      method: request.method,
      url: request.url,
      status: response.status,
      authorized: request.headers.has("authorization"),
      body: response
        .clone()
        .text()
        .catch(() => ""),
    });
    return response;
  };
  return { fetch: recording, exchanges };
}

/**
 * Connects an SDK client to `url` with `provider`, as an application does: the first connect meets the
 * 401, discovers and registers and sends the browser to sign in, and fails with UnauthorizedError; the
 * code is exchanged (`finishAuth`) and a fresh transport connects with the token.
 */
export async function connectSignedIn(
  url: string,
  provider: BrowserOAuthProvider,
  fetchFn?: typeof fetch,
): Promise<Client> {
  const transportFor = () =>
    new StreamableHTTPClientTransport(new URL(url), {
      authProvider: provider,
      ...(fetchFn !== undefined && { fetch: fetchFn }),
    });
  const first = transportFor();
  try {
    const client = new Client({ name: "oauth-e2e", version: "1.0.0" }, { capabilities: {} });
    await client.connect(first);
    // Already had a valid token.
    return client;
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
  }
  await first.finishAuth(await provider.authorizationCode());
  await first.close();
  const client = new Client({ name: "oauth-e2e", version: "1.0.0" }, { capabilities: {} });
  await client.connect(transportFor());
  return client;
}
