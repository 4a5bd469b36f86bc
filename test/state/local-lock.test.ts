/**
 * The local spend record shared by processes of one state folder: two stores (as two processes would be;
 * nothing but the folder's lock file coordinates them) racing for the day's last credits take exactly the
 * limit, a lock left by a dead owner, or held too long, does not stop the next start, and a record that
 * cannot be written refuses the reservation (a release it cannot write keeps the count).
 */
import { spawnSync } from "node:child_process";
import { mkdtemp, rename, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LocalSpendStore } from "../../src/state/local/spend.js";
import { LOCK_FILE, StateFileError } from "../../src/state/local/store.js";

let dir: string;
const lock = () => path.join(dir, LOCK_FILE);

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "generation-mcp-spend-lock-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The pid of a process that has exited: nothing runs under it now. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]);
  return Number(child.stdout.toString());
}

describe("the local spend record", () => {
  it("lets two stores of one folder, racing, reserve exactly the limit between them", async () => {
    const stores = [new LocalSpendStore(dir), new LocalSpendStore(dir)];
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, (_, attempt) =>
        stores[attempt % 2]!.reserve("ab12", "2026-11-24", 100, 1000),
      ),
    );
    expect(outcomes.filter((outcome) => outcome.reserved)).toHaveLength(10);
    expect(await new LocalSpendStore(dir).used("ab12", "2026-11-24")).toBe(1000);
  });

  it("takes over a lock whose owner has died", async () => {
    await writeFile(lock(), String(deadPid()));
    const started = Date.now();
    await expect(new LocalSpendStore(dir).reserve("ab12", "2026-11-24", 100, 1000)).resolves.toEqual({
      reserved: true,
      used: 100,
    });
    // Not the wait for a stale lock's age: the dead owner was recognised at once.
    expect(Date.now() - started).toBeLessThan(4000);
  });

  it("takes over a lock held past its time by a process that still runs", async () => {
    // pid 1 runs (as another user: EPERM still means running).
    await writeFile(lock(), "1");
    const old = new Date(Date.now() - 60_000);
    await utimes(lock(), old, old);
    await expect(new LocalSpendStore(dir).reserve("ab12", "2026-11-24", 100, 1000)).resolves.toMatchObject({
      reserved: true,
    });
  });

  it("waits while another running process holds the lock, and goes on once it is released", async () => {
    await writeFile(lock(), "1");
    let settled = false;
    const reservation = new LocalSpendStore(dir)
      .reserve("ab12", "2026-11-24", 100, 1000)
      .finally(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(settled).toBe(false);
    await rm(lock());
    await expect(reservation).resolves.toMatchObject({ reserved: true, used: 100 });
  });

  it("refuses a reservation it cannot write, and keeps a release it cannot write counted", async () => {
    const folder = path.join(dir, "key");
    const store = new LocalSpendStore(folder);
    await store.reserve("ab12", "2026-11-24", 100, 1000);
    // The key's folder is a file now: nothing can be written there (ENOTDIR, EEXIST), as on a broken disk.
    await rename(folder, `${folder}.away`);
    await writeFile(folder, "not a folder");
    const refused = await store.reserve("ab12", "2026-11-24", 100, 1000).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(StateFileError);
    expect((refused as Error).message).toContain(folder);
    expect((refused as Error).message).toContain("GENERATION_STATE_DIR");
    expect((refused as Error).message).toContain("nothing was charged");
    await expect(store.used("ab12", "2026-11-24")).rejects.toBeInstanceOf(StateFileError);
    await store.release("ab12", "2026-11-24", 100);

    await rm(folder);
    await rename(`${folder}.away`, folder);
    // Neither the refused reservation nor the unwritten release changed the count: 100, as before.
    expect(await store.used("ab12", "2026-11-24")).toBe(100);
    expect(await new LocalSpendStore(folder).used("ab12", "2026-11-24")).toBe(100);
  });
});
