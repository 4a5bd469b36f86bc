/**
 * makePreviews against a real HTTP server on 127.0.0.1 serving hostile and heavy images: a decompression
 * bomb header, a truncated PNG, noise that compresses badly, more images than the result may show, and a
 * server without the optional image library.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { deflateSync } from "node:zlib";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pngChunk } from "../files/fixtures.js";
import { MAX_INPUT_PIXELS } from "../../src/media/preview-worker.js";
import {
  MAX_PREVIEWS,
  PREVIEW_BUDGET_CHARS,
  makePreviews,
  type PreviewOptions,
} from "../../src/media/previews.js";

/** A valid PNG header claiming `side` x `side` RGB pixels, followed by a few bytes of data: 100 bytes in all. */
function bombPng(side: number): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(side, 0);
  header.writeUInt32BE(side, 4);
  header.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from("89504e470d0a1a0a", "hex"),
    pngChunk("IHDR", header),
    pngChunk("IDAT", deflateSync(Buffer.alloc(64))),
    pngChunk("IEND", Buffer.alloc(0)),
  ]);
}

let server: Server;
let origin: string;
const files = new Map<string, Buffer>();

beforeAll(async () => {
  const noise = Buffer.alloc(2048 * 2048 * 3);
  for (let i = 0; i < noise.length; i++) noise[i] = (i * 2654435761) >>> 24;
  files.set(
    "/noise.png",
    await sharp(noise, { raw: { width: 2048, height: 2048, channels: 3 } })
      .png()
      .toBuffer(),
  );
  files.set("/bomb.png", bombPng(100_000));
  const small = await sharp({ create: { width: 64, height: 64, channels: 3, background: "#3366cc" } })
    .png()
    .toBuffer();
  files.set("/truncated.png", small.subarray(0, 60));
  server = createServer((req, res) => {
    const body = files.get(req.url ?? "");
    res.writeHead(body ? 200 : 404, { "content-type": "image/png" });
    res.end(body ?? "missing");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const options = (extra: Partial<PreviewOptions> = {}): PreviewOptions => ({
  maxSide: 1024,
  allowHosts: ["127.0.0.1"],
  signal: new AbortController().signal,
  ...extra,
});

describe("makePreviews", () => {
  it("refuses a decompression bomb from its header, without decoding it", async () => {
    expect(100_000 * 100_000).toBeGreaterThan(MAX_INPUT_PIXELS);
    const { images, notes } = await makePreviews(
      [{ url: `${origin}/bomb.png`, label: "the image" }],
      options(),
    );
    expect(images).toEqual([]);
    expect(notes).toEqual([
      "No preview of the image: the image claims 100000x100000 pixels, above the 50-megapixel preview limit, so it was not decoded.",
    ]);
  });

  it("says an image that cannot be decoded could not be decoded", async () => {
    const { images, notes } = await makePreviews(
      [{ url: `${origin}/truncated.png`, label: "the image" }],
      options(),
    );
    expect(images).toEqual([]);
    expect(notes[0]).toMatch(/^No preview of the image: the image could not be decoded \(.+\)\.$/);
  });

  it("shows at most four previews, all of them together inside the budget, and names the rest", async () => {
    const sources = Array.from({ length: 5 }, (_, index) => ({
      url: `${origin}/noise.png`,
      label: `image ${index + 1}`,
    }));
    const { images, notes } = await makePreviews(sources, options());
    expect(images).toHaveLength(MAX_PREVIEWS);
    expect(notes).toEqual(["Previews show the first 4 of 5 images."]);
    const total = images.reduce((sum, image) => sum + image.data.length, 0);
    expect(total).toBeLessThanOrEqual(PREVIEW_BUDGET_CHARS);
    for (const image of images) {
      const metadata = await sharp(Buffer.from(image.data, "base64")).metadata();
      expect(metadata.format).toBe("jpeg");
      // Noise does not compress: the preview had to get smaller than the 1024 px it may have.
      expect(Math.max(metadata.width ?? 0, metadata.height ?? 0)).toBeLessThan(1024);
    }
  });

  it("keeps loopback addresses out unless the host is the service's own", async () => {
    const { images, notes } = await makePreviews(
      [{ url: `${origin}/noise.png`, label: "the image" }],
      options({ allowHosts: [] }),
    );
    expect(images).toEqual([]);
    expect(notes[0]).toMatch(/^No preview of the image: Refused to fetch .*loopback address/);
  });

  it("says previews are unavailable when the image library cannot be loaded", async () => {
    const missing = Object.assign(new Error("Cannot find package 'sharp'"), { code: "ERR_MODULE_NOT_FOUND" });
    const { images, notes } = await makePreviews(
      [{ url: `${origin}/noise.png`, label: "the image" }],
      options({ loadSharp: () => Promise.reject(missing) }),
    );
    expect(images).toEqual([]);
    expect(notes[0]).toMatch(/^No preview: previews are unavailable .*sharp.*Cannot find package 'sharp'/);
  });
});
