/**
 * Upload links in this process: records in memory, parked bytes in private temporary files (never held in
 * memory), each gone when its link expires.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { isOpen, type UploadLink, type UploadLinkState, type UploadLinkStore } from "../upload-links.js";

const MINUTE_MS = 60_000;

export class LocalUploadLinks implements UploadLinkStore {
  private readonly links = new Map<string, UploadLink>();
  /** When each caller asked for links within the last minute. */
  private readonly asked = new Map<string, number[]>();
  private readonly parked = new Map<string, string>();
  private folder: Promise<string> | undefined;

  async open(link: UploadLink, limits: { maxOpen: number; perMinute: number }) {
    const now = this.sweep();
    const recent = [...(this.asked.get(link.caller) ?? []), now].slice(-(limits.perMinute + 1));
    this.asked.set(link.caller, recent);
    if (recent.filter((at) => at > now - MINUTE_MS).length > limits.perMinute) return "too_fast";
    const held = [...this.links.values()].filter((held) => held.caller === link.caller && isOpen(held));
    if (held.length >= limits.maxOpen) return "too_many";
    this.links.set(link.id, link);
    return "opened";
  }

  async read(id: string) {
    this.sweep();
    return this.links.get(id);
  }

  async swap(from: UploadLinkState, next: UploadLink) {
    if (this.links.get(next.id)?.state !== from) return false;
    this.links.set(next.id, next);
    return true;
  }

  async park(id: string, bytes: Buffer, expiresAt: number) {
    // Mode 0700 folder, 0600 file: another user of the machine reads nothing.
    const folder = await (this.folder ??= mkdtemp(path.join(tmpdir(), "generation-mcp-uploads-")));
    const file = path.join(folder, id);
    await writeFile(file, bytes, { mode: 0o600 });
    this.parked.set(id, file);
    setTimeout(() => this.sweep(), Math.max(0, expiresAt - Date.now()) + 1000).unref();
  }

  async take(id: string) {
    const file = this.parked.get(id);
    if (file === undefined) return undefined;
    this.parked.delete(id);
    try {
      return await readFile(file);
    } finally {
      await rm(file, { force: true });
    }
  }

  /** Forgets expired links (and their parked files) and request times older than a minute; returns now. */
  private sweep(): number {
    const now = Date.now();
    for (const [id, link] of this.links) {
      if (link.expiresAt > now) continue;
      this.links.delete(id);
      const file = this.parked.get(id);
      this.parked.delete(id);
      if (file !== undefined) void rm(file, { force: true }).catch(() => undefined);
    }
    for (const [caller, times] of this.asked) {
      if ((times.at(-1) ?? 0) <= now - MINUTE_MS) this.asked.delete(caller);
    }
    return now;
  }
}
