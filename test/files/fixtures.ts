import { mkdtemp, realpath, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

export const PNG_BYTES = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  Buffer.from("\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0", "latin1"),
]);
export const JPEG_BYTES = Buffer.concat([
  Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]),
  Buffer.from("JFIF\0rest"),
]);
export const WEBP_BYTES = Buffer.concat([
  Buffer.from("RIFF"),
  Buffer.from([0x24, 0, 0, 0]),
  Buffer.from("WEBPVP8 "),
  Buffer.alloc(16, 1),
]);
export const GIF_BYTES = Buffer.from("GIF89a\x01\0\x01\0\0\0\0;", "latin1");
export const WEBM_BYTES = Buffer.concat([
  Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x86]),
  Buffer.alloc(16),
]);

export function isoMedia(brand: string, boxSize = 0x18): Buffer {
  const box = Buffer.alloc(32);
  box.writeUInt32BE(boxSize, 0);
  box.write("ftyp", 4, "latin1");
  box.write(brand, 8, "latin1");
  return box;
}

/** A PNG-signature file of exactly `size` bytes (the sniffers look at the head only). */
export function pngOfSize(size: number): Buffer {
  const bytes = Buffer.alloc(size, 0x5a);
  PNG_BYTES.copy(bytes, 0, 0, Math.min(size, PNG_BYTES.length));
  return bytes;
}

/** A fresh real-path temp folder, removed by the returned cleanup. */
export async function makeTempDir(prefix: string): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await realpath(await mkdtemp(path.join(os.tmpdir(), prefix)));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}
