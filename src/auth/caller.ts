/**
 * Who is asking: made once at the edge (a stdio user, a bearer, a gateway token, an OAuth subject), carried
 * everywhere that scopes something, so no place derives "who" on its own; and what its grants must hold.
 */
export interface Caller {
  /** Stable and opaque: a hex SHA-256 of what identifies the caller, never the credential itself. */
  id: string;
  /** The service key this caller's calls use: its own (stdio, passthrough) or the one the server holds. */
  serviceKey: string;
  /** Set when one service key serves several callers: what each sees and reuses is its own. */
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

export function unauthorized(challenge: string, error: string, message: string): Refusal {
  return { status: 401, challenge, error, message };
}

/** The token of `Authorization: Bearer <token>`, or undefined when the header is missing or malformed. */
export function bearerToken(header: string | undefined, maxChars: number): string | undefined {
  if (header === undefined || header.length > maxChars + 16) return undefined;
  const token = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header)?.[1];
  return token === undefined || token.length > maxChars ? undefined : token;
}

/** Hex SHA-256 of a credential; node:crypto (~5 ms) loads at the first, off the stdio start-up path. */
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

/** What an OAuth token must grant: `read` to look (and tasks), `create` to start or upload; else HTTP 403. */
export const SCOPES = { read: "generation:read", create: "generation:create" } as const;

const TOOL_SCOPES: Readonly<Record<string, string>> = {
  generate_video: SCOPES.create,
  generate_image: SCOPES.create,
  upload_image: SCOPES.create,
  get_status: SCOPES.read,
  list_videos: SCOPES.read,
  get_credits: SCOPES.read,
};

/** The scopes `caller` lacks for a message's requests (tool calls and tasks need one); no grants: none. */
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
