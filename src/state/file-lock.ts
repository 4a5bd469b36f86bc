/**
 * A lock between the processes that share one state folder (two stdio servers of one key: Claude Desktop
 * and Claude Code side by side), for a read-modify-write of a small file. The lock is a file created with
 * O_EXCL holding its owner's pid; it is held for a read and a write of a few hundred bytes. A lock whose
 * owner has died (kill -9 while holding it) or that is older than STALE_MS is taken over. Waiting is
 * bounded: past WAIT_MS the caller is told so and decides (the spend store then refuses to guess).
 */
import { open, readFile, rm, stat } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";

/** Longer than any read and write of a small file, even on a slow disk. */
const STALE_MS = 5_000;
/** How long a caller waits for a lock at most: past STALE_MS, so a dead owner's lock is always taken over. */
const WAIT_MS = 8_000;
const RETRY_MS = 5;

export class LockTimeoutError extends Error {
  constructor(path: string) {
    super(`Timed out waiting for the lock ${path}`);
  }
}

/** Runs `run` while holding the lock file `path`; the lock is removed after, whatever `run` does. */
export async function withFileLock<T>(path: string, run: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    if (await tryTake(path)) break;
    const stale = await staleLock(path);
    if (stale !== undefined) {
      await removeIfSame(path, stale);
      continue;
    }
    if (Date.now() > deadline) throw new LockTimeoutError(path);
    await sleep(RETRY_MS);
  }
  try {
    return await run();
  } finally {
    await rm(path, { force: true }).catch(() => undefined);
  }
}

async function tryTake(path: string): Promise<boolean> {
  try {
    const handle = await open(path, "wx", 0o600);
    try {
      await handle.writeFile(String(process.pid));
    } catch (error) {
      // A full disk: no lock is held, and an empty lock file left behind would make every waiter wait it out.
      await handle.close();
      await rm(path, { force: true });
      throw error;
    }
    await handle.close();
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
}

/**
 * The inode of the lock when its owner is gone (its pid no longer runs, or it has held the lock past
 * STALE_MS); undefined while it is held, or when it is gone already.
 */
async function staleLock(path: string): Promise<number | undefined> {
  try {
    const [info, text] = await Promise.all([stat(path), readFile(path, "utf8")]);
    if (Date.now() - info.mtimeMs > STALE_MS) return info.ino;
    const pid = Number(text);
    // Written just after creation: an empty file is a lock being taken right now.
    if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
    return isProcessRunning(pid) ? undefined : info.ino;
  } catch {
    // Removed meanwhile: simply free; the next try takes it.
    return undefined;
  }
}

/**
 * Removes the stale lock, unless another waiter has already removed it and taken a new one meanwhile (a
 * new file, another inode). The window between the check and the removal is tiny, and it only opens
 * after an owner died holding the lock.
 */
async function removeIfSame(path: string, ino: number): Promise<void> {
  try {
    if ((await stat(path)).ino === ino) await rm(path, { force: true });
  } catch {
    // Gone already.
  }
}

/** Whether a process `pid` runs on this machine (as this user or another). */
export function isProcessRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
