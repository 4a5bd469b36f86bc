/**
 * The day's spend of this process's callers, kept beside the journal (one small JSON file per service key's
 * state folder) so that it survives a restart: stdio servers are restarted by their clients all the time, and
 * a daily limit that a restart resets would be no limit. Each reservation reads the file again (another
 * process of the same key may have spent meanwhile), then writes it whole through a temporary file and a
 * rename, so a crash leaves the old record or the new one, never half of one. The read and the write are
 * made under a lock file (state/file-lock.ts), so two processes sharing the folder (two stdio clients on
 * one key) never both take the last of the day's allowance. Only the current day is kept. A reservation that
 * cannot be written is refused: the file is what every later reservation (and a restart) counts from, so a
 * start it does not hold would be spent beyond the limit.
 */
import { randomBytes } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { GenerationError, type GenerationErrorInit } from "../api/errors.js";
import { fix } from "../advice.js";
import { isObject } from "../api/shapes.js";
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
  /** The last write failed: the record may no longer be written, and `used` tries again before it answers. */
  private unwritable = false;

  /** `dir` undefined: kept in memory only (the embedded sandbox, whose credits end with the process). */
  constructor(
    private readonly dir: string | undefined,
    private readonly logger: TaskLogger = silentLogger,
  ) {}

  /** Whether anything of `day` is recorded, here or in the file, or cannot be told: the folder then stays. */
  holds(day: string): Promise<boolean> {
    return this.serialized(async () =>
      Object.values((await this.load(day)).used).some((used) => used > 0),
    ).catch(() => true);
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
      await this.save({ day, used: { ...record.used, [caller]: used + amount } });
      return { reserved: true, used: used + amount };
    });
  }

  release(caller: string, day: string, amount: number): Promise<void> {
    return this.serialized(async () => {
      const record = await this.load(day);
      const used = record.used[caller];
      if (used === undefined) return;
      await this.save({ day, used: { ...record.used, [caller]: Math.max(0, used - amount) } });
    }).catch((error: unknown) => {
      // Not given back: the day counts a start the service refused, the safe side of a limit.
      if (!(error instanceof SpendRecordUnavailableError)) throw error;
    });
  }

  /** Throws SpendRecordUnavailableError while the record cannot be read, or written (no start can count). */
  used(caller: string, day: string): Promise<number> {
    return this.serialized(async () => {
      const record = await this.load(day);
      // Written again, unchanged, to learn whether starts can be counted now (space may have been freed).
      if (this.unwritable) await this.save(record);
      return record.used[caller] ?? 0;
    });
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
    const lock = join(this.dir, `${SPEND_FILE}.lock`);
    try {
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      return await withFileLock(lock, run);
    } catch (error) {
      if (error instanceof SpendRecordUnavailableError) throw error;
      if (error instanceof LockTimeoutError) {
        this.logger("error", "The spend record stayed locked by another process; nothing was started.", {
          path: lock,
        });
        throw new SpendRecordLockedError();
      }
      // The folder or its lock file cannot be made (a full disk, a read-only folder).
      if (typeof (error as NodeJS.ErrnoException).syscall !== "string") throw error;
      throw this.unwritten(lock, error);
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
    const file = join(this.dir ?? "", SPEND_FILE);
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw new SpendRecordUnavailableError(`${this.where()} could not be read (${fsReason(error)})`, {
        cause: error,
        transient: false,
        nextStep: `Ask the user to ${fix("state_dir")}, then call the tool again.`,
      });
    }
    try {
      return parseRecord(JSON.parse(text));
    } catch {
      this.logger("warning", "The spend record could not be read; it is written again from memory.", {});
      return undefined;
    }
  }

  /** Writes `record` and makes it this process's; or throws SpendRecordUnavailableError, keeping the old. */
  private async save(record: DayRecord): Promise<void> {
    if (this.dir === undefined) {
      this.record = record;
      return;
    }
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
      throw this.unwritten(file, error);
    }
    this.record = record;
    this.unwritable = false;
  }

  private unwritten(path: string, error: unknown): SpendRecordUnavailableError {
    this.unwritable = true;
    this.logger("error", "Could not write the spend record; no start is sent until it can be written.", {
      path,
      error: String(error),
    });
    return new SpendRecordUnavailableError(
      `${this.where()} could not be written (${fsReason(error)}); the daily limit (GENERATION_DAILY_CREDITS) cannot be kept without it`,
      {
        cause: error,
        transient: false,
        nextStep: `Ask the user to ${fix("state_dir")}, then call the tool again.`,
      },
    );
  }

  private where(): string {
    return `(${SPEND_FILE} in ${this.dir ?? ""}, under the state folder GENERATION_STATE_DIR)`;
  }
}

/** `ENOSPC: no space left on device` of a file system error, without the path and call it names after. */
function fsReason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split(", ")[0] ?? message;
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

/**
 * Today's spend record cannot be used, so the start was not sent. `problem` completes "Today's spend record
 * ..." (get_credits says it too, when it cannot tell the allowance).
 */
export class SpendRecordUnavailableError extends GenerationError {
  override name = "SpendRecordUnavailableError";
  constructor(
    readonly problem: string,
    init: GenerationErrorInit,
  ) {
    super(
      "internal_error",
      `Today's spend record ${problem}, so the start was not sent: nothing reached the service and nothing was charged.`,
      init,
    );
  }
}

/** The spend record's lock was held past its wait by another process: nothing was sent. */
export class SpendRecordLockedError extends SpendRecordUnavailableError {
  override name = "SpendRecordLockedError";
  constructor() {
    super("(spend.json in the state folder) stayed locked by another generation-mcp process", {
      transient: true,
      nextStep:
        "Call the tool again in a moment. If it keeps failing, ask the user to check for a stuck generation-mcp process using the same state folder.",
    });
  }
}
