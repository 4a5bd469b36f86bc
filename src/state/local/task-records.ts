/**
 * The MCP task records of one service key in this process: kept on disk (`mcp-tasks.json` in the key's state
 * folder, created only once there is a record to keep), shared with nobody. Two processes of one key (two
 * stdio clients side by side) share the file: each writes its own records and keeps the other processes'
 * that have not expired, so neither drops what the other follows, and a process takes up a working task of
 * the file only when the process that followed it is gone, never while it runs.
 */
import type { Logger } from "../../logger.js";
import { expiresAt, parseRecord, readList, type TaskRecord, type TaskRecordStore } from "../records.js";
import { JsonFile, isProcessRunning } from "./store.js";

const FILE_NAME = "mcp-tasks.json";

type Saved = { version: 1; records: TaskRecord[] };

/** `dir` undefined: in memory only (nothing is written). */
export function localTaskRecords(dir: string | undefined, logger: Logger) {
  const file = new JsonFile<Saved>(dir, FILE_NAME, {
    label: "The MCP task records",
    parse: (value) => {
      const items = (value as { records?: unknown } | null)?.records;
      const records = readList(parseRecord)(items);
      const skipped = (Array.isArray(items) ? items.length : 0) - records.length;
      if (skipped > 0)
        logger.warning(`${skipped} MCP task record(s) in ${FILE_NAME} were not valid and were skipped`);
      return { version: 1, records };
    },
    logger: (level, message, data) => logger.log(level, message, data),
  });
  /** Whether the file exists (or will once written): an empty record set never creates it. */
  let onDisk = false;
  let kept = 0;
  const store = {
    async load() {
      const { records } = await file.load().catch((error: unknown) => {
        logger.warning("the MCP task records could not be read; starting with none", {
          error: String(error),
        });
        return { records: [] };
      });
      onDisk ||= records.length > 0;
      // Another process of this key, still running, follows it: left to that one (and kept in the file).
      return records.filter((record) => !followedElsewhere(record));
    },
    /**
     * Queues a write of `records` (those not marked ephemeral), beside the records of the file that belong
     * to other processes and have not expired: one that runs, or one that stopped (a restart takes them up).
     */
    save(records: Iterable<TaskRecord>) {
      const ours = [...records].filter((record) => record.ephemeral !== true);
      kept = ours.length;
      if (dir === undefined || (ours.length === 0 && !onDisk)) return;
      onDisk = true;
      const ids = new Set(ours.map((record) => record.task.taskId));
      void file
        .update((saved) => {
          const others = saved.records.filter(
            (record) =>
              !ids.has(record.task.taskId) &&
              record.pid !== undefined &&
              record.pid !== process.pid &&
              expiresAt(record.task) > Date.now(),
          );
          return { next: { version: 1 as const, records: [...ours, ...others] }, result: undefined };
        })
        .catch((error: unknown) => {
          logger.warning("the MCP task records could not be written", { error: String(error) });
        });
    },
    written: () => file.settled(),
    /** Whether this process keeps any record: a folder that keeps nothing may go. */
    holds: () => kept > 0,
    // Nobody else to share with: this process decides, follows and ends its own tasks.
    share: async () => {},
    read: async () => undefined,
    finalize: async () => undefined,
    list: async () => [],
    follow: async () => true,
    requestCancel: async () => {},
    cancelRequested: async () => false,
  } satisfies TaskRecordStore & { holds(): boolean };
  return store;
}

/** Whether another process, still running, follows the record: it is that process's to keep and to end. */
function followedElsewhere(record: TaskRecord): boolean {
  return record.pid !== undefined && record.pid !== process.pid && isProcessRunning(record.pid);
}
