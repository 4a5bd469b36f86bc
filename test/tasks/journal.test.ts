import { mkdtemp, readFile, rm, stat, writeFile, appendFile } from "node:fs/promises";
import * as fsPromises from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { JournalEntry } from "../../src/tasks/journal.js";
import { defaultStateDir } from "../../src/config/index.js";
import { JOURNAL_FILE, Journal } from "../../src/tasks/journal.js";

const TEN_MIN = 10 * 60 * 1000;

function entry(id: string, startedAt: number, fingerprint = `fp-${id}`): JournalEntry {
  return {
    kind: "video",
    id,
    fingerprint,
    started_at: startedAt,
    request: { prompt: `prompt ${id}` },
    status: "queued",
  };
}

describe("Journal", () => {
  let dir: string;
  let clock: number;
  const now = () => clock;

  beforeEach(async () => {
    dir = join(await mkdtemp(join(tmpdir(), "journal-")), "state", "nested");
    clock = Date.parse("2026-11-22T10:00:00Z");
  });
  afterEach(async () => {
    await rm(join(dir, "..", ".."), { recursive: true, force: true });
  });

  it("creates its folder private at the first append (not before), and appends one synced line per entry", async () => {
    const journal = await Journal.open(dir, { now });
    // Opening writes nothing: a caller that never starts a task leaves nothing on disk.
    await expect(stat(dir)).rejects.toThrow(/ENOENT/);
    await journal.append(entry("v1", clock));
    if (process.platform !== "win32") expect((await stat(dir)).mode & 0o777).toBe(0o700);
    const text = await readFile(join(dir, JOURNAL_FILE), "utf8");
    expect(text.endsWith("\n")).toBe(true);
    expect(JSON.parse(text.trim())).toMatchObject({ kind: "video", id: "v1", fingerprint: "fp-v1" });
    if (process.platform !== "win32") expect((await stat(join(dir, JOURNAL_FILE))).mode & 0o777).toBe(0o600);
    await journal.close();
  });

  it("resolves append only after the data is synced", async () => {
    const journal = await Journal.open(dir, { now });
    const order: string[] = [];
    const realOpen = fsPromises.open;
    await fsPromises.mkdir(dir, { recursive: true });
    // Watch the handle the journal opens: sync must come after write and before append resolves.
    const handle = await realOpen(join(dir, JOURNAL_FILE), "a");
    const write = handle.write.bind(handle);
    const sync = handle.sync.bind(handle);
    handle.write = ((...args: Parameters<typeof write>) => {
      order.push("write");
      return write(...args);
    }) as typeof handle.write;
    handle.sync = async () => {
      await sync();
      order.push("sync");
    };
    (journal as unknown as { handle: typeof handle }).handle = handle;
    await journal.append(entry("v1", clock)).then(() => order.push("resolved"));
    expect(order).toEqual(["write", "sync", "resolved"]);
    await journal.close();
  });

  it("reloads what an earlier run wrote, newest first", async () => {
    const first = await Journal.open(dir, { now });
    await first.append(entry("v1", clock - 2000));
    await first.append(entry("v2", clock - 1000));
    await first.close();
    const second = await Journal.open(dir, { now });
    expect(second.recent().map((e) => e.id)).toEqual(["v2", "v1"]);
    expect(second.recent(1).map((e) => e.id)).toEqual(["v2"]);
    expect(second.has("v1")).toBe(true);
    expect(second.has("v3")).toBe(false);
    await second.close();
  });

  it("tolerates a torn last line and garbage lines, and appends cleanly after them", async () => {
    await (await Journal.open(dir, { now })).close();
    await fsPromises.mkdir(dir, { recursive: true });
    const file = join(dir, JOURNAL_FILE);
    await writeFile(
      file,
      `${JSON.stringify(entry("v1", clock))}\nnot json\n{"kind":"video"}\n[1,2]\n\n${JSON.stringify(entry("v2", clock)).slice(0, 30)}`,
    );
    const journal = await Journal.open(dir, { now });
    expect(journal.recent().map((e) => e.id)).toEqual(["v1"]);
    await journal.append(entry("v3", clock));
    await journal.close();
    const reopened = await Journal.open(dir, { now });
    expect(reopened.recent().map((e) => e.id)).toEqual(["v3", "v1"]);
    await reopened.close();
  });

  it("serializes concurrent appends into whole lines", async () => {
    const journal = await Journal.open(dir, { now });
    await Promise.all(Array.from({ length: 40 }, (_, i) => journal.append(entry(`v${i}`, clock + i))));
    await journal.close();
    const lines = (await readFile(join(dir, JOURNAL_FILE), "utf8")).trim().split("\n");
    expect(lines).toHaveLength(40);
    expect(lines.map((line) => (JSON.parse(line) as JournalEntry).id)).toEqual(
      Array.from({ length: 40 }, (_, i) => `v${i}`),
    );
  });

  it("compacts to the newest half when over its entry bound", async () => {
    const journal = await Journal.open(dir, { now, maxEntries: 10 });
    for (let i = 0; i < 11; i++) await journal.append(entry(`v${i}`, clock + i));
    expect(journal.recent().map((e) => e.id)).toEqual(["v10", "v9", "v8", "v7", "v6"]);
    await journal.append(entry("v11", clock + 11));
    await journal.close();
    const reopened = await Journal.open(dir, { now, maxEntries: 10 });
    expect(reopened.recent().map((e) => e.id)).toEqual(["v11", "v10", "v9", "v8", "v7", "v6"]);
    const files = await fsPromises.readdir(dir);
    expect(files).toEqual([JOURNAL_FILE]);
    await reopened.close();
  });

  it("stays within its byte bound", async () => {
    const journal = await Journal.open(dir, { now, maxBytes: 4096 });
    const big = "x".repeat(300);
    for (let i = 0; i < 60; i++) {
      await journal.append({ ...entry(`v${i}`, clock + i), request: { prompt: big } });
    }
    await journal.close();
    expect((await stat(join(dir, JOURNAL_FILE))).size).toBeLessThanOrEqual(4096);
    const reopened = await Journal.open(dir, { now, maxBytes: 4096 });
    expect(reopened.recent()[0]?.id).toBe("v59");
    await reopened.close();
  });

  it("finds the newest duplicate within the window, edges included", async () => {
    const journal = await Journal.open(dir, { now });
    await journal.append(entry("old", clock - TEN_MIN - 1, "same"));
    await journal.append(entry("edge", clock - TEN_MIN, "same"));
    await journal.append(entry("other", clock, "different"));
    expect(journal.findDuplicate("same", TEN_MIN)?.id).toBe("edge");
    clock += 1;
    expect(journal.findDuplicate("same", TEN_MIN)).toBeUndefined();
    await journal.append(entry("new", clock - 1, "same"));
    expect(journal.findDuplicate("same", TEN_MIN)?.id).toBe("new");
    expect(journal.findDuplicate("missing", TEN_MIN)).toBeUndefined();
    await journal.close();
  });

  it("refresh() picks up lines another process appended", async () => {
    const journal = await Journal.open(dir, { now });
    await journal.append(entry("v1", clock));
    await appendFile(join(dir, JOURNAL_FILE), `${JSON.stringify(entry("elsewhere", clock, "fp-x"))}\n`);
    expect(journal.has("elsewhere")).toBe(false);
    await journal.refresh();
    expect(journal.findDuplicate("fp-x", TEN_MIN)?.id).toBe("elsewhere");
    await journal.append(entry("v2", clock));
    expect(journal.recent().map((e) => e.id)).toEqual(["v2", "elsewhere", "v1"]);
    await journal.close();
  });

  it("appends to the new file after another process compacted it", async () => {
    const mine = await Journal.open(dir, { now });
    await mine.append(entry("mine-1", clock));
    const other = await Journal.open(dir, { now, maxEntries: 4 });
    for (let i = 0; i < 5; i++) await other.append(entry(`other-${i}`, clock));
    await mine.append(entry("mine-2", clock));
    await other.close();
    await mine.close();
    const reopened = await Journal.open(dir, { now });
    expect(reopened.has("mine-2")).toBe(true);
    await reopened.close();
  });

  it("keeps image entries without an id", async () => {
    const journal = await Journal.open(dir, { now });
    await journal.append({
      kind: "image",
      id: undefined,
      fingerprint: "img",
      started_at: clock,
      request: { prompt: "p" },
      result: { image_urls: ["https://x/1.png"] },
    });
    await journal.close();
    const reopened = await Journal.open(dir, { now });
    expect(reopened.findDuplicate("img", TEN_MIN)).toMatchObject({
      kind: "image",
      id: undefined,
      result: { image_urls: ["https://x/1.png"] },
    });
    await reopened.close();
  });

  it("reports a failed append to the caller", async () => {
    const journal = await Journal.open(dir, { now });
    await journal.append(entry("v0", clock));
    const info = await stat(join(dir, JOURNAL_FILE));
    const broken = {
      stat: vi.fn().mockResolvedValue(info),
      write: vi.fn().mockRejectedValue(new Error("disk full")),
      sync: vi.fn(),
      close: vi.fn(),
    };
    (journal as unknown as { handle: unknown }).handle = broken;
    await expect(journal.append(entry("v1", clock))).rejects.toThrow("disk full");
    expect(journal.has("v1")).toBe(false);
  });
});

