import { createDeflate } from "node:zlib";

/**
 * A PNG of any size with bounded memory: rows are fed to a streaming deflate a batch at a time, so a 4k
 * image never exists uncompressed in full. The picture is a two-axis gradient (red across, green down,
 * blue from the seed); with the Sub filter on the first row and Up on the others every row is a repeated
 * three-byte pattern, which deflate shrinks to almost nothing.
 */
export async function encodePng(width: number, height: number, seed: number): Promise<Buffer> {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // colour type: RGB
  const idat = await deflateRows(width, height, seed & 0xff);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", idat),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

function channel(position: number, size: number): number {
  return size <= 1 ? 0 : Math.round((position * 255) / (size - 1));
}

async function deflateRows(width: number, height: number, blue: number): Promise<Buffer> {
  const deflate = createDeflate({ level: 6 });
  const out: Buffer[] = [];
  deflate.on("data", (data: Buffer) => out.push(data));
  const done = new Promise<void>((resolve, reject) => {
    deflate.once("end", resolve);
    deflate.once("error", reject);
  });
  const rowBytes = 1 + width * 3;
  const rowsPerBatch = Math.max(1, Math.floor((1 << 20) / rowBytes));
  for (let y0 = 0; y0 < height; y0 += rowsPerBatch) {
    const rows = Math.min(rowsPerBatch, height - y0);
    const batch = Buffer.alloc(rows * rowBytes);
    for (let r = 0; r < rows; r++) {
      const y = y0 + r;
      const offset = r * rowBytes;
      if (y === 0) {
        batch[offset] = 1; // Sub: each byte is stored as the difference from the pixel to its left
        let previousRed = 0;
        for (let x = 0; x < width; x++) {
          const red = channel(x, width);
          batch[offset + 1 + x * 3] = (red - previousRed) & 0xff;
          if (x === 0) batch[offset + 3] = blue;
          previousRed = red;
        }
      } else {
        batch[offset] = 2; // Up: each byte is stored as the difference from the pixel above
        const greenStep = (channel(y, height) - channel(y - 1, height)) & 0xff;
        for (let x = 0; x < width; x++) batch[offset + 2 + x * 3] = greenStep;
      }
    }
    if (!deflate.write(batch)) await new Promise((resolve) => deflate.once("drain", resolve));
  }
  deflate.end();
  await done;
  return Buffer.concat(out);
}

function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, "latin1");
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

export function crc32(data: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of data) crc = (CRC_TABLE[(crc ^ byte) & 0xff] ?? 0) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}
