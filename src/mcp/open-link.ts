/**
 * Asking the client to open a link for the person (URL elicitation), for tools that never know the era.
 * 2025-11-25: `elicitation/create` in url mode, then `notifications/elicitation/complete` once the call has
 * its url. 2026-07-28: an input_required answer whose `requestState` names the link, so that the retry waits
 * on it; that state needs no seal, as a link is honoured only for its caller.
 */
import {
  inputRequired,
  inputResponse,
  type ClientCapabilities,
  type Result,
  type ServerContext,
} from "@modelcontextprotocol/server";
import { isObject } from "../api/shapes.js";
import type { ToolContext } from "../tools/define-tool.js";
import { declaredCapabilities, type Revision } from "./revisions.js";

const KEY = "open_upload_link";

export function linkAsker(
  revision: Revision,
  ctx: ServerContext,
  capabilities: ClientCapabilities | undefined,
) {
  const modern = revision.era === "modern";
  const elicitation = (modern ? declaredCapabilities(ctx) : capabilities)?.elicitation;
  const canAsk =
    isObject(elicitation) &&
    elicitation["url"] !== undefined &&
    (modern || revision.version === "2025-11-25");
  const state = modern ? ctx.mcpReq.requestState() : undefined;
  const id = /^upload-link:([A-Za-z0-9_-]{22})$/.exec(typeof state === "string" ? state : "")?.[1];
  const view = id === undefined ? undefined : inputResponse(ctx.mcpReq.inputResponses, KEY);
  let deferred: { id: string; url: string; message: string } | undefined;
  let asked: string | undefined;
  const context: Pick<ToolContext, "openLink" | "linkAnswer"> = {
    linkAnswer:
      view?.kind === "elicit" && id !== undefined
        ? { id, answer: view.action === "accept" ? "accepted" : "declined" }
        : undefined,
    async openLink(link, deadline) {
      const timeout = deadline - Date.now();
      if (!canAsk || timeout <= 0) return "unavailable";
      if (modern) {
        deferred = link;
        return "deferred";
      }
      const params = { mode: "url" as const, message: link.message, url: link.url, elicitationId: link.id };
      try {
        const reply = await ctx.mcpReq.send(
          { method: "elicitation/create", params },
          { timeout, signal: ctx.mcpReq.signal },
        );
        asked = link.id;
        return reply.action === "accept" ? "accepted" : "declined";
      } catch (error) {
        if (ctx.mcpReq.signal.aborted) throw error;
        return "unavailable";
      }
    },
  };
  /** The call's answer: the question instead, when one waits for the client's next call. */
  const finish = async (result: Result): Promise<Result> => {
    if (deferred !== undefined) {
      const question = inputRequired.elicitUrl({ message: deferred.message, url: deferred.url });
      return inputRequired({
        inputRequests: { [KEY]: question },
        requestState: `upload-link:${deferred.id}`,
      });
    }
    const done = isObject(result["structuredContent"]) && "url" in result["structuredContent"];
    const complete = {
      method: "notifications/elicitation/complete" as const,
      params: { elicitationId: asked },
    };
    if (asked !== undefined && done) await ctx.mcpReq.notify(complete).catch(() => undefined);
    return result;
  };
  return { ...context, finish };
}
