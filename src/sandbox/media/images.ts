/**
 * Real, decodable images of any size without an image library: a PNG gradient, and a JPEG and a lossless
 * WebP of one flat colour. Colours follow the prompt through `seed`.
 */
import { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import { crc32, createDeflate } from "node:zlib";
import { parseAspectRatio, type ImageResolution } from "../../models.js";

export const IMAGE_TYPES = { png: "image/png", jpg: "image/jpeg", webp: "image/webp" } as const;

/** The long side is 1024/2048/4096 px for 1k/2k/4k; the short side follows the aspect ratio. */
export function imageSize(
  resolution: ImageResolution,
  aspectRatio: string,
): { width: number; height: number } {
  const { width, height } = parseAspectRatio(aspectRatio) ?? { width: 1, height: 1 };
  const long = { "1k": 1024, "2k": 2048, "4k": 4096 }[resolution];
  const short = (a: number, b: number): number => Math.max(1, Math.round((long * a) / b));
  return width >= height
    ? { width: long, height: short(height, width) }
    : { width: short(width, height), height: long };
}

export const ENCODERS = { png: encodePng, jpg: encodeJpeg, webp: encodeWebp };

/** A small stable hash so an image's colours follow its prompt. */
export function seedOf(text: string): number {
  let hash = 2166136261;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 16777619);
  return hash >>> 0;
}

function gradient(position: number, size: number): number {
  return size <= 1 ? 0 : Math.min(255, Math.round((position * 255) / (size - 1)));
}

