/**
 * Asking the client to open a link for the person (URL elicitation), for a tool that never knows the era:
 * 2025-11-25, an `elicitation/create` request in `url` mode on a session whose client declared it (a
 * stateless 2025 HTTP request cannot be asked), and `notifications/elicitation/complete` once the call has
 * its answer; 2026-07-28, an `input_required` answer instead of the tool's own, whose `requestState` names
 * the link, so the client's next call (with the person's answer) waits on it. The state needs no seal: the
 * link it names is honoured only for the caller it is bound to (uploads/desk.ts).
 */
import {
  inputRequired,
  inputResponse,
  type ClientCapabilities,
  type Result,
  type ServerContext,
} from "@modelcontextprotocol/server";
import { isObject } from "../api/shapes.js";
import type { LinkAnswer, ToolContext } from "../tools/define-tool.js";
import { declaredCapabilities, type Revision } from "./revisions.js";

const KEY = "open_upload_link";
const STATE = /^upload-link:([A-Za-z0-9_-]{22})$/;

export function linkAsker(
  revision: Revision,
  ctx: ServerContext,
  clientCapabilities: ClientCapabilities | undefined,
): Pick<ToolContext, "openLink" | "linkAnswer"> & { finish(result: Result): Promise<Result> } {
  const modern = revision.era === "modern";
  const declared = modern ? declaredCapabilities(ctx) : clientCapabilities;
  const canAsk =
    isObject(declared?.elicitation) &&
    declared.elicitation["url"] !== undefined &&
    (modern || revision.version === "2025-11-25");
  const state = modern ? ctx.mcpReq.requestState() : undefined;
  const id = STATE.exec(typeof state === "string" ? state : "")?.[1];
  const view = id === undefined ? undefined : inputResponse(ctx.mcpReq.inputResponses, KEY);
  let deferred: { id: string; url: string; message: string } | undefined;
  let asked: string | undefined;
  return {
    linkAnswer:
      id !== undefined && view?.kind === "elicit"
        ? { id, answer: view.action === "accept" ? "accepted" : "declined" }
        : undefined,
    async openLink(link, deadline): Promise<LinkAnswer> {
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
    async finish(result) {
      if (deferred !== undefined) {
        const { url, message } = deferred;
        return inputRequired({
          inputRequests: { [KEY]: inputRequired.elicitUrl({ message, url }) },
          requestState: `upload-link:${deferred.id}`,
        });
      }
      if (
        asked !== undefined &&
        isObject(result["structuredContent"]) &&
        "url" in result["structuredContent"]
      ) {
        const params = { elicitationId: asked };
        await ctx.mcpReq
          .notify({ method: "notifications/elicitation/complete", params })
          .catch(() => undefined);
      }
      return result;
    },
  };
}
