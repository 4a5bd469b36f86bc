/**
 * The state of one service key in this process and its state folder: the journal, and every kind the replicas
 * would share (records.ts). Alone, this process leads every poll and holds every claim. redis/ builds on it.
 */
import { rm } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { TokenBucketBudget } from "../../api/rate-budget.js";
import type { Logger } from "../../logger.js";
import type { LocalState, PollCoordinator, StartClaims, TaskLogger } from "../records.js";
import { LocalConfirmations } from "./confirmations.js";
import { Journal } from "./journal.js";
import { LocalOwners } from "./owners.js";
import { LocalSpendStore } from "./spend.js";
import { localTaskRecords } from "./task-records.js";

export const ALONE_POLLS: PollCoordinator = {
  lead: async () => true,
  release: async () => {},
  publish: async () => {},
  latest: async () => undefined,
  nextChange: (_videoId, ms, signal) => sleep(ms, undefined, { signal }).catch(() => undefined),
};

export const ALONE_CLAIMS: StartClaims = {
  claim: async () => true,
  unclaim: async () => {},
  mirror: async () => {},
  read: async () => ({}),
};

/** `dir` undefined: in memory only. */
export async function localState(dir: string | undefined, logger: Logger) {
  const log: TaskLogger = (level, message, data) => logger.log(level, message, data);
  const [journal, owners] = await Promise.all([
    Journal.open(dir, { logger: log }),
    LocalOwners.open(dir, log),
  ]);
  const tasks = localTaskRecords(dir, logger);
  const spend = new LocalSpendStore(dir, log);
  const confirmations = new LocalConfirmations(dir, log);
  return {
    budget: new TokenBucketBudget(),
    polls: ALONE_POLLS,
    claims: ALONE_CLAIMS,
    tasks,
    owners,
    spend,
    confirmations,
    journal,
    /** Writes on their way finish; a folder that holds nothing worth keeping goes. */
    async close() {
      await Promise.all([journal.close(), owners.close(), tasks.written()]);
      if (dir === undefined || !journal.empty || tasks.holds() || owners.holds()) return;
      if ((await spend.holds()) || (await confirmations.holds())) return;
      await rm(dir, { recursive: true, force: true }).catch(() => undefined);
    },
  } satisfies LocalState & { journal: Journal; close(): Promise<void> };
}
