/** The runtime keeps one journal per service and key, so tasks of one never pass for tasks of another. */
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Logger } from "../src/logger.js";
import { createRuntime, journalDir } from "../src/runtime.js";
import { startSandbox } from "../src/sandbox/index.js";
import { startHarness, testConfig, type Harness } from "./helpers/harness.js";

const harnesses: Harness[] = [];

/** A sandbox at `port` again. Another file's connection may hold it for a moment as its local port: retry. */
async function startSandboxAt(port: number, tries = 50): ReturnType<typeof startSandbox> {
  try {
    return await startSandbox({ port, timings: { queuedMs: 40, processingMs: 160 } });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EADDRINUSE" || tries <= 1) throw error;
    await new Promise((resolve) => setTimeout(resolve, 100));
    return startSandboxAt(port, tries - 1);
  }
}
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((h) => h.close()));
});

describe("journal per service", () => {
  it("names a folder per base URL and key, without showing the key", () => {
    const a = journalDir("/s", { baseUrl: "https://api.example.com/api/v1", apiKey: "sk-one-123456" });
    const b = journalDir("/s", { baseUrl: "https://api.example.com/api/v1", apiKey: "sk-two-123456" });
    const c = journalDir("/s", { baseUrl: "http://127.0.0.1:8787/api/v1", apiKey: "sk-one-123456" });
    expect(new Set([a, b, c]).size).toBe(3);
    expect(a).toMatch(/^\/s\/api\.example\.com-[0-9a-f]{12}$/);
    expect(a).not.toContain("sk-one");
    expect(journalDir("/s", { baseUrl: "https://api.example.com/api/v1", apiKey: "sk-one-123456" })).toBe(a);
  });

  it("does not return a task of another service as a duplicate", async () => {
    const stateDir = await mkdtemp(path.join(tmpdir(), "generation-mcp-state-"));
    try {
      const first = await startHarness({ config: { stateDir } });
      harnesses.push(first);
      const second = await startHarness({ config: { stateDir } });
      harnesses.push(second);
      const one = await first.call("generate_video", { prompt: "same words", wait: false });
      const two = await second.call("generate_video", { prompt: "same words", wait: false });
      expect(two.structured?.["reused"]).toBeUndefined();
      expect(two.structured?.["video_id"]).toEqual(expect.any(String));
      expect(second.sandbox.requests.some((request) => request.route === "generate")).toBe(true);
      expect(one.structured?.["video_id"]).toEqual(expect.any(String));
      expect((await readdir(stateDir)).length).toBe(2);
    } finally {
      await rm(stateDir, { recursive: true, force: true });
    }
  });

  it("keeps the embedded sandbox's journal in memory: nothing is read from or written to the state folder", async () => {
    const stateDir = await mkdtemp(path.join(tmpdir(), "generation-mcp-state-"));
    try {
      const config = testConfig(stateDir, {
        sandbox: true,
        pollIntervalMs: 1000,
        waitTimeoutS: 1,
        stateDir,
        outputDirConfigured: false,
      });
      const target = { baseUrl: "http://127.0.0.1:9/api/v1", apiKey: "k", ephemeral: true };
      const runtime = await createRuntime(config, target, new Logger("error", () => {}), "test");
      await runtime.close();
      expect(await readdir(stateDir)).toEqual([]);
    } finally {
      await rm(stateDir, { recursive: true, force: true });
    }
  });

  it("never hands back a journaled task that the service no longer knows (a restarted sandbox on the same port)", async () => {
    const stateDir = await mkdtemp(path.join(tmpdir(), "generation-mcp-state-"));
    try {
      const first = await startHarness({ config: { stateDir } });
      const port = Number(new URL(first.sandbox.baseUrl).port);
      const one = await first.call("generate_video", { prompt: "the same words", wait: false });
      await first.close();
      // A new service instance at the same address: the journal folder (per base URL and key) is shared.
      const restarted = await startSandboxAt(port);
      const second = await startHarness({ config: { stateDir }, reuseSandbox: restarted });
      harnesses.push(second);
      try {
        const two = await second.call("generate_video", { prompt: "the same words", wait: false });
        expect(two.result.isError, two.text).toBeFalsy();
        expect(two.structured?.["reused"]).toBeUndefined();
        expect(two.structured?.["video_id"]).not.toBe(one.structured?.["video_id"]);
        const status = await second.call("get_status", { video_id: two.structured?.["video_id"] });
        expect(status.result.isError, status.text).toBeFalsy();
        // And the stale one is not offered again either.
        const three = await second.call("generate_video", { prompt: "the same words", wait: false });
        expect(three.structured?.["video_id"]).toBe(two.structured?.["video_id"]);
        expect(three.structured?.["reused"]).toBe(true);
      } finally {
        await second.close();
        harnesses.splice(harnesses.indexOf(second), 1);
        await restarted.close();
      }
    } finally {
      await rm(stateDir, { recursive: true, force: true });
    }
  });
});

describe("many calls at once", () => {
  it("follows the runtime's stop with one listener per call in flight, without Node's leak warning", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on("warning", onWarning);
    try {
      const h = await startHarness({ sandbox: { timings: { queuedMs: 200, processingMs: 400 } } });
      harnesses.push(h);
      const started = await h.call("generate_video", { prompt: "sixteen waiting", wait: false });
      const videoId = started.structured?.["video_id"];
      // A busy server's share: sixteen calls of one caller in flight, each following the runtime's stop.
      const results = await Promise.all(
        Array.from({ length: 16 }, () => h.call("get_status", { video_id: videoId, wait: true })),
      );
      for (const { result, structured, text } of results) {
        expect(result.isError, text).toBeFalsy();
        expect(structured?.["status"]).toBe("completed");
      }
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((warning) => warning.includes("MaxListeners"))).toEqual([]);
    } finally {
      process.off("warning", onWarning);
    }
  });
});
