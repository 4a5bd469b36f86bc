/**
 * The MCP task records of one service key on disk: one small JSON file beside the journal, written one
 * write at a time and atomically (a crash leaves the old file or the new), created only once there is a
 * record to keep. Two processes of one key (two stdio clients side by side) share the file: each writes its
 * own records and keeps the other processes' (read again under the folder's lock just before writing), so
 * neither drops what the other follows.
 */
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Logger } from "../../logger.js";
import { isProcessRunning, withFileLock } from "../../state/file-lock.js";
import { expiresAt, parseRecord, type TaskRecord } from "./records.js";

/** Whether another process, still running, follows the record: it is that process's to keep and to end. */
export function followedElsewhere(record: TaskRecord): boolean {
  return record.pid !== undefined && record.pid !== process.pid && isProcessRunning(record.pid);
}

const FILE_NAME = "mcp-tasks.json";

export class RecordsFile {
  private readonly file: string;
  /** Whether the file exists (or will once written): an empty record set never creates it. */
  private onDisk = false;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    dir: string,
    private readonly logger: Logger,
  ) {
    this.file = path.join(dir, FILE_NAME);
  }

  /** The records the file holds; none when it is missing or unreadable (said in a log line). */
  async load(): Promise<TaskRecord[]> {
    let text: string;
    try {
      text = await readFile(this.file, "utf8");
    } catch {
      return []; // No records yet.
    }
    this.onDisk = true;
    return this.parse(text);
  }

  private parse(text: string): TaskRecord[] {
    let saved: { records?: unknown };
    try {
      saved = JSON.parse(text) as { records?: unknown };
    } catch {
      this.logger.warning("the MCP task records could not be read; starting with none", { file: this.file });
      return [];
    }
    const records: TaskRecord[] = [];
    let skipped = 0;
    for (const value of Array.isArray(saved.records) ? saved.records : []) {
      const record = parseRecord(value);
      if (record === undefined) skipped += 1;
      else records.push(record);
    }
    if (skipped > 0) {
      this.logger.warning(`${skipped} MCP task record(s) in ${FILE_NAME} were not valid and were skipped`);
    }
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
    const file = this.file;
    this.writing = this.writing.then(async () => {
      try {
        await mkdir(path.dirname(file), { recursive: true });
        await withFileLock(`${file}.lock`, async () => {
          const ours = new Set(kept.map((record) => record.task.taskId));
          const now = Date.now();
          const others = (await this.load()).filter(
            (record) =>
              !ours.has(record.task.taskId) &&
              record.pid !== undefined &&
              record.pid !== process.pid &&
              expiresAt(record.task) > now,
          );
          const temporary = `${file}.${process.pid}.tmp`;
          await writeFile(temporary, JSON.stringify({ version: 1, records: [...kept, ...others] }), {
            mode: 0o600,
          });
          await rename(temporary, file);
        });
      } catch (error) {
        this.logger.warning("the MCP task records could not be written", { error: String(error) });
      }
    });
  }

  /** Resolves once every queued write is done. */
  written(): Promise<void> {
    return this.writing;
  }
}
