/**
 * The `requestState` a cost question carries (2026-07-28): what makes an answer count only for the question
 * this server asked, for this very call. It is bound to the caller, the tool, its checked arguments and the
 * estimate, lasts as long as a person may take to decide, and is signed with the SDK's HMAC codec under a
 * key derived from the service key: the same on every replica and across restarts, and unknown to a caller
 * that does not hold the service key (as state/seal.ts derives its sealing key).
 */
import { createHash, hkdfSync } from "node:crypto";
import { createRequestStateCodec, type ServerContext } from "@modelcontextprotocol/server";
import { isObject } from "../api/shapes.js";

/** What an answer must have been asked for. */
export interface ConfirmQuestion {
  /** Caller.id */
  callerId: string;
  tool: string;
  /** The tool's checked arguments. */
  data: unknown;
  credits: number;
}

export interface ConfirmStates {
  mint(question: ConfirmQuestion): Promise<string>;
  /** Whether `state` was minted here for this very question and has not expired. */
  verify(state: unknown, question: ConfirmQuestion, ctx: ServerContext): Promise<boolean>;
}

const TTL_SECONDS = 10 * 60;
/** Far above anything minted here; a longer value is not even checked. */
const MAX_STATE_CHARS = 2048;

export function confirmStatesFor(baseUrl: string, serviceKey: string): ConfirmStates {
  const key = new Uint8Array(
    hkdfSync("sha256", serviceKey, baseUrl, "generation-mcp cost confirmation v1", 32),
  );
  // The payload is readable by the client: a digest of the question, never the caller's id itself.
  const codec = createRequestStateCodec<string>({ key, ttlSeconds: TTL_SECONDS });
  /** States already answered here, until they expire: one confirmation starts one request. */
  const answered = new Map<string, number>();
  return {
    mint: (question) => codec.mint(digestOf(question)),
    async verify(state, question, ctx) {
      if (typeof state !== "string" || state.length > MAX_STATE_CHARS || answered.has(state)) return false;
      try {
        if ((await codec.verify(state, ctx)) !== digestOf(question)) return false;
      } catch {
        // Malformed, altered, expired: no answer, whatever the reason.
        return false;
      }
      const now = Date.now();
      for (const [used, until] of answered) if (until <= now) answered.delete(used);
      answered.set(state, now + TTL_SECONDS * 1000);
      return true;
    },
  };
}

function digestOf(question: ConfirmQuestion): string {
  const text = JSON.stringify([question.callerId, question.tool, canonical(question.data), question.credits]);
  return createHash("sha256").update(text).digest("base64url");
}

/** Keys sorted at every depth, so the same arguments give the same digest whatever order they came in. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (!isObject(value)) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, canonical(value[key])]),
  );
}
