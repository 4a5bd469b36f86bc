/**
 * The MCP task records of one service key on disk (`mcp-tasks.json` in the key's state folder), created only
 * once there is a record to keep. Two processes of one key (two stdio clients side by side) share the file:
 * each writes its own records and keeps the other processes' that have not expired, so neither drops what
 * the other follows.
 */
import type { Logger } from "../../logger.js";
import { expiresAt, parseRecord, readList, type TaskRecord } from "../records.js";
import { JsonFile, isProcessRunning } from "./store.js";

const FILE_NAME = "mcp-tasks.json";

/** Whether another process, still running, follows the record: it is that process's to keep and to end. */
export function followedElsewhere(record: TaskRecord): boolean {
  return record.pid !== undefined && record.pid !== process.pid && isProcessRunning(record.pid);
}

type Saved = { version: 1; records: TaskRecord[] };

export class RecordsFile {
  private readonly file: JsonFile<Saved>;
  /** Whether the file exists (or will once written): an empty record set never creates it. */
  private onDisk = false;

  constructor(
    dir: string,
    private readonly logger: Logger,
  ) {
    this.file = new JsonFile(dir, FILE_NAME, {
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
  }

  /** The records the file holds; none when it is missing or unreadable (said in a log line). */
  async load(): Promise<TaskRecord[]> {
    const { records } = await this.file.load().catch((error: unknown) => {
      this.logger.warning("the MCP task records could not be read; starting with none", {
        error: String(error),
      });
      return { records: [] };
    });
    this.onDisk ||= records.length > 0;
    return records;
  }

  /**
   * Queues a write of `records` (those not marked ephemeral), beside the records of the file that belong to
   * other processes and have not expired: one that runs, or one that stopped (a restart takes them up).
   */
  save(records: Iterable<TaskRecord>): void {
    const kept = [...records].filter((record) => record.ephemeral !== true);
    if (kept.length === 0 && !this.onDisk) return;
    this.onDisk = true;
    const ours = new Set(kept.map((record) => record.task.taskId));
    void this.file
      .update((saved) => {
        const others = saved.records.filter(
          (record) =>
            !ours.has(record.task.taskId) &&
            record.pid !== undefined &&
            record.pid !== process.pid &&
            expiresAt(record.task) > Date.now(),
        );
        return { next: { version: 1, records: [...kept, ...others] }, result: undefined };
      })
      .catch((error: unknown) => {
        this.logger.warning("the MCP task records could not be written", { error: String(error) });
      });
  }

  written(): Promise<void> {
    return this.file.settled();
  }
}
