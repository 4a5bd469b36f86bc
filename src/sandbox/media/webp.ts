import { ByteSink } from "./bits.js";

/**
 * A lossless (VP8L) WebP of one flat colour. Each of its five prefix codes is a "simple code" with a single
 * symbol, which costs zero bits per pixel, so the file is about 40 bytes at any size up to 16384 px.
 */
export function encodeWebp(width: number, height: number, seed: number): Buffer {
  if (width < 1 || height < 1 || width > 16384 || height > 16384)
    throw new RangeError("WebP sides must be 1..16384");
  const bits = new LsbBitWriter();
  bits.write(0x2f, 8); // VP8L signature
  bits.write(width - 1, 14);
  bits.write(height - 1, 14);
  bits.write(0, 1); // alpha_is_used
  bits.write(0, 3); // version
  bits.write(0, 1); // no transform
  bits.write(0, 1); // no colour cache
  bits.write(0, 1); // no meta prefix codes
  const [red, green, blue] = flatColour(seed);
  for (const symbol of [green, red, blue, 255, 0]) {
    bits.write(1, 1); // simple code
    bits.write(0, 1); // one symbol
    bits.write(1, 1); // the symbol takes 8 bits
    bits.write(symbol, 8);
  }
  const payload = bits.finish();
  const padded = payload.length % 2 === 1 ? Buffer.concat([payload, Buffer.alloc(1)]) : payload;
  const header = Buffer.alloc(20);
  header.write("RIFF", 0, "latin1");
  header.writeUInt32LE(4 + 8 + padded.length, 4);
  header.write("WEBP", 8, "latin1");
  header.write("VP8L", 12, "latin1");
  header.writeUInt32LE(payload.length, 16);
  return Buffer.concat([header, padded]);
}

function flatColour(seed: number): [number, number, number] {
  return [64 + (seed & 0x7f), 96 + ((seed >> 7) & 0x7f), 128 + ((seed >> 14) & 0x7f)];
}

class LsbBitWriter {
  private readonly out = new ByteSink(64);
  private accumulator = 0;
  private count = 0;

  write(value: number, length: number): void {
    for (let i = 0; i < length; i++) {
      this.accumulator |= ((value >> i) & 1) << this.count;
      if (++this.count === 8) {
        this.out.push(this.accumulator);
        this.accumulator = 0;
        this.count = 0;
      }
    }
  }

  finish(): Buffer {
    if (this.count > 0) this.out.push(this.accumulator);
    this.accumulator = 0;
    this.count = 0;
    return this.out.toBuffer();
  }
}
