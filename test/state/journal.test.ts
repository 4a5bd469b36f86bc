import { mkdir, mkdtemp, open, readFile, readdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultStateDir } from "../../src/config/index.js";
import { JOURNAL_FILE, Journal } from "../../src/state/local/journal.js";
import { StateFileError } from "../../src/state/local/store.js";
import type { JournalEntry } from "../../src/state/records.js";

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
  const onDisk = async () => JSON.parse(await readFile(join(dir, JOURNAL_FILE), "utf8")) as JournalEntry[];

  beforeEach(async () => {
    dir = join(await mkdtemp(join(tmpdir(), "journal-")), "state", "nested");
    clock = Date.parse("2026-11-22T10:00:00Z");
  });
  afterEach(async () => {
    await rm(join(dir, "..", ".."), { recursive: true, force: true });
  });

  it("creates its folder private at the first append (not before), and writes the entry into its file", async () => {
    const journal = await Journal.open(dir, { now });
    // Opening writes nothing: a caller that never starts a task leaves nothing on disk.
    await expect(stat(dir)).rejects.toThrow(/ENOENT/);
    await journal.append(entry("v1", clock));
    if (process.platform !== "win32") expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect(await onDisk()).toMatchObject([{ kind: "video", id: "v1", fingerprint: "fp-v1" }]);
    if (process.platform !== "win32") expect((await stat(join(dir, JOURNAL_FILE))).mode & 0o777).toBe(0o600);
    expect(await readdir(dir)).toEqual([JOURNAL_FILE]);
    await journal.close();
  });

  it("resolves append only after the data is synced and renamed into place", async () => {
    const journal = await Journal.open(dir, { now });
    const order: string[] = [];
    // The file handles the store opens share this prototype: watch their syncs.
    const probe = await open(join(await mkdtemp(join(tmpdir(), "journal-probe-")), "probe"), "w");
    const prototype = Object.getPrototypeOf(probe) as { sync: () => Promise<void> };
    await probe.close();
    const sync = prototype.sync;
    prototype.sync = async function (this: unknown) {
      await sync.call(this);
      order.push("sync");
    };
    try {
      await journal.append(entry("v1", clock)).then(async () => {
        order.push("resolved");
        if ((await onDisk()).length === 1) order.push("in place");
      });
    } finally {
      prototype.sync = sync;
    }
    // The temporary file's data, then the folder's entry of the rename.
    expect(order).toEqual(["sync", "sync", "resolved", "in place"]);
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

  it("skips entries that are not journal entries, survives a file that is not JSON, and writes cleanly after", async () => {
    await mkdir(dir, { recursive: true });
    const file = join(dir, JOURNAL_FILE);
    await writeFile(
      file,
      JSON.stringify([entry("v1", clock), "not an entry", { kind: "video" }, [1, 2], null]),
    );
    const journal = await Journal.open(dir, { now });
    expect(journal.recent().map((e) => e.id)).toEqual(["v1"]);
    await journal.append(entry("v3", clock));
    await journal.close();
    const reopened = await Journal.open(dir, { now });
    expect(reopened.recent().map((e) => e.id)).toEqual(["v3", "v1"]);
    await reopened.close();

    await writeFile(file, `${JSON.stringify([entry("v1", clock)]).slice(0, 30)}`);
    const torn = await Journal.open(dir, { now });
    expect(torn.recent()).toEqual([]);
    await torn.append(entry("v4", clock));
    expect((await onDisk()).map((e) => e.id)).toEqual(["v4"]);
    await torn.close();
  });

  it("keeps every one of concurrent appends, in order", async () => {
    const journal = await Journal.open(dir, { now });
    await Promise.all(Array.from({ length: 40 }, (_, i) => journal.append(entry(`v${i}`, clock + i))));
    await journal.close();
    expect((await onDisk()).map((e) => e.id)).toEqual(Array.from({ length: 40 }, (_, i) => `v${i}`));
  });

  it("compacts to the newest half when over its entry bound", async () => {
    const journal = await Journal.open(dir, { now, maxEntries: 10 });
    for (let i = 0; i < 11; i++) await journal.append(entry(`v${i}`, clock + i));
    expect(journal.recent().map((e) => e.id)).toEqual(["v10", "v9", "v8", "v7", "v6"]);
    await journal.append(entry("v11", clock + 11));
    await journal.close();
    const reopened = await Journal.open(dir, { now, maxEntries: 10 });
    expect(reopened.recent().map((e) => e.id)).toEqual(["v11", "v10", "v9", "v8", "v7", "v6"]);
    expect(await readdir(dir)).toEqual([JOURNAL_FILE]);
    await reopened.close();
  });

  it("keeps an intent still waiting for its outcome through compaction, whatever its age", async () => {
    const journal = await Journal.open(dir, { now, maxEntries: 4 });
    await journal.append({ ...entry("lost", clock), id: undefined, phase: "intent", key: "k-lost" });
    for (let i = 0; i < 8; i++) await journal.append(entry(`v${i}`, clock + i));
    expect(journal.pendingIntents().map((e) => e.key)).toEqual(["k-lost"]);
    await journal.close();
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

  it("refresh() picks up what another process wrote, and an append keeps it", async () => {
    const journal = await Journal.open(dir, { now });
    await journal.append(entry("v1", clock));
    const other = await Journal.open(dir, { now });
    await other.append(entry("elsewhere", clock, "fp-x"));
    expect(journal.has("elsewhere")).toBe(false);
    await journal.refresh();
    expect(journal.findDuplicate("fp-x", TEN_MIN)?.id).toBe("elsewhere");
    await other.append(entry("later", clock, "fp-y"));
    await journal.append(entry("v2", clock));
    expect(journal.recent().map((e) => e.id)).toEqual(["v2", "later", "elsewhere", "v1"]);
    await Promise.all([journal.close(), other.close()]);
  });

  it("keeps its own entries after another process compacted the file", async () => {
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

  it("refuses an append it cannot write, naming the folder and GENERATION_STATE_DIR, and keeps what it had", async () => {
    const journal = await Journal.open(dir, { now });
    await journal.append(entry("v0", clock));
    // The key's folder is a file now: nothing can be written there, as on a broken disk.
    await rename(dir, `${dir}.away`);
    await writeFile(dir, "not a folder");
    const refused = await journal.append(entry("v1", clock)).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(StateFileError);
    expect(refused).toMatchObject({ code: "internal_error" });
    expect((refused as Error).message).toContain(dir);
    expect((refused as Error).message).toContain("GENERATION_STATE_DIR");
    expect(journal.has("v1")).toBe(false);
    expect(journal.has("v0")).toBe(true);
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
