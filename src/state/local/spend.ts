/**
 * The day's spend of this process's callers (`spend.json`), so a daily limit survives a restart (stdio
 * clients restart servers all the time). Each reservation is made on the file as it stands and written before
 * it is granted: one that cannot be written is refused. Only the current day is kept.
 */
import { isObject } from "../../api/shapes.js";
import { silentLogger, type SpendStore, type TaskLogger } from "../records.js";
import { JsonFile, StateFileError } from "./store.js";

/** Callers kept per day at most: a flood of gateway callers cannot grow the file without bound. */
const MAX_CALLERS = 10_000;

interface DayRecord {
  day: string;
  /** Hundredths of a credit, by caller digest. */
  used: Record<string, number>;
}

export class LocalSpendStore implements SpendStore {
  private readonly file: JsonFile<DayRecord>;
  /** The last write failed: `used` tries one again before it answers (space may have been freed). */
  private unwritable = false;

  /** `dir` undefined: in memory only. */
  constructor(
    dir: string | undefined,
    private readonly logger: TaskLogger = silentLogger,
  ) {
    this.file = new JsonFile(dir, "spend.json", { label: "Today's spend record", parse: parseDay, logger });
  }

  /** Whether anything of today (UTC) is recorded, or it cannot be told. */
  async holds(): Promise<boolean> {
    const record = await this.file.load().catch(() => undefined);
    const today = new Date().toISOString().slice(0, 10);
    return (
      record === undefined || (record.day === today && Object.values(record.used).some((used) => used > 0))
    );
  }

  reserve(caller: string, day: string, amount: number, limit: number) {
    return this.change(day, (used) => {
      const mine = used[caller] ?? 0;
      if (mine + amount > limit) return { result: { reserved: false, used: mine } };
      return { next: { ...used, [caller]: mine + amount }, result: { reserved: true, used: mine + amount } };
    });
  }

  async release(caller: string, day: string, amount: number): Promise<void> {
    await this.change(day, (used) => {
      const mine = used[caller];
      if (mine === undefined) return { result: undefined };
      return { next: { ...used, [caller]: Math.max(0, mine - amount) }, result: undefined };
    }).catch((error: unknown) => {
      // Not given back: the day counts a start the service refused, the safe side of a limit.
      if (!(error instanceof StateFileError)) throw error;
    });
  }

  /** Throws StateFileError while the record cannot be read or written (no start could be counted). */
  used(caller: string, day: string): Promise<number> {
    return this.change(day, (used) => ({
      ...(this.unwritable && { next: used }),
      result: used[caller] ?? 0,
    }));
  }

  private async change<R>(
    day: string,
    change: (used: Record<string, number>) => { next?: Record<string, number>; result: R },
  ): Promise<R> {
    try {
      const result = await this.file.update((record) => {
        const { next, result } = change(record.day === day ? record.used : {});
        return { ...(next !== undefined && { next: { day, used: bounded(next) } }), result };
      });
      this.unwritable = false;
      return result;
    } catch (error) {
      if (error instanceof StateFileError && !error.transient) {
        this.unwritable = true;
        this.logger("error", "Could not write the spend record; no start is sent until it can be written.", {
          path: this.file.path,
          error: String(error.cause),
        });
      }
      throw error;
    }
  }
}

/** The biggest spenders are the ones a limit is for: past the bound, the smallest totals go first. */
function bounded(used: Record<string, number>): Record<string, number> {
  const entries = Object.entries(used);
  if (entries.length <= MAX_CALLERS) return used;
  return Object.fromEntries(entries.sort(([, a], [, b]) => b - a).slice(0, MAX_CALLERS));
}

function parseDay(value: unknown): DayRecord {
  const used: Record<string, number> = {};
  const record = isObject(value) && isObject(value["used"]) ? value["used"] : {};
  for (const [caller, amount] of Object.entries(record)) {
    if (
      typeof amount === "number" &&
      Number.isFinite(amount) &&
      amount >= 0 &&
      /^[0-9a-f]{1,64}$/.test(caller)
    )
      used[caller] = Math.round(amount);
  }
  return { day: isObject(value) && typeof value["day"] === "string" ? value["day"] : "", used };
}
