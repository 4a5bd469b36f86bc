/**
 * Checks, in one streaming pass, that an image file ends where its image ends. Magic bytes alone admit a
 * polyglot: a real image followed by a ZIP archive, an HTML page or a video, which the service would host
 * at a public URL. Only the container is walked (chunk and segment lengths), never the pixels, so memory
 * stays constant and valid images of any size pass.
 */
import type { UploadMimeType } from "../models.js";

/** Feeds the bytes of one file in order; `finish` says what is wrong, or `undefined` when it is fine. */
export interface ContainerCheck {
  update(chunk: Uint8Array): void;
  /**
   * The problem as a sentence that follows the file's name ("has 1,234 bytes after ..."), ending with
   * what to do; `undefined` when the container ends exactly where the image ends.
   */
  finish(): string | undefined;
}

/** A check for `type`; `size` is the exact number of bytes that will be fed. */
export function createContainerCheck(type: UploadMimeType, size: number): ContainerCheck {
  switch (type) {
    case "image/png":
      return new PngCheck(size);
    case "image/jpeg":
      return new JpegCheck(size);
    case "image/webp":
      return new WebpCheck(size);
  }
}

/** Runs the check over bytes held in memory (base64 uploads). */
export function checkContainer(type: UploadMimeType, bytes: Uint8Array): string | undefined {
  const check = createContainerCheck(type, bytes.length);
  check.update(bytes);
  return check.finish();
}

const PNG_SIGNATURE_BYTES = 8;
const PNG_CHUNK_OVERHEAD = 12; // length, type, CRC
const MAX_PNG_CHUNK = 0x7fffffff;
const REEXPORT = {
  "image/png": "re-export it as a plain PNG and call again.",
  "image/jpeg": "re-export it as a plain JPEG and call again.",
  "image/webp": "re-export it as a plain WebP and call again.",
} as const;
const NAMES = { "image/png": "PNG", "image/jpeg": "JPEG", "image/webp": "WebP" } as const;

function appended(type: UploadMimeType, bytes: number): string {
  return (
    `has ${formatCount(bytes)} bytes after the end of the ${NAMES[type]} image (appended data such as a ` +
    `ZIP archive, an HTML page or a video); ${REEXPORT[type]}`
  );
}

function cutShort(type: UploadMimeType, what: string): string {
  return `is cut short or damaged: ${what}; ${REEXPORT[type]}`;
}

function formatCount(value: number): string {
  return value.toLocaleString("en-US");
}

// Signature, then chunks of length(4, big-endian) + type(4) + data + CRC(4), up to and including IEND.
class PngCheck implements ContainerCheck {
  private position = 0;
  private nextHeader = PNG_SIGNATURE_BYTES;
  private readonly header = Buffer.alloc(8);
  private headerFill = 0;
  private chunks = 0;
  private end: number | undefined;
  private broken: string | undefined;

  constructor(private readonly size: number) {}

  update(chunk: Uint8Array): void {
    let index = 0;
    while (index < chunk.length && this.end === undefined && this.broken === undefined) {
      if (this.position < this.nextHeader) {
        const skip = Math.min(this.nextHeader - this.position, chunk.length - index);
        this.position += skip;
        index += skip;
        continue;
      }
      const take = Math.min(8 - this.headerFill, chunk.length - index);
      this.header.set(chunk.subarray(index, index + take), this.headerFill);
      this.headerFill += take;
      this.position += take;
      index += take;
      if (this.headerFill === 8) this.readHeader();
    }
  }

  finish(): string | undefined {
    if (this.broken !== undefined) return this.broken;
    if (this.end === undefined || this.end > this.size) {
      return cutShort("image/png", "it ends before the PNG's end marker (the IEND chunk)");
    }
    if (this.end < this.size) return appended("image/png", this.size - this.end);
    return undefined;
  }

  private readHeader(): void {
    this.headerFill = 0;
    const start = this.position - 8;
    const length = this.header.readUInt32BE(0);
    const type = this.header.toString("latin1", 4, 8);
    const notIhdrFirst = this.chunks === 0 && type !== "IHDR";
    if (length > MAX_PNG_CHUNK || !/^[A-Za-z]{4}$/.test(type) || notIhdrFirst) {
      this.broken = `is not a well-formed PNG (the chunk at byte ${formatCount(start)} is invalid); ${REEXPORT["image/png"]}`;
      return;
    }
    this.chunks++;
    this.nextHeader = start + PNG_CHUNK_OVERHEAD + length;
    if (type === "IEND") this.end = this.nextHeader;
  }
}

// RIFF: "RIFF", size (4, little-endian, counts from byte 8), then the payload and one pad byte if odd.
class WebpCheck implements ContainerCheck {
  private readonly head = Buffer.alloc(8);
  private headFill = 0;

  constructor(private readonly size: number) {}

