#!/usr/bin/env node
/**
 * Draws the MCPB bundle's icon, mcpb/icon.png (committed): 512x512, the size Claude Desktop recommends, a
 * rounded violet square with a white play triangle and a spark (video and image generation). Drawn here in
 * code, so the repository holds no image from elsewhere and the icon can be changed by editing numbers.
 *
 * Usage: node scripts/make-icon.mjs [out]   (default mcpb/icon.png)
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { crc32, deflateSync } from "node:zlib";

const SIZE = 512;
const SAMPLES = 4; // per axis: 16 samples a pixel smooth the edges
const TOP = [99, 102, 241]; // gradient, top to bottom
const BOTTOM = [147, 51, 234];

const inRoundedSquare = (x, y) => {
  const margin = 16;
  const radius = 112;
  const cx = Math.min(Math.max(x, margin + radius), SIZE - margin - radius);
  const cy = Math.min(Math.max(y, margin + radius), SIZE - margin - radius);
  return (x - cx) ** 2 + (y - cy) ** 2 <= radius ** 2;
};

// The play triangle, pointing right, its centre of mass a little left of the middle.
const inPlay = (x, y) => {
  const [ax, ay, bx, by, cx, cy] = [190, 150, 190, 362, 374, 256];
  const side = (px, py, qx, qy) => (qx - px) * (y - py) - (qy - py) * (x - px);
  const d1 = side(ax, ay, bx, by);
  const d2 = side(bx, by, cx, cy);
  const d3 = side(cx, cy, ax, ay);
  return (d1 <= 0 && d2 <= 0 && d3 <= 0) || (d1 >= 0 && d2 >= 0 && d3 >= 0);
};

// A four-pointed spark in the upper right: |dx|^0.5 + |dy|^0.5 <= r^0.5 (an astroid-like star).
const inSpark = (x, y) => {
  const [cx, cy, r] = [392, 124, 58];
  return Math.sqrt(Math.abs(x - cx)) + Math.sqrt(Math.abs(y - cy)) <= Math.sqrt(r);
};

/** RGBA rows, each led by PNG filter byte 0. */
function drawPixels() {
  const rows = Buffer.alloc(SIZE * (SIZE * 4 + 1));
  for (let y = 0; y < SIZE; y += 1) {
    const t = y / (SIZE - 1);
    const background = TOP.map((top, i) => top + (BOTTOM[i] - top) * t);
    for (let x = 0; x < SIZE; x += 1) {
      let square = 0;
      let white = 0;
      for (let sy = 0; sy < SAMPLES; sy += 1) {
        for (let sx = 0; sx < SAMPLES; sx += 1) {
          const px = x + (sx + 0.5) / SAMPLES;
          const py = y + (sy + 0.5) / SAMPLES;
          if (!inRoundedSquare(px, py)) continue;
          square += 1;
          if (inPlay(px, py) || inSpark(px, py)) white += 1;
        }
      }
      const at = y * (SIZE * 4 + 1) + 1 + x * 4;
      const mix = square === 0 ? 0 : white / square;
      for (let i = 0; i < 3; i += 1) rows[at + i] = Math.round(background[i] * (1 - mix) + 255 * mix);
      rows[at + 3] = Math.round((255 * square) / SAMPLES ** 2);
    }
  }
  return rows;
}

function chunk(type, data) {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

function renderIcon() {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(SIZE, 0);
  header.writeUInt32BE(SIZE, 4);
  header.set([8, 6, 0, 0, 0], 8); // 8-bit RGBA, deflate, no interlace
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(drawPixels(), { level: 9 })),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const out = path.resolve(process.argv[2] ?? path.join(root, "mcpb", "icon.png"));
const png = renderIcon();
writeFileSync(out, png);
process.stderr.write(
  `make-icon: ${path.relative(process.cwd(), out)} (${SIZE}x${SIZE}, ${png.length} bytes)\n`,
);
