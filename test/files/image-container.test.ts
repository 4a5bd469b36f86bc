import { describe, expect, it } from "vitest";

import { ValidationError } from "../../src/api/errors.js";
import { checkContainer } from "../../src/files/image-container.js";
import { imageFromBase64 } from "../../src/files/local-image.js";
import { encodeJpeg, encodePng, encodeWebp } from "../../src/sandbox/media/images.js";
import { tinyPng } from "../helpers/harness.js";
import { JPEG_BYTES, PNG_BYTES, WEBP_BYTES, pngChunk, pngOfSize } from "./fixtures.js";

const verdict = checkContainer;

function jpegSegment(marker: number, payload: Buffer): Buffer {
  const length = Buffer.alloc(2);
  length.writeUInt16BE(payload.length + 2);
  return Buffer.concat([Buffer.from([0xff, marker]), length, payload]);
}

const ZIP = Buffer.concat([Buffer.from("PK\x03\x04", "latin1"), Buffer.alloc(1230, 3)]);
const HTML = Buffer.from("<!doctype html><script>alert(1)</script>");

describe("valid images pass", () => {
  it("PNGs from the sandbox encoder, the harness and the fixtures", async () => {
    for (const png of [
      await encodePng(1, 1, 0),
      await encodePng(64, 48, 7),
      await encodePng(1920, 1080, 3),
      tinyPng(),
      tinyPng(9, 5),
      PNG_BYTES,
      pngOfSize(300_000),
    ]) {
      expect(verdict("image/png", png)).toBeUndefined();
    }
  });

  it("JPEGs from the sandbox encoder (with their entropy-coded scans) and the fixture", () => {
    for (const jpeg of [encodeJpeg(1, 1, 0), encodeJpeg(17, 9, 200), encodeJpeg(1280, 720, 91), JPEG_BYTES]) {
      expect(verdict("image/jpeg", jpeg)).toBeUndefined();
    }
  });

  it("WebPs from the sandbox encoder and the fixture", () => {
    for (const webp of [
      encodeWebp(1, 1, 0),
      encodeWebp(333, 17, 5),
      encodeWebp(16384, 16384, 9),
      WEBP_BYTES,
    ]) {
      expect(verdict("image/webp", webp)).toBeUndefined();
    }
  });

  it("a WebP whose RIFF size is odd, followed by its pad byte", () => {
    const webp = Buffer.concat([
      Buffer.from("RIFF"),
      Buffer.alloc(4),
      Buffer.from("WEBPVP8L"),
      Buffer.alloc(9, 1),
    ]);
    webp.writeUInt32LE(webp.length - 8, 4); // 21: odd
    expect(verdict("image/webp", Buffer.concat([webp, Buffer.alloc(1)]))).toBeUndefined();
    expect(verdict("image/webp", webp)).toMatch(/cut short/);
  });

  it("a JPEG whose APP1 segment holds a whole thumbnail JPEG (its EOI is not the end)", () => {
    const [soi, rest] = [JPEG_BYTES.subarray(0, 2), encodeJpeg(8, 8, 1).subarray(2)];
    const exif = jpegSegment(0xe1, Buffer.concat([Buffer.from("Exif\0\0", "latin1"), encodeJpeg(4, 4, 2)]));
    expect(verdict("image/jpeg", Buffer.concat([soi, exif, rest]))).toBeUndefined();
  });

  it("a JPEG with fill bytes, restart markers and stuffed FF 00 in its scan", () => {
    const scan = Buffer.from([0x12, 0xff, 0x00, 0x34, 0xff, 0xd0, 0x56, 0xff, 0xff, 0xd7, 0x78]);
    const jpeg = Buffer.concat([
      Buffer.from([0xff, 0xd8]),
      jpegSegment(0xdb, Buffer.alloc(65, 8)),
      Buffer.from([0xff, 0xff]), // fill before a marker
      jpegSegment(0xda, Buffer.from([1, 1, 0, 0, 63, 0])),
      scan,
      Buffer.from([0xff, 0xd9]),
    ]);
    expect(verdict("image/jpeg", jpeg)).toBeUndefined();
  });

  it("a multi-picture JPEG (Ultra HDR / gain map layout: complete JPEGs one after another)", () => {
    const mpf = Buffer.concat([encodeJpeg(16, 16, 1), encodeJpeg(8, 8, 2)]);
    expect(verdict("image/jpeg", mpf)).toBeUndefined();
  });
});

