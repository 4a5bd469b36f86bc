import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { AbortedError } from "../../src/api/errors.js";
import { abortable, joinSignals } from "../../src/api/sleep.js";

describe("joinSignals", () => {
  it("aborts with the reason of whichever source aborts first, and not as a timeout", () => {
    const [a, b] = [new AbortController(), new AbortController()];
    const joined = joinSignals([a.signal, undefined, b.signal], 60_000);
    expect(joined.signal.aborted).toBe(false);
    b.abort(new Error("second"));
    expect(joined.signal.aborted).toBe(true);
    expect((joined.signal.reason as Error).message).toBe("second");
    expect(joined.timedOut()).toBe(false);
    a.abort();
    expect((joined.signal.reason as Error).message).toBe("second");
  });

  it("starts aborted when a source already is", () => {
    const a = new AbortController();
    a.abort(new Error("before"));
    const joined = joinSignals([a.signal]);
    expect(joined.signal.aborted).toBe(true);
    expect((joined.signal.reason as Error).message).toBe("before");
  });

  it("times out on the real clock, as a TimeoutError, and says so", async () => {
    const joined = joinSignals([new AbortController().signal], 20);
    await new Promise((resolve) => joined.signal.addEventListener("abort", resolve));
    expect(joined.timedOut()).toBe(true);
    expect((joined.signal.reason as DOMException).name).toBe("TimeoutError");
  });

  it("once released, follows neither its sources nor its timer", async () => {
    const a = new AbortController();
    const joined = joinSignals([a.signal], 20);
    joined.release();
    a.abort();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(joined.signal.aborted).toBe(false);
    expect(joined.timedOut()).toBe(false);
  });
});

describe("abortable", () => {
  it("rejects with what a throwing start threw, and leaves no listener on the signal", async () => {
    const controller = new AbortController();
    const failing = abortable(controller.signal, () => {
      throw new Error("could not start");
    });
    await expect(failing).rejects.toThrow("could not start");
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("drops its listener once settled, and rejects with AbortedError on an abort", async () => {
    const controller = new AbortController();
    await expect(abortable<number>(controller.signal, (resolve) => resolve(1))).resolves.toBe(1);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
    const waiting = abortable(controller.signal, () => undefined);
    controller.abort();
    await expect(waiting).rejects.toBeInstanceOf(AbortedError);
  });
});
