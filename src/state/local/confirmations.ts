/**
 * The cost confirmations already answered (`confirmations.json`), by a digest of the state, until it expires.
 * Once full of live entries a new answer is not taken (the user is asked again): an old one forgotten could
 * be replayed.
 */
import { isObject } from "../../api/shapes.js";
import { silentLogger, type TaskLogger, type UsedConfirmations } from "../records.js";
import { JsonFile } from "./store.js";

const MAX_ENTRIES = 10_000;

export class LocalConfirmations implements UsedConfirmations {
  private readonly file: JsonFile<Record<string, number>>;

  constructor(dir: string | undefined, logger: TaskLogger = silentLogger) {
    this.file = new JsonFile(dir, "confirmations.json", {
      label: "The record of answered cost confirmations",
      parse: (value) =>
        Object.fromEntries(
          Object.entries(isObject(value) ? value : {}).filter(
            ([digest, until]) => /^[A-Za-z0-9_-]{1,64}$/.test(digest) && typeof until === "number",
          ),
        ) as Record<string, number>,
      logger,
    });
  }

  use(digest: string, ttlMs: number): Promise<boolean> {
    return this.file.update((used) => {
      const now = Date.now();
      const live = Object.fromEntries(Object.entries(used).filter(([, until]) => until > now));
      if (digest in live || Object.keys(live).length >= MAX_ENTRIES) return { result: false };
      return { next: { ...live, [digest]: now + ttlMs }, result: true };
    });
  }

  /** Whether an answer still lives: the folder then stays. */
  async holds(): Promise<boolean> {
    const used = await this.file.load().catch(() => undefined);
    return used === undefined || Object.values(used).some((until) => until > Date.now());
  }
}
