/** Upload links in this process: records in memory, parked bytes in private temporary files until expiry. */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { isOpen, type UploadLink, type UploadLinkState, type UploadLinkStore } from "../upload-links.js";

export class LocalUploadLinks implements UploadLinkStore {
  private readonly links = new Map<string, UploadLink>();
  /** When each caller asked for links, the last few. */
  private readonly asked = new Map<string, number[]>();
  private readonly parked = new Map<string, string>();
  private folder: Promise<string> | undefined;

  async open(link: UploadLink, limits: { maxOpen: number; perMinute: number }) {
    const now = this.sweep();
    const asked = [...(this.asked.get(link.caller) ?? []), now].slice(-(limits.perMinute + 1));
    this.asked.set(link.caller, asked);
    if (asked.filter((at) => at > now - 60_000).length > limits.perMinute) return "too_fast";
    const held = [...this.links.values()].filter((other) => other.caller === link.caller && isOpen(other));
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
    // A folder of mode 0700: another user of the machine reads nothing.
    const folder = await (this.folder ??= mkdtemp(path.join(tmpdir(), "generation-mcp-uploads-")));
    await writeFile(path.join(folder, id), bytes, { mode: 0o600 });
    this.parked.set(id, path.join(folder, id));
    setTimeout(() => this.sweep(), expiresAt - Date.now() + 1000).unref();
  }

  async take(id: string) {
    const file = this.parked.get(id);
    this.parked.delete(id);
    return file === undefined ? undefined : readFile(file).finally(() => rm(file, { force: true }));
  }

  /** Forgets expired links, their parked files and callers' old requests; returns now. */
  private sweep(): number {
    const now = Date.now();
    for (const [id, link] of this.links) {
      if (link.expiresAt > now) continue;
      this.links.delete(id);
      const file = this.parked.get(id);
      this.parked.delete(id);
      if (file !== undefined) void rm(file, { force: true }).catch(() => undefined);
    }
    for (const [caller, asked] of this.asked)
      if ((asked.at(-1) ?? 0) <= now - 60_000) this.asked.delete(caller);
    return now;
  }
}
