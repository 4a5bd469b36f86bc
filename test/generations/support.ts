/** Small helpers shared by the waiting end-to-end tests. */
import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import type { Harness } from "../helpers/harness.js";
import type { RequestRecord } from "../../src/sandbox/types.js";
import { JOURNAL_FILE } from "../../src/state/local/journal.js";
import type { JournalEntry } from "../../src/state/records.js";

export const credits = (h: Harness, name = "paid"): number =>
  h.sandbox.accounts.find((account) => account.name === name)?.credits ?? Number.NaN;

/** GET /videos/:id requests in the log (all ids, or the one given). */
export function statusPolls(requests: readonly RequestRecord[], videoId?: string): RequestRecord[] {
  return requests.filter(
    (request) =>
      request.route === "video-status" &&
      (videoId === undefined || decodeURIComponent(request.path.split("/").pop() ?? "") === videoId),
  );
}

export const byRoute = (requests: readonly RequestRecord[], route: RequestRecord["route"]) =>
  requests.filter((request) => request.route === route);

/** The journals' entries under a state folder (one folder per service), read synchronously; none yet: []. */
export function journalEntries(stateDir: string): JournalEntry[] {
  let folders: string[];
  try {
    folders = readdirSync(stateDir);
  } catch {
    return [];
  }
  return folders.flatMap((folder) => {
    try {
      return JSON.parse(readFileSync(path.join(stateDir, folder, JOURNAL_FILE), "utf8")) as JournalEntry[];
    } catch {
      return [];
    }
  });
}

/** The journals' entries as JSON text, to look for an id or a phase in. */
export const journalText = (stateDir: string): string => JSON.stringify(journalEntries(stateDir));

/** Collects the MCP logging notifications the server sends to the client. */
export function collectLogNotifications(h: Harness): string[] {
  const seen: string[] = [];
  h.client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    seen.push(JSON.stringify(notification.params.data));
  });
  return seen;
}

export const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Resolves once `check` holds, polling every 5 ms; rejects after `timeoutMs`. */
export async function until(check: () => boolean, timeoutMs = 5000, what = "condition"): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await delay(5);
  }
}
