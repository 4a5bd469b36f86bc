import { crc32, inflateSync } from "node:zlib";

/** Independent structural checks of the images the sandbox makes: enough to know a decoder will take them. */

export function checkPng(
  bytes: Buffer,
  options: { inflate?: boolean } = {},
): { width: number; height: number } {
  if (!bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])))
    throw new Error("PNG signature");
  let offset = 8;
  let width = 0;
  let height = 0;
  const idat: Buffer[] = [];
  let sawEnd = false;
  while (offset < bytes.length) {
    const length = bytes.readUInt32BE(offset);
    const type = bytes.toString("latin1", offset + 4, offset + 8);
    const data = bytes.subarray(offset + 8, offset + 8 + length);
    const crc = bytes.readUInt32BE(offset + 8 + length);
    if (crc32(bytes.subarray(offset + 4, offset + 8 + length)) !== crc) throw new Error(`PNG CRC of ${type}`);
    if (type === "IHDR") {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      if (data[8] !== 8 || data[9] !== 2) throw new Error("PNG: expected 8-bit RGB");
    }
    if (type === "IDAT") idat.push(data);
    if (type === "IEND") sawEnd = true;
    offset += 12 + length;
  }
  if (!sawEnd || offset !== bytes.length) throw new Error("PNG: IEND must end the file");
  if (options.inflate !== false) {
    const raw = inflateSync(Buffer.concat(idat));
    if (raw.length !== height * (1 + width * 3)) throw new Error(`PNG: ${raw.length} bytes of scanlines`);
  }
  return { width, height };
}

export function checkJpeg(bytes: Buffer): { width: number; height: number } {
  if (bytes[0] !== 0xff || bytes[1] !== 0xd8) throw new Error("JPEG: no SOI");
  if (bytes[bytes.length - 2] !== 0xff || bytes[bytes.length - 1] !== 0xd9) throw new Error("JPEG: no EOI");
  let offset = 2;
  let size: { width: number; height: number } | undefined;
  for (;;) {
    if (bytes[offset] !== 0xff) throw new Error(`JPEG: no marker at ${offset}`);
    const marker = bytes[offset + 1] ?? 0;
    const length = bytes.readUInt16BE(offset + 2);
    if (marker === 0xc0 || marker === 0xc1 || marker === 0xc2) {
      size = { height: bytes.readUInt16BE(offset + 5), width: bytes.readUInt16BE(offset + 7) };
    }
    if (marker === 0xda) break;
    offset += 2 + length;
  }
  if (!size) throw new Error("JPEG: no SOF");
  return size;
}

export function checkWebp(bytes: Buffer): { width: number; height: number } {
  if (bytes.toString("latin1", 0, 4) !== "RIFF" || bytes.toString("latin1", 8, 12) !== "WEBP")
    throw new Error("WebP: no RIFF/WEBP");
  if (bytes.readUInt32LE(4) !== bytes.length - 8) throw new Error("WebP: RIFF size");
  if (bytes.toString("latin1", 12, 16) !== "VP8L") throw new Error("WebP: expected VP8L");
  const chunkSize = bytes.readUInt32LE(16);
  if (20 + chunkSize + (chunkSize % 2) !== bytes.length) throw new Error("WebP: chunk size");
  if (bytes[20] !== 0x2f) throw new Error("WebP: VP8L signature");
  const bits = bytes.readUInt32LE(21);
  return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
}
