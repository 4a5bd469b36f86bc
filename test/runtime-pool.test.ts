/** One runtime per service key: made once, counted while calls run, capped, closed when idle. */
import { describe, expect, it } from "vitest";
import { redact } from "../src/redact.js";
import type { Runtime } from "../src/runtime.js";
import { RuntimePool, TooManyCallsError, keyDigest } from "../src/runtime-pool.js";

function fakeRuntimes() {
  const made: string[] = [];
  const closed: string[] = [];
  const create = async (apiKey: string): Promise<Runtime> => {
    made.push(apiKey);
    return {
      depsFactory: () => {
        throw new Error("not used");
      },
      client: undefined as never,
      tasks: undefined as never,
      close: async () => {
        closed.push(apiKey);
      },
    };
  };
  return { made, closed, create };
}

describe("RuntimePool", () => {
  it("makes one runtime per key, even for calls that arrive together", async () => {
    const runtimes = fakeRuntimes();
    const pool = new RuntimePool({ create: runtimes.create, maxConcurrentPerKey: 8 });
    const leases = await Promise.all([
      pool.acquire("sk-key-one-123456"),
      pool.acquire("sk-key-one-123456"),
      pool.acquire("sk-key-two-123456"),
    ]);
    expect(runtimes.made).toEqual(["sk-key-one-123456", "sk-key-two-123456"]);
    expect(leases[0]?.runtime).toBe(leases[1]?.runtime);
    expect(leases[0]?.runtime).not.toBe(leases[2]?.runtime);
    await pool.close();
  });

  it("caps the calls one key may run at once, and counts released calls back", async () => {
    const runtimes = fakeRuntimes();
    const pool = new RuntimePool({ create: runtimes.create, maxConcurrentPerKey: 2 });
    const first = await pool.acquire("sk-capped-123456");
    await pool.acquire("sk-capped-123456");
    await expect(pool.acquire("sk-capped-123456")).rejects.toBeInstanceOf(TooManyCallsError);
    // Another key is not slowed by this one.
    await expect(pool.acquire("sk-other-123456")).resolves.toBeDefined();
    first.release();
    first.release();
    await expect(pool.acquire("sk-capped-123456")).resolves.toBeDefined();
    await expect(pool.acquire("sk-capped-123456")).rejects.toBeInstanceOf(TooManyCallsError);
    await pool.close();
  });

  it("closes a runtime idle past its time, never one with calls running, and masks live keys only", async () => {
    let now = 0;
    const runtimes = fakeRuntimes();
    const pool = new RuntimePool({
      create: runtimes.create,
      maxConcurrentPerKey: 4,
      idleMs: 1000,
      now: () => now,
    });
    const busy = await pool.acquire("sk-busy-bbbb2222");
    const idle = await pool.acquire("sk-idle-aaaa1111");
    idle.release();
    expect(redact("sk-idle-aaaa1111")).toBe("[redacted]");
    now = 5000;
    await (pool as unknown as { sweep(): Promise<void> }).sweep();
    expect(runtimes.closed).toEqual(["sk-idle-aaaa1111"]);
    expect(pool.size).toBe(1);
    expect(redact("sk-idle-aaaa1111")).toBe("sk-idle-aaaa1111");
    expect(redact("sk-busy-bbbb2222")).toBe("[redacted]");
    busy.release();
    await pool.close();
    expect(runtimes.closed).toEqual(["sk-idle-aaaa1111", "sk-busy-bbbb2222"]);
  });

  it("keeps at most maxRuntimes, closing the longest idle first", async () => {
    let now = 0;
    const runtimes = fakeRuntimes();
    const pool = new RuntimePool({
      create: runtimes.create,
      maxConcurrentPerKey: 4,
      maxRuntimes: 2,
      now: () => now,
    });
    (await pool.acquire("sk-first-123456")).release();
    now = 10;
    (await pool.acquire("sk-second-123456")).release();
    now = 20;
    await pool.acquire("sk-third-123456");
    await new Promise((resolve) => setImmediate(resolve));
    expect(runtimes.closed).toEqual(["sk-first-123456"]);
    await pool.close();
  });

  it("names keys by a hash, never by the key", () => {
    expect(keyDigest("sk-secret-123456")).toMatch(/^[0-9a-f]{64}$/);
    expect(keyDigest("sk-secret-123456")).not.toContain("secret");
  });
});