describe("polyglots and damaged containers are refused", () => {
  it("a PNG followed by a ZIP archive, counting the appended bytes", () => {
    expect(verdict("image/png", Buffer.concat([tinyPng(), ZIP]))).toBe(
      "has 1,234 bytes after the end of the PNG image (appended data such as a ZIP archive, an HTML page or a video); re-export it as a plain PNG and call again.",
    );
  });

  it("a PNG cut short before IEND, or in the middle of IEND", () => {
    const png = tinyPng();
    expect(verdict("image/png", png.subarray(0, png.length - 12))).toMatch(
      /^is cut short or damaged: it ends before the PNG's end marker \(the IEND chunk\); re-export it/,
    );
    expect(verdict("image/png", png.subarray(0, png.length - 2))).toMatch(/cut short/);
  });

  it("a PNG whose first chunk is not IHDR, or whose chunk type is not letters", () => {
    const signature = PNG_BYTES.subarray(0, 8);
    expect(verdict("image/png", Buffer.concat([signature, pngChunk("IEND")]))).toMatch(
      /is not a well-formed PNG \(the chunk at byte 8 is invalid\)/,
    );
    const bad = Buffer.concat([signature, PNG_BYTES.subarray(8, 33), pngChunk("1234"), pngChunk("IEND")]);
    expect(verdict("image/png", bad)).toMatch(/the chunk at byte 33 is invalid/);
  });

  it("a PNG with a whole second PNG after IEND (a video or archive would read the same)", () => {
    expect(verdict("image/png", Buffer.concat([tinyPng(), tinyPng()]))).toMatch(
      new RegExp(`^has ${tinyPng().length} bytes after the end of the PNG image`),
    );
  });

  it("a JPEG followed by an HTML page, or by a ZIP", () => {
    const jpeg = encodeJpeg(32, 32, 5);
    expect(verdict("image/jpeg", Buffer.concat([jpeg, HTML]))).toBe(
      `has ${HTML.length} bytes after the end of the JPEG image (appended data such as a ZIP archive, an HTML page or a video); re-export it as a plain JPEG and call again.`,
    );
    expect(verdict("image/jpeg", Buffer.concat([jpeg, ZIP]))).toMatch(/^has 1,234 bytes after the end/);
  });

  it("a JPEG with data after its EOI that itself ends in FF D9", () => {
    const jpeg = encodeJpeg(8, 8, 5);
    const sneaky = Buffer.concat([jpeg, ZIP, Buffer.from([0xff, 0xd9])]);
    expect(verdict("image/jpeg", sneaky)).toMatch(/^has 1,236 bytes after the end of the JPEG image/);
  });

  it("a JPEG without its EOI, and one whose segments break", () => {
    const jpeg = encodeJpeg(8, 8, 5);
    expect(verdict("image/jpeg", jpeg.subarray(0, jpeg.length - 2))).toMatch(
      /^is cut short or damaged: it ends before the JPEG's end marker \(EOI, FF D9\)/,
    );
    const broken = Buffer.concat([
      Buffer.from([0xff, 0xd8]),
      Buffer.from("GIF89a"),
      Buffer.from([0xff, 0xd9]),
    ]);
    expect(verdict("image/jpeg", broken)).toMatch(
      /^is not a well-formed JPEG \(its marker structure breaks at byte 2\)/,
    );
  });

  it("a WebP whose RIFF size is too small (appended data) or too large (cut short)", () => {
    const webp = encodeWebp(10, 10, 1);
    expect(verdict("image/webp", Buffer.concat([webp, ZIP]))).toMatch(
      /^has 1,234 bytes after the end of the WebP image/,
    );
    const wrong = Buffer.from(webp);
    wrong.writeUInt32LE(webp.length + 100, 4);
    expect(verdict("image/webp", wrong)).toMatch(
      new RegExp(
        `^is cut short or damaged: its RIFF header declares ${webp.length + 108} bytes but the file holds ${webp.length}`,
      ),
    );
  });
});

describe("imageFromBase64 applies the same check", () => {
  const refusal = (bytes: Buffer): ValidationError => {
    try {
      imageFromBase64(bytes.toString("base64"), "x.png", { param: "data_base64" });
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationError);
      return error as ValidationError;
    }
    throw new Error("expected a refusal");
  };

  it("refuses a PNG+ZIP and a JPEG+HTML, naming the parameter", () => {
    expect(refusal(Buffer.concat([tinyPng(), ZIP])).message).toBe(
      "data_base64: the decoded data has 1,234 bytes after the end of the PNG image (appended data such as a ZIP archive, an HTML page or a video); re-export it as a plain PNG and call again.",
    );
    expect(refusal(Buffer.concat([encodeJpeg(4, 4, 1), HTML])).message).toMatch(
      /^data_base64: the decoded data has \d+ bytes after the end of the JPEG image/,
    );
  });

  it("accepts the sandbox's own images", async () => {
    for (const bytes of [await encodePng(30, 20, 1), encodeJpeg(30, 20, 1), encodeWebp(30, 20, 1)]) {
      expect(imageFromBase64(bytes.toString("base64"), "x", { param: "data_base64" }).size).toBe(
        bytes.length,
      );
    }
  });
});
