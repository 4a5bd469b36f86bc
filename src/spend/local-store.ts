/**
 * The day's spend of this process's callers, kept beside the journal (one small JSON file per service key's
 * state folder) so that it survives a restart: stdio servers are restarted by their clients all the time, and
 * a daily limit that a restart resets would be no limit. Each reservation reads the file again (another
 * process of the same key may have spent meanwhile), then writes it whole through a temporary file and a
 * rename, so a crash leaves the old record or the new one, never half of one. The read and the write are
 * made under a lock file (state/file-lock.ts), so two processes sharing the folder (two stdio clients on
 * one key) never both take the last of the day's allowance. Only the current day is kept.
 */
import { randomBytes } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { GenerationError } from "../api/errors.js";
import { isObject } from "../api/normalize.js";
import { LockTimeoutError, withFileLock } from "../state/file-lock.js";
import type { TaskLogger } from "../tasks/logger.js";
import { silentLogger } from "../tasks/logger.js";
import type { SpendStore } from "../state/shared-state.js";

export const SPEND_FILE = "spend.json";
/** Callers kept per day at most: a flood of gateway callers cannot grow the file without bound. */
const MAX_CALLERS = 10_000;

interface DayRecord {
  day: string;
  /** Hundredths of a credit, by caller digest. */
  used: Record<string, number>;
}

export class LocalSpendStore implements SpendStore {
  private record: DayRecord = { day: "", used: {} };
  private queue: Promise<unknown> = Promise.resolve();

  /** `dir` undefined: kept in memory only (the embedded sandbox, whose credits end with the process). */
  constructor(
    private readonly dir: string | undefined,
    private readonly logger: TaskLogger = silentLogger,
  ) {}

  /** Whether anything of `day` is recorded, here or in the file (the state folder then stays). */
  holds(day: string): Promise<boolean> {
    return this.serialized(async () => Object.values((await this.load(day)).used).some((used) => used > 0));
  }

  reserve(
    caller: string,
    day: string,
    amount: number,
    limit: number,
  ): Promise<{ reserved: boolean; used: number }> {
    return this.serialized(async () => {
      const record = await this.load(day);
      const used = record.used[caller] ?? 0;
      if (used + amount > limit) return { reserved: false, used };
      record.used[caller] = used + amount;
      await this.save(record);
      return { reserved: true, used: used + amount };
    });
  }

  release(caller: string, day: string, amount: number): Promise<void> {
    return this.serialized(async () => {
      const record = await this.load(day);
      const used = record.used[caller];
      if (used === undefined) return;
      record.used[caller] = Math.max(0, used - amount);
      await this.save(record);
    }).catch((error: unknown) => {
      // Not given back: the day counts a start the service refused, the safe side of a limit.
      if (!(error instanceof SpendRecordLockedError)) throw error;
    });
  }

  used(caller: string, day: string): Promise<number> {
    return this.serialized(async () => (await this.load(day)).used[caller] ?? 0);
  }

  /** One at a time in this process, and under the folder's lock against the other processes sharing it. */
  private serialized<T>(run: () => Promise<T>): Promise<T> {
    const locked = () => this.locked(run);
    const next = this.queue.then(locked, locked);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async locked<T>(run: () => Promise<T>): Promise<T> {
    if (this.dir === undefined) return run();
    try {
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      return await withFileLock(join(this.dir, `${SPEND_FILE}.lock`), run);
    } catch (error) {
      if (!(error instanceof LockTimeoutError)) throw error;
      this.logger("error", "The spend record stayed locked by another process; nothing was started.", {
        path: join(this.dir, `${SPEND_FILE}.lock`),
      });
      throw new SpendRecordLockedError();
    }
  }

  /** The day's record: the file's when it is readable and of this day, else what this process holds. */
  private async load(day: string): Promise<DayRecord> {
    if (this.dir !== undefined) {
      const fromFile = await this.readFile();
      if (fromFile !== undefined) this.record = fromFile;
    }
    if (this.record.day !== day) this.record = { day, used: {} };
    return this.record;
  }

  private async readFile(): Promise<DayRecord | undefined> {
    let text: string;
    try {
      text = await readFile(join(this.dir ?? "", SPEND_FILE), "utf8");
    } catch {
      return undefined;
    }
    try {
      return parseRecord(JSON.parse(text));
    } catch {
      this.logger("warning", "The spend record could not be read; it is written again from memory.", {});
      return undefined;
    }
  }

  private async save(record: DayRecord): Promise<void> {
    if (this.dir === undefined) return;
    const entries = Object.entries(record.used);
    if (entries.length > MAX_CALLERS) {
      // The biggest spenders are the ones a limit is for: the smallest totals go first.
      record.used = Object.fromEntries(entries.sort(([, a], [, b]) => b - a).slice(0, MAX_CALLERS));
    }
    const file = join(this.dir, SPEND_FILE);
    const temporary = `${file}.${randomBytes(4).toString("hex")}.tmp`;
    try {
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      await writeFile(temporary, `${JSON.stringify(record)}\n`, { mode: 0o600, flush: true });
      await rename(temporary, file);
    } catch (error) {
      await rm(temporary, { force: true }).catch(() => undefined);
      // The start is not refused for it: this process still counts in memory.
      this.logger("error", "Could not write the spend record; a restart may forget today's spend.", {
        path: file,
        error: String(error),
      });
    }
  }
}

function parseRecord(value: unknown): DayRecord | undefined {
  if (!isObject(value) || typeof value["day"] !== "string" || !isObject(value["used"])) return undefined;
  const used: Record<string, number> = {};
  for (const [caller, amount] of Object.entries(value["used"])) {
    if (
      /^[0-9a-f]{1,64}$/.test(caller) &&
      typeof amount === "number" &&
      Number.isFinite(amount) &&
      amount >= 0
    ) {
      used[caller] = Math.round(amount);
    }
  }
  return { day: value["day"], used };
}

/** The spend record's lock was held past its wait by another process: nothing was sent. */
export class SpendRecordLockedError extends GenerationError {
  override name = "SpendRecordLockedError";
  constructor() {
    super(
      "internal_error",
      "Today's spend record (spend.json in the state folder) stayed locked by another generation-mcp process, so the start was not sent: nothing reached the service and nothing was charged.",
      {
        transient: true,
        nextStep:
          "Call the tool again in a moment. If it keeps failing, ask the user to check for a stuck generation-mcp process using the same state folder.",
      },
    );
  }
}
