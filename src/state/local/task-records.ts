/**
 * The MCP task records of one key in this process (`mcp-tasks.json`, made once there is a record), shared
 * with nobody. Processes of one key sharing the file each write their own records and keep the others'
 * unexpired ones; a working task of the file is taken up only once the process following it is gone.
 */
import type { Logger } from "../../logger.js";
import { expiresAt, parseRecord, readList, type TaskRecord, type TaskRecordStore } from "../records.js";
import { JsonFile, isProcessRunning } from "./store.js";

const FILE_NAME = "mcp-tasks.json";

type Saved = { version: 1; records: TaskRecord[] };

/** `dir` undefined: in memory only. */
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
  /** Whether the file exists (or will once written): no record never creates it. */
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
    /** Beside the file's unexpired records of other processes, running or stopped (a restart takes them). */
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
    holds: () => kept > 0,
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

/** Whether another process, still running, follows the record: it is that one's to keep and to end. */
function followedElsewhere(record: TaskRecord): boolean {
  return record.pid !== undefined && record.pid !== process.pid && isProcessRunning(record.pid);
}
