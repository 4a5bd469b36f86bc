/**
 * The MCP task records on their own (no protocol era, no service): ttls bounded both ways, a task forgotten
 * once its ttl has passed, a refused call's task never written anywhere, records read back checked, and an
 * outcome that a late cancel cannot change.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { CallToolResult } from "@modelcontextprotocol/server";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Logger } from "../../src/logger.js";
import { RefusedTasks } from "../../src/mcp/tasks/wire.js";
import type { TaskRun } from "../../src/mcp/tasks/runs.js";
import { TaskRecords } from "../../src/mcp/tasks/store.js";
import { localTaskRecords } from "../../src/state/local/task-records.js";

let dir: string;
const logs: string[] = [];
const logger = new Logger("debug", (line) => logs.push(line));
const stopping = new AbortController().signal;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "generation-mcp-task-records-"));
  logs.length = 0;
});
afterEach(async () => {
  vi.useRealTimers();
  await rm(dir, { recursive: true, force: true });
});

const done = (text: string, isError = false): CallToolResult => ({
  content: [{ type: "text", text }],
  ...(isError && { isError: true }),
});

/** A run that names its video at once and finishes when `finish` is called. */
function videoRun() {
  let finish: (result: CallToolResult) => void = () => {};
  const run = (task: TaskRun) => {
    task.progress("video_id vid_1: started");
    return new Promise<CallToolResult>((resolve) => (finish = resolve));
  };
  return { run, finish: (result: CallToolResult) => finish(result) };
}

const statusOf = async (tasks: TaskRecords, taskId: string) =>
  (await tasks.find(taskId, undefined)).task.status;

