/**
 * The protocol revisions this server speaks, and what each one offers: 2026-07-28 ("modern": every request
 * carries its revision and capabilities in `_meta`) and the 2025 revisions ("legacy": `initialize`). Nothing
 * of a later revision is offered to a client that negotiated an earlier one: the edge asks here.
 */
import {
  CLIENT_CAPABILITIES_META_KEY,
  type ClientCapabilities,
  type ServerContext,
} from "@modelcontextprotocol/server";

/** The revisions answered to `initialize`, newest first. */
export const LEGACY_REVISIONS = ["2025-11-25", "2025-06-18", "2025-03-26"] as const;
/** What a legacy HTTP request without an MCP-Protocol-Version header speaks (the spec's rule). */
export const DEFAULT_LEGACY_REVISION = "2025-03-26";

export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";

export interface Revision {
  era: "legacy" | "modern";
  /** The revision in use (for a legacy request not yet negotiated: the one it names). */
  version: string;
}

export const MODERN: Revision = { era: "modern", version: "2026-07-28" };

/** Tasks as a capability (SEP-1686: tasks/get, tasks/result, tasks/list, tasks/cancel): 2025-11-25 only. */
export function offersLegacyTasks(revision: Revision): boolean {
  return revision.era === "legacy" && revision.version === "2025-11-25";
}

/** The revision a legacy client gets for the one it asked for: its own when served, else the newest. */
export function negotiatedLegacy(requested: unknown): string {
  return typeof requested === "string" && (LEGACY_REVISIONS as readonly string[]).includes(requested)
    ? requested
    : LEGACY_REVISIONS[0];
}

/** What a 2026-07-28 client may send; any other method is HTTP 404 with -32601, as that revision says. */
export const MODERN_METHODS: ReadonlySet<string> = new Set([
  "server/discover",
  "subscriptions/listen",
  "tools/list",
  "tools/call",
  "resources/list",
  "resources/templates/list",
  "resources/read",
  "prompts/list",
  "prompts/get",
  "tasks/get",
  "tasks/update",
  "tasks/cancel",
]);

/** What a 2026-07-28 client declared on this request (`_meta`); undefined for a 2025 request. */
export function declaredCapabilities(ctx: ServerContext): ClientCapabilities | undefined {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  return envelope?.[CLIENT_CAPABILITIES_META_KEY] as ClientCapabilities | undefined;
}
