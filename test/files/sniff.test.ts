import { describe, expect, it } from "vitest";

import { extensionFor, sniffImageType, sniffMediaExtension } from "../../src/files/sniff.js";
import { GIF_BYTES, JPEG_BYTES, PNG_BYTES, WEBM_BYTES, WEBP_BYTES, isoMedia } from "./fixtures.js";

describe("sniffImageType", () => {
  it("recognises JPEG, PNG and WebP by their magic bytes", () => {
    expect(sniffImageType(JPEG_BYTES)).toBe("image/jpeg");
    expect(sniffImageType(PNG_BYTES)).toBe("image/png");
    expect(sniffImageType(WEBP_BYTES)).toBe("image/webp");
  });

  it("accepts every WebP chunk kind", () => {
    for (const chunk of ["VP8 ", "VP8L", "VP8X"]) {
      const bytes = Buffer.from(WEBP_BYTES);
      bytes.write(chunk, 12, "latin1");
      expect(sniffImageType(bytes)).toBe("image/webp");
    }
  });

  it("refuses truncated signatures", () => {
    expect(sniffImageType(new Uint8Array())).toBeUndefined();
    expect(sniffImageType(JPEG_BYTES.subarray(0, 2))).toBeUndefined();
    expect(sniffImageType(PNG_BYTES.subarray(0, 7))).toBeUndefined();
    expect(sniffImageType(WEBP_BYTES.subarray(0, 15))).toBeUndefined();
  });

  it("refuses look-alikes", () => {
    const almostPng = Buffer.from(PNG_BYTES);
    almostPng[7] = 0x00;
    expect(sniffImageType(almostPng)).toBeUndefined();
    expect(sniffImageType(Buffer.from("PNG image, honest"))).toBeUndefined();
    const wave = Buffer.from(WEBP_BYTES);
    wave.write("WAVEfmt ", 8, "latin1");
    expect(sniffImageType(wave)).toBeUndefined();
    const webpOtherChunk = Buffer.from(WEBP_BYTES);
    webpOtherChunk.write("ALPH", 12, "latin1");
    expect(sniffImageType(webpOtherChunk)).toBeUndefined();
    expect(sniffImageType(GIF_BYTES)).toBeUndefined();
    expect(sniffImageType(Buffer.from([0xff, 0xd8, 0x00]))).toBeUndefined();
  });

  it("names extensions", () => {
    expect(extensionFor("image/jpeg")).toBe("jpg");
    expect(extensionFor("image/png")).toBe("png");
    expect(extensionFor("image/webp")).toBe("webp");
  });
});

describe("sniffMediaExtension", () => {
  it("recognises video and image containers", () => {
    expect(sniffMediaExtension(isoMedia("isom"))).toBe("mp4");
    expect(sniffMediaExtension(isoMedia("mp42"))).toBe("mp4");
    expect(sniffMediaExtension(isoMedia("qt  "))).toBe("mov");
    expect(sniffMediaExtension(WEBM_BYTES)).toBe("webm");
    expect(sniffMediaExtension(GIF_BYTES)).toBe("gif");
    expect(sniffMediaExtension(PNG_BYTES)).toBe("png");
    expect(sniffMediaExtension(JPEG_BYTES)).toBe("jpg");
    expect(sniffMediaExtension(WEBP_BYTES)).toBe("webp");
  });

  it("does not call still-image ISO files or implausible boxes video", () => {
    expect(sniffMediaExtension(isoMedia("avif"))).toBeUndefined();
    expect(sniffMediaExtension(isoMedia("heic"))).toBeUndefined();
    expect(sniffMediaExtension(isoMedia("isom", 4))).toBeUndefined();
    expect(sniffMediaExtension(isoMedia("\x01\x02\x03\x04"))).toBeUndefined();
  });

  it("returns undefined for text, HTML and truncated heads", () => {
    expect(sniffMediaExtension(Buffer.from("<!doctype html><html>"))).toBeUndefined();
    expect(sniffMediaExtension(isoMedia("isom").subarray(0, 10))).toBeUndefined();
    expect(sniffMediaExtension(Buffer.from("GIF8"))).toBeUndefined();
    expect(sniffMediaExtension(new Uint8Array())).toBeUndefined();
  });
});
