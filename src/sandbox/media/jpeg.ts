import { ByteSink } from "./bits.js";

/**
 * A baseline JPEG of any size without an image library: every 8x8 block carries only its DC term (its mean
 * colour) and an end-of-block, so the encoder needs no DCT. The result is a blocky version of the PNG's
 * gradient, 4:4:4 YCbCr, decodable by any JPEG reader. The AC table holds the single symbol EOB, coded "0".
 */
export function encodeJpeg(width: number, height: number, seed: number): Buffer {
  const out = new ByteSink(4096);
  out.pushAll([0xff, 0xd8]);
  segment(out, 0xe0, [0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00]);
  // One quantization table of 8s: a DC coefficient of 8 * (mean - 128) becomes (mean - 128).
  segment(out, 0xdb, [0x00, ...new Array<number>(64).fill(8)]);
  segment(out, 0xc0, [
    8,
    height >> 8,
    height & 0xff,
    width >> 8,
    width & 0xff,
    3,
    1,
    0x11,
    0,
    2,
    0x11,
    0,
    3,
    0x11,
    0,
  ]);
  segment(out, 0xc4, [0x00, ...DC_COUNTS, ...DC_SYMBOLS, 0x10, 1, ...new Array<number>(15).fill(0), 0x00]);
  segment(out, 0xda, [3, 1, 0x00, 2, 0x00, 3, 0x00, 0, 63, 0]);
  writeScan(out, width, height, seed & 0xff);
  out.pushAll([0xff, 0xd9]);
  return out.toBuffer();
}

/** The standard luminance DC table of ITU T.81 Annex K. */
const DC_COUNTS = [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0];
const DC_SYMBOLS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
const DC_CODES = canonicalCodes(DC_COUNTS, DC_SYMBOLS);

function canonicalCodes(counts: number[], symbols: number[]): Map<number, { code: number; length: number }> {
  const codes = new Map<number, { code: number; length: number }>();
  let code = 0;
  let index = 0;
  counts.forEach((count, i) => {
    for (let n = 0; n < count; n++) codes.set(symbols[index++] ?? 0, { code: code++, length: i + 1 });
    code <<= 1;
  });
  return codes;
}

function segment(out: ByteSink, marker: number, payload: number[]): void {
  const length = payload.length + 2;
  out.pushAll([0xff, marker, length >> 8, length & 0xff, ...payload]);
}

function writeScan(out: ByteSink, width: number, height: number, blue: number): void {
  let accumulator = 0;
  let bitCount = 0;
  const writeBits = (value: number, length: number): void => {
    for (let i = length - 1; i >= 0; i--) {
      accumulator = (accumulator << 1) | ((value >> i) & 1);
      if (++bitCount === 8) {
        out.push(accumulator);
        // A 0xFF in entropy-coded data must be followed by a stuffed zero byte.
        if (accumulator === 0xff) out.push(0);
        accumulator = 0;
        bitCount = 0;
      }
    }
  };
  const previous = [0, 0, 0];
  const blocksAcross = Math.ceil(width / 8);
  const blocksDown = Math.ceil(height / 8);
  for (let by = 0; by < blocksDown; by++) {
    const green = gradient(by * 8 + 4, height);
    for (let bx = 0; bx < blocksAcross; bx++) {
      const red = gradient(bx * 8 + 4, width);
      const ycc = toYCbCr(red, green, blue);
      for (let c = 0; c < 3; c++) {
        const dc = Math.round((ycc[c] ?? 128) - 128);
        const diff = dc - (previous[c] ?? 0);
        previous[c] = dc;
        const category = diff === 0 ? 0 : Math.floor(Math.log2(Math.abs(diff))) + 1;
        const huffman = DC_CODES.get(category);
        if (!huffman) throw new Error(`DC difference ${diff} out of range`);
        writeBits(huffman.code, huffman.length);
        if (category > 0) writeBits(diff > 0 ? diff : diff + (1 << category) - 1, category);
        writeBits(0, 1); // end of block
      }
    }
  }
  if (bitCount > 0) writeBits(0x7f, 8 - bitCount); // pad the last byte with ones, as T.81 requires
}

function gradient(position: number, size: number): number {
  return size <= 1 ? 0 : Math.min(255, Math.round((position * 255) / (size - 1)));
}

function toYCbCr(r: number, g: number, b: number): [number, number, number] {
  return [
    0.299 * r + 0.587 * g + 0.114 * b,
    128 - 0.168736 * r - 0.331264 * g + 0.5 * b,
    128 + 0.5 * r - 0.418688 * g - 0.081312 * b,
  ];
}
