/**
 * What an OAuth access token must grant for a request: `generation:read` to look (get_status, list_videos,
 * get_credits, and tasks), `generation:create` to start or upload (what spends credits or writes). Checked
 * before anything reaches the service; a token without it gets HTTP 403 `insufficient_scope` naming it.
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
 * The scopes the requests of a message need (a batch: all of them). Discovery, lists and notifications
 * need none beyond a valid token; an unknown tool none either (its call is refused as bad input).
 */
export function scopesNeeded(messages: ReadonlyArray<{ method?: unknown; params?: unknown }>): string[] {
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
  return [...needed];
}
