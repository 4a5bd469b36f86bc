/**
 * One runtime per service key: made once, kept while calls (or background task waits) use it, closed when
 * idle; a key the service refused is answered from memory for a while; no key is ever registered with the
 * process-wide redaction (one caller's bearer must not change another caller's text).
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { UnauthorizedError } from "../src/api/errors.js";
import { redact } from "../src/redact.js";
import { RuntimePool, type PooledRuntime } from "../src/runtime-pool.js";

function fakeRuntimes(options: { refuse?: Set<string>; busy?: Set<string>; settled?: Promise<void> } = {}) {
  const made: string[] = [];
  const closed: string[] = [];
  const asked: string[] = [];
  const create = async (apiKey: string): Promise<PooledRuntime> => {
    asked.push(apiKey);
    made.push(apiKey);
    return {
      busy: () => options.busy?.has(apiKey) ?? false,
      callsSettled: async () => {
        await options.settled;
        options.busy?.delete(apiKey);
      },
      // As the runtime reports once the service answered 401 to a key it never accepted.
      keyState: () => (options.refuse?.has(apiKey) ? "refused" : "accepted"),
      close: async () => {
        closed.push(apiKey);
      },
    };
  };
  return { made, closed, asked, create };
}

describe("RuntimePool", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("makes one runtime per key, even for calls that arrive together", async () => {
    const runtimes = fakeRuntimes();
    const pool = new RuntimePool({ create: runtimes.create });
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

  it("keeps nothing for a key the service refused, and answers it from memory until the refusal lapses", async () => {
    let now = 0;
    const runtimes = fakeRuntimes({ refuse: new Set(["made-up-bearer"]) });
    const pool = new RuntimePool({ create: runtimes.create, refusedMs: 1000, now: () => now });
    (await pool.acquire("made-up-bearer")).release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(pool.size).toBe(0);
    expect(runtimes.closed).toEqual(["made-up-bearer"]);
    await expect(pool.acquire("made-up-bearer")).rejects.toBeInstanceOf(UnauthorizedError);
    expect(runtimes.asked).toEqual(["made-up-bearer"]);
    now = 2000;
    (await pool.acquire("made-up-bearer")).release();
    expect(runtimes.asked).toEqual(["made-up-bearer", "made-up-bearer"]);
    await pool.close();
  });

  it("drops a refused key's runtime released while its call still settles (its client went away), once it has", async () => {
    let settle = () => {};
    const settled = new Promise<void>((resolve) => (settle = resolve));
    const runtimes = fakeRuntimes({
      refuse: new Set(["made-up-gone"]),
      busy: new Set(["made-up-gone"]),
      settled,
    });
    const pool = new RuntimePool({ create: runtimes.create });
    (await pool.acquire("made-up-gone")).release();
    await new Promise((resolve) => setImmediate(resolve));
    // Still busy: kept for now, as before.
    expect(pool.size).toBe(1);
    settle();
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(pool.size).toBe(0);
    expect(runtimes.closed).toEqual(["made-up-gone"]);
    await expect(pool.acquire("made-up-gone")).rejects.toBeInstanceOf(UnauthorizedError);
    await pool.close();
  });

  it("closes a runtime idle past its time, never one with calls or background waits running", async () => {
    let now = 0;
    // The pool sweeps on its own timer (every idleMs here): the test moves that clock, and `now` the pool's.
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const runtimes = fakeRuntimes({ busy: new Set(["sk-waiting-cccc3333"]) });
    const pool = new RuntimePool({ create: runtimes.create, idleMs: 1000, now: () => now });
    const busy = await pool.acquire("sk-busy-bbbb2222");
    (await pool.acquire("sk-idle-aaaa1111")).release();
    (await pool.acquire("sk-waiting-cccc3333")).release();
    now = 5000;
    await vi.advanceTimersByTimeAsync(1000);
    expect(runtimes.closed).toEqual(["sk-idle-aaaa1111"]);
    expect(pool.size).toBe(2);
    busy.release();
    await pool.close();
    expect(runtimes.closed.sort()).toEqual(["sk-busy-bbbb2222", "sk-idle-aaaa1111", "sk-waiting-cccc3333"]);
  });

  it("never registers a key with the process-wide redaction", async () => {
    const runtimes = fakeRuntimes();
    const pool = new RuntimePool({ create: runtimes.create });
    const lease = await pool.acquire("completed");
    expect(redact("status completed")).toBe("status completed");
    lease.release();
    await pool.close();
  });

  it("keeps at most maxRuntimes, closing the longest idle first", async () => {
    let now = 0;
    const runtimes = fakeRuntimes();
    const pool = new RuntimePool({ create: runtimes.create, maxRuntimes: 2, now: () => now });
    (await pool.acquire("sk-first-123456")).release();
    now = 10;
    (await pool.acquire("sk-second-123456")).release();
    now = 20;
    await pool.acquire("sk-third-123456");
    await new Promise((resolve) => setImmediate(resolve));
    expect(runtimes.closed).toEqual(["sk-first-123456"]);
    await pool.close();
  });
});
