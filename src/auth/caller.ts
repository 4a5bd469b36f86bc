/**
 * Who is asking: made once at the edge (a stdio user, an HTTP bearer that is a service key, a gateway token,
 * an OAuth subject) and carried everywhere that scopes something: the runtime (by service key), the
 * concurrency cap, MCP task records, the duplicate guard, settlement, ownership of tasks and spend. No place
 * derives "who" on its own. And what a signed-in caller's grants must hold for a request.
 */
export interface Caller {
  /**
   * Stable and opaque: a hex SHA-256 of what identifies the caller (its bearer, its token, `iss` + `sub`).
   * Caps, cancellations and spend are counted per id. Never the credential itself.
   */
  id: string;
  /** The service key this caller's calls use: its own (stdio, passthrough) or the one the server holds. */
  serviceKey: string;
  /**
   * Set when one service key serves several callers (gateway tokens, OAuth subjects): tasks, reuse and the
   * history a caller sees are its own, never another's. Undefined when the caller owns the key's whole
   * account (stdio, passthrough).
   */
  scope: string | undefined;
  /** For OAuth: the scopes the token grants (`generation:read`, `generation:create`). */
  grants?: ReadonlySet<string> | undefined;
}

/** A request refused for its credentials: HTTP 401 (or 403) with its `WWW-Authenticate` challenge. */
export interface Refusal {
  status: 401 | 403;
  challenge: string;
  /** The JSON error code (`invalid_token`, `invalid_request` ...) and a sentence for the caller. */
  error: string;
  message: string;
}

/** The token of `Authorization: Bearer <token>`, or undefined when the header is missing or malformed. */
export function bearerToken(header: string | undefined, maxChars: number): string | undefined {
  if (header === undefined || header.length > maxChars + 16) return undefined;
  const token = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header)?.[1];
  return token === undefined || token.length > maxChars ? undefined : token;
}

/**
 * Hex SHA-256 of a credential: how callers and runtimes are named anywhere (never by the secret). node:crypto
 * loads on the first digest, not on the stdio start-up path (it costs ~5 ms to load).
 */
export function digestOf(secret: string): string {
  return process.getBuiltinModule("node:crypto").createHash("sha256").update(secret).digest("hex");
}

/** The one user of a stdio server: owns the account of the configured key. */
export function localCaller(serviceKey: string): Caller {
  let id: string | undefined;
  return {
    // Worked out when first needed (a call), so the stdio session answers its opening exchange sooner.
    get id() {
      return (id ??= digestOf(serviceKey));
    },
    serviceKey,
    scope: undefined,
  };
}

/**
 * What an OAuth access token must grant: `generation:read` to look (get_status, list_videos, get_credits,
 * and tasks), `generation:create` to start or upload (what spends credits or writes). Checked before
 * anything reaches the service; a token without it gets HTTP 403 `insufficient_scope` naming it.
 */
export const SCOPES = { read: "generation:read", create: "generation:create" } as const;

const TOOL_SCOPES: Readonly<Record<string, string>> = {
  generate_video: SCOPES.create,
  generate_image: SCOPES.create,
  upload_image: SCOPES.create,
  get_status: SCOPES.read,
  list_videos: SCOPES.read,
  get_credits: SCOPES.read,
};

/**
 * The scopes `caller` lacks for the requests of a message (a batch: all of them). Discovery, lists and
 * notifications need none beyond a valid token; an unknown tool none either (its call is refused as bad
 * input). Callers without grants (not OAuth) lack none.
 */
export function missingScopes(
  caller: Caller,
  messages: ReadonlyArray<{ method?: unknown; params?: unknown }>,
): string[] {
  const needed = new Set<string>();
  for (const message of messages) {
    if (message.method === "tools/call") {
      const name = (message.params as { name?: unknown } | undefined)?.name;
      const scope = typeof name === "string" ? TOOL_SCOPES[name] : undefined;
      if (scope !== undefined) needed.add(scope);
    } else if (typeof message.method === "string" && message.method.startsWith("tasks/")) {
      needed.add(SCOPES.read);
    }
  }
  return [...needed].filter((scope) => caller.grants !== undefined && !caller.grants.has(scope));
}
