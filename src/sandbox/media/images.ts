import { parseAspectRatio } from "../../models.js";
import type { ImageResolution, OutputFormat } from "../../models.js";
import { encodeJpeg } from "./jpeg.js";
import { encodePng } from "./png.js";
import { encodeWebp } from "./webp.js";

/** Long side in pixels per resolution; the short side follows the aspect ratio. */
export const IMAGE_LONG_SIDE: Readonly<Record<ImageResolution, number>> = {
  "1k": 1024,
  "2k": 2048,
  "4k": 4096,
};

export const IMAGE_CONTENT_TYPES: Readonly<Record<OutputFormat, string>> = {
  png: "image/png",
  jpg: "image/jpeg",
  webp: "image/webp",
};

export function imageSize(
  resolution: ImageResolution,
  aspectRatio: string,
): { width: number; height: number } {
  const ratio = parseAspectRatio(aspectRatio) ?? { width: 1, height: 1 };
  const long = IMAGE_LONG_SIDE[resolution];
  if (ratio.width >= ratio.height) {
    return { width: long, height: Math.max(1, Math.round((long * ratio.height) / ratio.width)) };
  }
  return { width: Math.max(1, Math.round((long * ratio.width) / ratio.height)), height: long };
}

export async function renderImage(
  format: OutputFormat,
  width: number,
  height: number,
  seed: number,
): Promise<Buffer> {
  switch (format) {
    case "png":
      return encodePng(width, height, seed);
    case "jpg":
      return encodeJpeg(width, height, seed);
    case "webp":
      return encodeWebp(width, height, seed);
  }
}

/** A small stable hash so an image's colours follow its prompt. */
export function seedOf(text: string): number {
  let hash = 2166136261;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 16777619);
  return hash >>> 0;
}

/**
 * Images are rendered when first fetched, not when generated, and only the last few are kept: a demo that
 * generates hundreds of 4k images keeps a bounded amount of memory.
 */
export class ImageCache {
  private readonly entries = new Map<string, Promise<Buffer>>();

  constructor(private readonly capacity = 8) {}

  get(id: string, render: () => Promise<Buffer>): Promise<Buffer> {
    const hit = this.entries.get(id);
    if (hit) {
      this.entries.delete(id);
      this.entries.set(id, hit);
      return hit;
    }
    const rendering = render();
    this.entries.set(id, rendering);
    rendering.catch(() => this.entries.delete(id));
    for (const key of this.entries.keys()) {
      if (this.entries.size <= this.capacity) break;
      this.entries.delete(key);
    }
    return rendering;
  }
}
