/** Writes a valid PNG (RGB, 8 bit, stored deflate of random pixels) of about `targetBytes`. */
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import zlib from "node:zlib";

function chunk(type, data) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(zlib.crc32(td) >>> 0);
  return Buffer.concat([len, td, crc]);
}

export function makePng(width, height) {
  const row = 1 + width * 3;
  const raw = randomBytes(row * height);
  for (let y = 0; y < height; y++) raw[y * row] = 0; // filter type None
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // truecolour
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", zlib.deflateSync(raw, { level: 0 })),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

/** Largest square-ish PNG under `maxBytes` (the service's limit is 10 MiB = 10,485,760 bytes). */
export function writePngUnder(file, maxBytes) {
  const width = 1800;
  // Stored deflate adds 5 bytes per 65,535; keep ~8 KiB of headroom.
  const height = Math.floor((maxBytes - 8192) / ((1 + width * 3) * (1 + 5 / 65535)));
  const png = makePng(width, height);
  if (png.length >= maxBytes) throw new Error(`PNG too big: ${png.length}`);
  writeFileSync(file, png);
  return png.length;
}