describe("defaultStateDir", () => {
  it("follows XDG on Linux", () => {
    expect(defaultStateDir({ XDG_STATE_HOME: "/xdg/state" }, "linux", "/home/u")).toBe(
      "/xdg/state/generation-mcp",
    );
    expect(defaultStateDir({}, "linux", "/home/u")).toBe("/home/u/.local/state/generation-mcp");
    expect(defaultStateDir({ XDG_STATE_HOME: "relative" }, "linux", "/home/u")).toBe(
      "/home/u/.local/state/generation-mcp",
    );
    expect(defaultStateDir({}, "freebsd", "/home/u")).toBe("/home/u/.local/state/generation-mcp");
  });

  it("uses Application Support on macOS", () => {
    expect(defaultStateDir({ XDG_STATE_HOME: "/x" }, "darwin", "/Users/u")).toBe(
      "/Users/u/Library/Application Support/generation-mcp",
    );
  });

  it("uses LOCALAPPDATA on Windows", () => {
    expect(defaultStateDir({ LOCALAPPDATA: "C:\\Users\\u\\AppData\\Local" }, "win32", "C:\\Users\\u")).toBe(
      "C:\\Users\\u\\AppData\\Local\\generation-mcp",
    );
    expect(defaultStateDir({}, "win32", "C:\\Users\\u")).toBe("C:\\Users\\u\\AppData\\Local\\generation-mcp");
  });
});
