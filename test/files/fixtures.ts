import { mkdtemp, realpath, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { crc32, deflateSync } from "node:zlib";

/** A PNG chunk: length, type, data, CRC. */
export function pngChunk(type: string, data: Buffer = Buffer.alloc(0)): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
// 1x1, 8-bit RGBA.
const PNG_IHDR = pngChunk("IHDR", Buffer.from("\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0", "latin1"));
const PNG_IDAT = pngChunk("IDAT", deflateSync(Buffer.alloc(5)));
const PNG_IEND = pngChunk("IEND");

/** A complete 1x1 PNG (signature, IHDR, IDAT, IEND). */
export const PNG_BYTES = Buffer.concat([PNG_SIGNATURE, PNG_IHDR, PNG_IDAT, PNG_IEND]);
/** A complete JPEG container: SOI, a JFIF APP0 segment, EOI. */
export const JPEG_BYTES = Buffer.concat([
  Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]),
  Buffer.from("JFIF\0\x01\x01\0\0\x01\0\x01\0\0", "latin1"),
  Buffer.from([0xff, 0xd9]),
]);
/** A WebP whose RIFF size matches its length (the payload is filler; only the container is checked). */
export const WEBP_BYTES = Buffer.concat([
  Buffer.from("RIFF"),
  Buffer.from([0x18, 0, 0, 0]),
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

/** A well-formed PNG of exactly `size` bytes (at least 82): PNG_BYTES with a private filler chunk. */
export function pngOfSize(size: number): Buffer {
  const filler = size - PNG_BYTES.length - 12;
  if (filler < 0) throw new RangeError(`pngOfSize needs at least ${PNG_BYTES.length + 12} bytes`);
  return Buffer.concat([
    PNG_SIGNATURE,
    PNG_IHDR,
    PNG_IDAT,
    pngChunk("prVt", Buffer.alloc(filler, 0x5a)),
    PNG_IEND,
  ]);
}

/**
 * A well-formed JPEG container of exactly `size` bytes (at least 22): JPEG_BYTES with comment (COM)
 * segments of filler before its EOI. Only the container is real; no decoder would show a picture.
 */
export function jpegOfSize(size: number): Buffer {
  const parts: Buffer[] = [JPEG_BYTES.subarray(0, -2)];
  let left = size - JPEG_BYTES.length;
  if (left !== 0 && left < 4) throw new RangeError("jpegOfSize cannot pad by 1-3 bytes");
  while (left > 0) {
    // A segment is 4 bytes of marker and length plus at most 65533 bytes; never leave a remainder under 4.
    let payload = Math.min(left - 4, 65533);
    if (left - (payload + 4) > 0 && left - (payload + 4) < 4) payload -= 4;
    const header = Buffer.from([0xff, 0xfe, 0, 0]);
    header.writeUInt16BE(payload + 2, 2);
    parts.push(header, Buffer.alloc(payload, 0x4a));
    left -= payload + 4;
  }
  parts.push(Buffer.from([0xff, 0xd9]));
  return Buffer.concat(parts);
}

/** A fresh real-path temp folder, removed by the returned cleanup. */
export async function makeTempDir(prefix: string): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await realpath(await mkdtemp(path.join(os.tmpdir(), prefix)));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}