describe("MCP task records", () => {
  it("takes up a working task whose process is gone; leaves one whose process runs to it, and keeps its record in the file", async () => {
    const live = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60_000)"]);
    const dead = Number(
      spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]).stdout.toString(),
    );
    try {
      const first = await TaskRecords.open(localTaskRecords(dir, logger), 100, logger);
      const start = (name: string) =>
        first.start({ tool: "generate_video", stopping, saved: { name }, run: videoRun().run });
      const held = await start("held");
      await start("orphan");
      // Stopped while both wait: they stay working on disk.
      await first.close();
      const file = path.join(dir, "mcp-tasks.json");
      const saved = JSON.parse(await readFile(file, "utf8")) as {
        records: Array<{ task: { taskId: string }; pid?: number }>;
      };
      expect(saved.records.map((record) => record.pid)).toEqual([process.pid, process.pid]);
      // One still followed by a running process (another stdio server of the key), one by a process gone.
      for (const record of saved.records) record.pid = record.task.taskId === held.taskId ? live.pid! : dead;
      await writeFile(file, JSON.stringify(saved));
      const second = await TaskRecords.open(localTaskRecords(dir, logger), 100, logger);
      const resumed: string[] = [];
      second.resumeAll(async (record) => {
        resumed.push(String(record.saved["name"]));
        return done("taken up");
      }, stopping);
      await vi.waitFor(() => expect(resumed).toEqual(["orphan"]));
      // Not this process's to answer for, nor to drop: its writes keep the running process's record.
      await expect(second.find(held.taskId, undefined)).rejects.toThrow(/not found/);
      await second.start({ tool: "generate_video", stopping, run: videoRun().run });
      await second.close();
      const after = JSON.parse(await readFile(file, "utf8")) as typeof saved;
      expect(after.records.filter((record) => record.task.taskId === held.taskId)).toMatchObject([
        { pid: live.pid, task: { status: "working" } },
      ]);
      expect(after.records).toHaveLength(3);
    } finally {
      live.kill();
    }
  });

  it("bounds the ttl: the minimum for a tiny one, the maximum for a huge one, the default for none", async () => {
    const tasks = await TaskRecords.open(localTaskRecords(dir, logger), 100, logger);
    const ttl = async (requestedTtl: number | undefined) =>
      (await tasks.start({ tool: "generate_video", requestedTtl, stopping, run: videoRun().run })).ttl;
    expect(await ttl(1)).toBe(60_000);
    expect(await ttl(10 ** 12)).toBe(24 * 60 * 60 * 1000);
    expect(await ttl(undefined)).toBe(60 * 60 * 1000);
    await tasks.close();
  });

  it("forgets a task once its ttl has passed", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const tasks = await TaskRecords.open(localTaskRecords(dir, logger), 100, logger);
    const task = await tasks.start({
      tool: "generate_video",
      requestedTtl: 60_000,
      stopping,
      run: videoRun().run,
    });
    expect(await statusOf(tasks, task.taskId)).toBe("working");
    vi.setSystemTime(Date.now() + 61_000);
    await expect(tasks.find(task.taskId, undefined)).rejects.toThrow(/Task not found/);
    await tasks.close();
  });

  it("shows a task to its own caller only", async () => {
    const tasks = await TaskRecords.open(localTaskRecords(dir, logger), 100, logger);
    const task = await tasks.start({ tool: "generate_video", scope: "alice", stopping, run: videoRun().run });
    expect((await tasks.find(task.taskId, "alice")).task.taskId).toBe(task.taskId);
    await expect(tasks.find(task.taskId, "bob")).rejects.toThrow(/Task not found/);
    await expect(tasks.find(task.taskId, undefined)).rejects.toThrow(/Task not found/);
    expect((await tasks.list("bob", undefined)).tasks).toEqual([]);
    await tasks.close();
  });

  it("keeps a refused call's task in memory only, per caller, for the shortest ttl, and bounded", () => {
    const refused = new RefusedTasks();
    const result = done("validation_error: prompt: must not be empty", true);
    const { task } = refused.add("caller-a", "generate_video", result);
    expect(task).toMatchObject({ status: "failed", ttl: 60_000 });
    expect(refused.find("caller-a", task.taskId)?.result).toEqual(result);
    expect(refused.find("caller-b", task.taskId)).toBeUndefined();
    // A flood keeps the newest thousand; the first is gone.
    for (let i = 0; i < 1000; i++) refused.add("caller-a", "generate_video", result);
    expect(refused.find("caller-a", task.taskId)).toBeUndefined();
  });

  it("keeps a task that failed before the service named one out of the file", async () => {
    const tasks = await TaskRecords.open(localTaskRecords(dir, logger), 100, logger);
    const task = await tasks.start({
      tool: "generate_video",
      stopping,
      run: async () => done("unauthorized: The service answered HTTP 401.", true),
    });
    expect(await statusOf(tasks, task.taskId)).toBe("failed");
    await tasks.close();
    await expect(readFile(path.join(dir, "mcp-tasks.json"), "utf8")).rejects.toThrow(/ENOENT/);
  });

  it("skips and reports records on disk that are not its own shape, and serves the valid ones", async () => {
    const good = await TaskRecords.open(localTaskRecords(dir, logger), 100, logger);
    const run = videoRun();
    const task = await good.start({ tool: "generate_video", stopping, run: run.run });
    run.finish(done("Video vid_1 is completed: http://127.0.0.1/v.mp4"));
    await vi.waitFor(async () => expect(await statusOf(good, task.taskId)).toBe("completed"));
    await good.close();
    const file = path.join(dir, "mcp-tasks.json");
    const saved = JSON.parse(await readFile(file, "utf8")) as { records: Array<Record<string, unknown>> };
    const planted = structuredClone(saved.records[0]) as { task: Record<string, unknown> };
    planted.task["taskId"] = "00000000-0000-0000-0000-000000000000";
    planted.task["createdAt"] = 12345;
    saved.records.push(planted as Record<string, unknown>);
    await writeFile(file, JSON.stringify(saved));
    const reread = await TaskRecords.open(localTaskRecords(dir, logger), 100, logger);
    expect(await statusOf(reread, task.taskId)).toBe("completed");
    await expect(reread.find("00000000-0000-0000-0000-000000000000", undefined)).rejects.toThrow(/not found/);
    const listed = await reread.list(undefined, undefined);
    expect(listed.tasks.map((entry) => entry.taskId)).toEqual([task.taskId]);
    expect(logs.join("\n")).toMatch(/1 MCP task record\(s\) in mcp-tasks\.json were not valid/);
    await reread.close();
  });

  it("answers a cancel of a finished task with an error, and keeps its outcome", async () => {
    const tasks = await TaskRecords.open(localTaskRecords(dir, logger), 100, logger);
    const run = videoRun();
    const task = await tasks.start({ tool: "generate_video", stopping, run: run.run });
    run.finish(done("Video vid_1 is completed"));
    await vi.waitFor(async () => expect(await statusOf(tasks, task.taskId)).toBe("completed"));
    await expect(tasks.cancel(task.taskId, undefined)).rejects.toThrow(/already completed/);
    expect(await statusOf(tasks, task.taskId)).toBe("completed");
    await tasks.close();
  });

  it("wakes a reader waiting for the end as soon as the task ends", async () => {
    const tasks = await TaskRecords.open(localTaskRecords(dir, logger), 60_000, logger);
    const run = videoRun();
    const task = await tasks.start({ tool: "generate_video", stopping, run: run.run });
    const ended = tasks.ended(task.taskId, undefined, new AbortController().signal);
    setTimeout(() => run.finish(done("Video vid_1 is completed")), 50);
    // Its next poll is a minute away, past this test's limit: only the end itself can wake it in time.
    expect((await ended).task.status).toBe("completed");
    await tasks.close();
  }, 10_000);

  it("names an unknown task in a bounded, clean form", async () => {
    const tasks = await TaskRecords.open(localTaskRecords(dir, logger), 100, logger);
    const huge = `\u202e${"x".repeat(200_000)}`;
    const error = await tasks.find(huge, undefined).catch((caught: unknown) => caught as Error);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message.length).toBeLessThan(200);
    expect((error as Error).message).not.toContain("\u202e");
    await tasks.close();
  });
});