  update(chunk: Uint8Array): void {
    if (this.headFill === 8) return;
    const take = Math.min(8 - this.headFill, chunk.length);
    this.head.set(chunk.subarray(0, take), this.headFill);
    this.headFill += take;
  }

  finish(): string | undefined {
    if (this.headFill < 8) return cutShort("image/webp", "it ends inside the RIFF header");
    const riffSize = this.head.readUInt32LE(4);
    const end = 8 + riffSize + (riffSize % 2);
    if (end > this.size) {
      return cutShort(
        "image/webp",
        `its RIFF header declares ${formatCount(end)} bytes but the file holds ${formatCount(this.size)}`,
      );
    }
    if (end < this.size) return appended("image/webp", this.size - end);
    return undefined;
  }
}

type JpegState =
  | "soi-ff" // expecting the FF of an SOI
  | "soi-d8"
  | "marker" // expecting the FF that starts a marker
  | "marker-code" // after FF: the marker code (more FF are fill bytes)
  | "length-high"
  | "length-low"
  | "skip" // inside a segment's payload
  | "entropy" // compressed scan data, ended by the next marker
  | "entropy-ff"
  | "after-eoi"; // an image ended: only the SOI of another image may follow

const EOI = 0xd9;
const SOS = 0xda;

/**
 * Walks markers and length-delimited segments (so an EXIF thumbnail's own EOI inside APP1 is skipped) and
 * scans entropy-coded data for the next marker. After an EOI only another complete JPEG may follow: the
 * Multi-Picture layout of Ultra HDR and gain-map photos stores its extra images that way.
 */
class JpegCheck implements ContainerCheck {
  private state: JpegState = "soi-ff";
  private position = 0;
  private segmentMarker = 0;
  private segmentLength = 0;
  private skipUntil = 0;
  private lastImageEnd: number | undefined;
  private broken = false;
  private brokenAt = 0;

  constructor(private readonly size: number) {}

  update(chunk: Uint8Array): void {
    let index = 0;
    while (index < chunk.length && !this.broken) {
      if (this.state === "skip") {
        const skip = Math.min(this.skipUntil - this.position, chunk.length - index);
        index += skip;
        this.position += skip;
        if (this.position === this.skipUntil) this.state = this.segmentMarker === SOS ? "entropy" : "marker";
        continue;
      }
      if (this.state === "entropy") {
        const next = chunk.indexOf(0xff, index);
        const stop = next === -1 ? chunk.length : next;
        this.position += stop - index;
        index = stop;
        if (next === -1) continue;
      }
      this.step(chunk[index]!);
      index++;
      this.position++;
    }
  }

  finish(): string | undefined {
    if (!this.broken && this.state === "after-eoi" && this.lastImageEnd === this.size) return undefined;
    if (this.lastImageEnd !== undefined) return appended("image/jpeg", this.size - this.lastImageEnd);
    if (this.broken) {
      return `is not a well-formed JPEG (its marker structure breaks at byte ${formatCount(this.brokenAt)}); ${REEXPORT["image/jpeg"]}`;
    }
    return cutShort("image/jpeg", "it ends before the JPEG's end marker (EOI, FF D9)");
  }

  private step(byte: number): void {
    switch (this.state) {
      case "soi-ff":
      case "after-eoi":
        if (byte === 0xff) this.state = "soi-d8";
        else this.fail();
        return;
      case "soi-d8":
        if (byte === 0xd8) this.state = "marker";
        else this.fail();
        return;
      case "marker":
        if (byte === 0xff) this.state = "marker-code";
        else this.fail();
        return;
      case "marker-code":
        this.marker(byte, false);
        return;
      case "entropy":
        this.state = "entropy-ff"; // the loop stops entropy scanning only on FF
        return;
      case "entropy-ff":
        this.marker(byte, true);
        return;
      case "length-high":
        this.segmentLength = byte << 8;
        this.state = "length-low";
        return;
      case "length-low":
        this.segmentLength |= byte;
        if (this.segmentLength < 2) {
          this.fail();
          return;
        }
        // The two length bytes count themselves; this byte is the second.
        this.skipUntil = this.position + 1 + this.segmentLength - 2;
        this.state = "skip";
        return;
      case "skip":
        return;
    }
  }

  private fail(): void {
    this.broken = true;
    this.brokenAt = this.position;
  }

  private marker(code: number, inEntropy: boolean): void {
    if (code === 0xff) return; // fill byte before a marker
    if (inEntropy && (code === 0x00 || (code >= 0xd0 && code <= 0xd7))) {
      this.state = "entropy"; // a stuffed FF or a restart marker inside the scan
      return;
    }
    if (code === EOI) {
      this.lastImageEnd = this.position + 1;
      this.state = "after-eoi";
      return;
    }
    if ((code >= 0xd0 && code <= 0xd7) || code === 0x01) {
      this.state = "marker";
      return;
    }
    if (code === 0x00 || code === 0xd8) {
      this.fail();
      return;
    }
    this.segmentMarker = code;
    this.state = "length-high";
  }
}
