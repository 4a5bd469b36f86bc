/**
 * A start the way is slow to pass on: a proxy process in front of the sandbox holds `POST /generate` past the
 * server's patience, then forwards it. The first call answers "a charge is possible"; an identical call
 * within the duplicate window sends nothing by itself, says what is known, and once the held start has
 * become a task the server finds it in the history (in the background) and hands it back: one charge.
 */
import { afterEach, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { startHoldingProxy } from "../helpers/holding-proxy.js";

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

const HOLD_MS = 6_000;

it("an identical call after a held start sends nothing, and later gets the task the held start became", async () => {
  const sandbox = await startSandbox({ timings: { queuedMs: 40, processingMs: 160 } });
  cleanup.push(() => sandbox.close());
  // Holds the first start only: the deliberate second one passes at once.
  const proxy = await startHoldingProxy(sandbox.baseUrl, HOLD_MS, 1);
  cleanup.push(() => proxy.stop());
  const h: Harness = await startHarness({
    reuseSandbox: sandbox,
    config: { baseUrl: proxy.baseUrl },
    client: { timeoutMs: 1000 },
  });
  cleanup.push(() => h.close());
  const starts = () => sandbox.requests.filter((request) => request.route === "generate").length;
  const args = { prompt: "a lighthouse in a storm", wait: false };

  const first = await h.call("generate_video", args);
  expect(first.result.isError).toBe(true);
  expect(first.text).toMatch(/^timeout: /);
  expect(first.text).toMatch(/charge is possible/i);

  const retry = await h.call("generate_video", args);
  expect(retry.result.isError).toBe(true);
  expect(retry.text).toMatch(/^timeout: An identical generate_video request was sent \d+ s ago/);
  expect(retry.text).toContain("This call sent nothing and charged nothing.");
  expect(retry.text).toContain("allow_duplicate: true");
  expect(retry.text).not.toMatch(/A charge is possible: the request may have reached/);

  // The proxy passes the held start on: the service makes one task of it.
  await until(() => proxy.forwarded() === 1, HOLD_MS + 5_000);
  expect(starts()).toBe(1);

  // Found in the background, it is what an identical call gets: nothing is sent again.
  let again = await h.call("generate_video", args);
  const deadline = Date.now() + 20_000;
  while (again.result.isError === true && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    again = await h.call("generate_video", args);
  }
  expect(again.result.isError, again.text).toBeFalsy();
  expect(again.structured).toMatchObject({ reused: true });
  expect(again.structured?.["video_id"]).toEqual(expect.any(String));
  expect(starts()).toBe(1);

  // allow_duplicate: true sends another, deliberately: a task of its own.
  const another = await h.call("generate_video", { ...args, allow_duplicate: true });
  expect(another.result.isError, another.text).toBeFalsy();
  expect(another.structured?.["video_id"]).not.toBe(again.structured?.["video_id"]);
  expect(starts()).toBe(2);
}, 60_000);

async function until(check: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
