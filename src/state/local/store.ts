/**
 * The one store under every local state: a JSON document per file in the key's state folder. A change is made
 * under the folder's lock on the document as the file holds it then, so processes sharing the folder keep
 * each other's records and never both take the last of anything; it is written whole through a synced
 * temporary file and a rename (a crash leaves the old document or the new one). A change that cannot be
 * written throws StateFileError: what depends on it is refused, not done unrecorded.
 *
 * The lock is an O_EXCL file holding its owner's pid; a dead owner's lock (kill -9) is taken over at once,
 * one older than STALE_MS too. Not proper-lockfile: it cannot tell a dead owner and needs a timer per lock.
 */
import { randomBytes } from "node:crypto";
import { mkdir, open, readFile, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fix } from "../../advice.js";
import { GenerationError, type GenerationErrorInit } from "../../api/errors.js";
import type { TaskLogger } from "../records.js";

export const LOCK_FILE = "state.lock";
/** Longer than any read and write of a small file, even on a slow disk. */
const STALE_MS = 5_000;
/** Past STALE_MS, so a dead owner's lock is always taken over before a waiter gives up. */
const WAIT_MS = 8_000;

/** A record of the state folder could not be read or written. `problem` completes "<the record> ...". */
export class StateFileError extends GenerationError {
  override name = "StateFileError";
  constructor(
    label: string,
    readonly problem: string,
    init: GenerationErrorInit,
  ) {
    super(
      "internal_error",
      `${label} ${problem}, so the start was not sent: nothing reached the service and nothing was charged.`,
      init,
    );
  }
}

export class JsonFile<T> {
  readonly path: string | undefined;
  private doc: T;
  /** The file's inode, size and mtime as last read or written: another process's write changes it. */
  private seen = "";
  private queue: Promise<unknown> = Promise.resolve();

  /** `dir` undefined: in this process only. `parse` drops invalid parts; from `undefined`: the empty one. */
  constructor(
    readonly dir: string | undefined,
    readonly name: string,
    private readonly options: {
      label: string;
      parse: (value: unknown) => T;
      logger?: TaskLogger | undefined;
    },
  ) {
    this.path = dir === undefined ? undefined : join(dir, name);
    this.doc = options.parse(undefined);
  }

  get value(): T {
    return this.doc;
  }

  /** The document as the file holds it now (read again only when it changed). */
  load(): Promise<T> {
    return this.serialized(() => this.read());
  }

  /** Changes the document under the folder's lock and writes it, unless `change` leaves `next` out. */
  update<R>(change: (doc: T) => { next?: T; result: R }): Promise<R> {
    return this.serialized(() =>
      this.locked(async () => {
        const { next, result } = change(await this.read());
        if (next !== undefined) await this.write(next);
        return result;
      }),
    );
  }

  async settled(): Promise<void> {
    await this.queue;
  }

  private serialized<R>(run: () => Promise<R>): Promise<R> {
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async read(): Promise<T> {
    if (this.path === undefined) return this.doc;
    let text: string;
    try {
      const stamp = await stampOf(this.path);
      if (stamp === this.seen) return this.doc;
      text = await readFile(this.path, "utf8");
      this.seen = stamp;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") {
        this.seen = "";
        this.doc = this.options.parse(undefined);
        return this.doc;
      }
      throw this.failure("read", error);
    }
    try {
      this.doc = this.options.parse(JSON.parse(text));
    } catch {
      // Only something other than this server writes a torn or foreign document: the next change replaces it.
      this.options.logger?.("warning", `${this.name} could not be read; it is written again.`, {
        path: this.path,
      });
    }
    return this.doc;
  }

  private async write(next: T): Promise<void> {
    if (this.dir === undefined || this.path === undefined) {
      this.doc = next;
      return;
    }
    const temporary = `${this.path}.${randomBytes(4).toString("hex")}.tmp`;
    try {
      const handle = await open(temporary, "w", 0o600);
      await handle
        .writeFile(`${JSON.stringify(next)}\n`)
        .then(() => handle.sync())
        .finally(() => handle.close());
      await rename(temporary, this.path);
    } catch (error) {
      await rm(temporary, { force: true }).catch(() => undefined);
      throw this.failure("written", error);
    }
    await syncFolder(this.dir);
    this.doc = next;
    this.seen = await stampOf(this.path).catch(() => "");
  }

  private async locked<R>(run: () => Promise<R>): Promise<R> {
    if (this.dir === undefined) return run();
    const lock = join(this.dir, LOCK_FILE);
    const deadline = Date.now() + WAIT_MS;
    try {
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      while (!(await tryLock(lock))) {
        if (await takeOverStale(lock)) continue;
        if (Date.now() > deadline) {
          throw new StateFileError(
            this.options.label,
            `(${this.name} in the state folder) stayed locked by another generation-mcp process`,
            {
              transient: true,
              nextStep:
                "Call the tool again in a moment. If it keeps failing, ask the user to check for a stuck generation-mcp process using the same state folder.",
            },
          );
        }
        await sleep(5);
      }
    } catch (error) {
      throw error instanceof StateFileError ? error : this.failure("written", error);
    }
    try {
      return await run();
    } finally {
      await rm(lock, { force: true }).catch(() => undefined);
    }
  }

  private failure(verb: "read" | "written", error: unknown): StateFileError {
    const where = `(${this.name} in ${this.dir ?? ""}, under the state folder GENERATION_STATE_DIR)`;
    // `ENOSPC: no space left on device`, without the path and call Node names after it.
    const reason = (error instanceof Error ? error.message : String(error)).split(", ")[0];
    return new StateFileError(this.options.label, `${where} could not be ${verb} (${reason})`, {
      cause: error,
      transient: false,
      nextStep: `Ask the user to ${fix("state_dir")}, then call the tool again.`,
    });
  }
}

async function stampOf(path: string): Promise<string> {
  const info = await stat(path, { bigint: true });
  return `${info.ino}:${info.size}:${info.mtimeNs}`;
}

/** Makes a rename durable where the platform allows it (not on Windows, where opening a folder fails). */
async function syncFolder(dir: string): Promise<void> {
  const handle = await open(dir, "r").catch(() => undefined);
  await handle
    ?.sync()
    .catch(() => undefined)
    .finally(() => handle.close());
}

async function tryLock(path: string): Promise<boolean> {
  const handle = await open(path, "wx", 0o600).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "EEXIST") return undefined;
    throw error;
  });
  if (handle === undefined) return false;
  await handle
    .writeFile(String(process.pid))
    .finally(() => handle.close())
    .catch(async (error: unknown) => {
      // A full disk: no lock is held, and an empty lock file left behind would make every waiter wait it out.
      await rm(path, { force: true });
      throw error;
    });
  return true;
}

/** Removes the lock when its owner is gone or held it past STALE_MS, unless another waiter replaced it. */
async function takeOverStale(path: string): Promise<boolean> {
  try {
    const [info, text] = await Promise.all([stat(path), readFile(path, "utf8")]);
    const pid = Number(text);
    const stale =
      Date.now() - info.mtimeMs > STALE_MS ||
      // Written just after creation: an empty file is a lock being taken right now.
      (Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && !isProcessRunning(pid));
    if (!stale || (await stat(path)).ino !== info.ino) return false;
    await rm(path, { force: true });
    return true;
  } catch {
    // Removed meanwhile: the next try takes it.
    return false;
  }
}

/** Whether a process `pid` runs on this machine (as this user or another: EPERM). */
export function isProcessRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