/** Red across, green down, blue from the seed; 8-bit RGB. */
export async function encodePng(width: number, height: number, seed: number): Promise<Buffer> {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2], 8); // bit depth 8, colour type RGB
  const idat = await buffer(Readable.from(pngRows(width, height, seed & 0xff)).pipe(createDeflate()));
  const chunk = (type: string, data: Buffer): Buffer => {
    const [head, crc] = [Buffer.alloc(8), Buffer.alloc(4)];
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, "latin1");
    crc.writeUInt32BE(crc32(data, crc32(type)), 0);
    return Buffer.concat([head, data, crc]);
  };
  const signature = Buffer.from("89504e470d0a1a0a", "hex");
  return Buffer.concat([
    signature,
    chunk("IHDR", header),
    chunk("IDAT", idat),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

/** Sub on the first row, Up on the others: each row repeats three bytes, which deflate shrinks to nothing. */
function* pngRows(width: number, height: number, blue: number): Generator<Buffer> {
  const rowBytes = 1 + width * 3;
  const first = Buffer.alloc(rowBytes);
  first[0] = 1; // Sub: each byte is the difference from the pixel to its left
  first[3] = blue;
  for (let x = 1; x < width; x++) first[1 + x * 3] = gradient(x, width) - gradient(x - 1, width);
  yield first;
  // Up: each byte is the difference from the pixel above. Rows go in batches of about 1 MiB.
  const batchRows = Math.ceil(2 ** 20 / rowBytes);
  for (let y = 1; y < height; y += batchRows) {
    const batch = Buffer.alloc(Math.min(batchRows, height - y) * rowBytes);
    for (let start = 0, row = y; start < batch.length; start += rowBytes, row++) {
      batch[start] = 2;
      const green = gradient(row, height) - gradient(row - 1, height);
      if (green > 0) batch.fill(Buffer.of(0, green, 0), start + 1, start + rowBytes);
    }
    yield batch;
  }
}

function flatColour(seed: number): [number, number, number] {
  return [64 + (seed & 0x7f), 96 + ((seed >> 7) & 0x7f), 128 + ((seed >> 14) & 0x7f)];
}

/**
 * A baseline JPEG of one flat colour: 4:4:4 YCbCr, each 8x8 block only a DC term and EOB, so no DCT. DC
 * table: ITU T.81 Annex K's luminance one; AC: EOB alone, coded "0". Later blocks: "00" (no DC change), "0".
 */
export function encodeJpeg(width: number, height: number, seed: number): Buffer {
  const segment = (marker: number, ...payload: number[]): number[] => {
    const length = payload.length + 2;
    return [0xff, marker, length >> 8, length & 0xff, ...payload];
  };
  const dcCounts = [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0];
  const dcCodes = ["00", "010", "011", "100", "101", "110", "1110", "11110", "111110"];
  const components = [1, 2, 3].flatMap((id) => [id, 0x11, 0]); // Y, Cb, Cr: no subsampling, both tables 0
  const [r, g, b] = flatColour(seed);
  const ycc = [0.299 * r + 0.587 * g + 0.114 * b, 128 - 0.168736 * r - 0.331264 * g + 0.5 * b];
  ycc.push(128 + 0.5 * r - 0.418688 * g - 0.081312 * b);
  let head = "";
  for (const value of ycc) {
    const dc = Math.round(value - 128);
    const size = dc === 0 ? 0 : Math.floor(Math.log2(Math.abs(dc))) + 1;
    const magnitude = dc > 0 ? dc : dc + (1 << size) - 1;
    head += `${dcCodes[size]}${size > 0 ? magnitude.toString(2).padStart(size, "0") : ""}0`;
  }
  const total = head.length + 9 * (Math.ceil(width / 8) * Math.ceil(height / 8) - 1);
  const scan = Buffer.alloc(Math.ceil(total / 8));
  const setBit = (i: number): void => void (scan[i >> 3]! |= 0x80 >> (i & 7));
  [...head].forEach((bit, i) => bit === "1" && setBit(i));
  for (let i = total; i < scan.length * 8; i++) setBit(i); // the last byte is padded with ones (T.81)
  // A 0xFF in entropy-coded data must be followed by a stuffed zero byte.
  const pieces: Buffer[] = [];
  let start = 0;
  for (let i = scan.indexOf(0xff); i >= 0; i = scan.indexOf(0xff, i + 1)) {
    pieces.push(scan.subarray(start, i + 1), Buffer.of(0));
    start = i + 1;
  }
  const headers = Buffer.from([
    ...[0xff, 0xd8, ...segment(0xe0, 0x4a, 0x46, 0x49, 0x46, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0)],
    // One quantization table of 8s: a DC coefficient of 8 * (mean - 128) becomes (mean - 128).
    ...segment(0xdb, 0x00, ...new Array<number>(64).fill(8)),
    ...segment(0xc0, 8, height >> 8, height & 0xff, width >> 8, width & 0xff, 3, ...components),
    ...segment(0xc4, 0x00, ...dcCounts, ...Array(12).keys(), 0x10, 1, ...new Array<number>(16).fill(0)),
    ...segment(0xda, 3, 1, 0x00, 2, 0x00, 3, 0x00, 0, 63, 0),
  ]);
  return Buffer.concat([headers, ...pieces, scan.subarray(start), Buffer.of(0xff, 0xd9)]);
}

/** A lossless (VP8L) WebP of one flat colour: five one-symbol prefix codes cost 0 bits per pixel. */
export function encodeWebp(width: number, height: number, seed: number): Buffer {
  if (width < 1 || height < 1 || width > 16384 || height > 16384)
    throw new RangeError("WebP sides must be 1..16384");
  const [red, green, blue] = flatColour(seed);
  let [bits, length] = [0n, 0n];
  const put = (value: number, count: number): void => {
    bits |= BigInt(value) << length;
    length += BigInt(count);
  };
  // Least significant bit first: the signature, the size, then alpha_is_used, version, transform, colour
  // cache and meta prefix codes all 0; then each prefix code: simple (1), one symbol (0) of 8 bits (1).
  put(0x2f, 8);
  put(width - 1, 14);
  put(height - 1, 14);
  put(0, 7);
  for (const symbol of [green, red, blue, 255, 0]) put(0b101 | (symbol << 3), 11);
  const payload = Buffer.alloc(Math.ceil(Number(length) / 8));
  payload.forEach((_, i) => (payload[i] = Number((bits >> BigInt(8 * i)) & 0xffn)));
  const file = Buffer.alloc(20 + payload.length + (payload.length % 2));
  file.write("RIFF", 0, "latin1");
  file.writeUInt32LE(file.length - 8, 4);
  file.write("WEBPVP8L", 8, "latin1");
  file.writeUInt32LE(payload.length, 16);
  payload.copy(file, 20);
  return file;
}
