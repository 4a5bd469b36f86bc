/**
 * Checks that an image ends where its container ends (chunk and segment lengths, never pixels): magic bytes
 * alone admit a polyglot, an image followed by a ZIP or an HTML page the service would host publicly.
 */
import type { UploadMimeType } from "../models.js";

const NAMES = { "image/png": "PNG", "image/jpeg": "JPEG", "image/webp": "WebP" } as const;

/** What is wrong, as a sentence after the file's name ("has 1,234 bytes after ..."); undefined if nothing. */
export function checkContainer(type: UploadMimeType, bytes: Buffer): string | undefined {
  const reexport = `re-export it as a plain ${NAMES[type]} and call again.`;
  const verdict = (end: number | undefined, short: string, broken?: string): string | undefined => {
    if (end === bytes.length && broken === undefined) return undefined;
    if (end !== undefined && end < bytes.length) {
      return `has ${count(bytes.length - end)} bytes after the end of the ${NAMES[type]} image (appended data such as a ZIP archive, an HTML page or a video); ${reexport}`;
    }
    return broken !== undefined
      ? `is not a well-formed ${NAMES[type]} (${broken}); ${reexport}`
      : `is cut short or damaged: ${short}; ${reexport}`;
  };
  if (type === "image/webp") {
    // RIFF: "RIFF", a size counting from byte 8, the payload and one pad byte when the size is odd.
    if (bytes.length < 8) return verdict(undefined, "it ends inside the RIFF header");
    const end = 8 + bytes.readUInt32LE(4) + (bytes.readUInt32LE(4) % 2);
    return verdict(
      end,
      `its RIFF header declares ${count(end)} bytes but the file holds ${count(bytes.length)}`,
    );
  }
  if (type === "image/png") {
    const short = "it ends before the PNG's end marker (the IEND chunk)";
    // After the signature, chunks of length (4, big-endian), type (4), data and CRC (4), up to IEND.
    for (let at = 8; at + 8 <= bytes.length;) {
      const chunk = bytes.toString("latin1", at + 4, at + 8);
      if (
        bytes.readUInt32BE(at) > 0x7fffffff ||
        !/^[A-Za-z]{4}$/.test(chunk) ||
        (at === 8 && chunk !== "IHDR")
      ) {
        return verdict(undefined, short, `the chunk at byte ${count(at)} is invalid`);
      }
      at += 12 + bytes.readUInt32BE(at);
      if (chunk === "IEND") return verdict(at > bytes.length ? undefined : at, short);
    }
    return verdict(undefined, short);
  }
  const { end, brokenAt } = jpegEnd(bytes);
  const broken =
    brokenAt === undefined ? undefined : `its marker structure breaks at byte ${count(brokenAt)}`;
  return verdict(end, "it ends before the JPEG's end marker (EOI, FF D9)", broken);
}

/**
 * Walks JPEG segments (an EXIF thumbnail's EOI inside APP1 is skipped) and scans entropy-coded data for the
 * next marker. After an EOI only another complete JPEG may follow (Ultra HDR's Multi-Picture layout).
 */
function jpegEnd(bytes: Buffer): { end: number | undefined; brokenAt: number | undefined } {
  let end: number | undefined;
  let at = 0;
  const stop = (brokenAt?: number) => ({ end, brokenAt });
  while (at < bytes.length || end === undefined) {
    if (bytes[at] !== 0xff) return stop(at < bytes.length ? at : undefined);
    if (bytes[at + 1] !== 0xd8) return stop(at + 1 < bytes.length ? at + 1 : undefined);
    at += 2;
    let scan = false;
    for (;;) {
      if (scan) at = bytes.indexOf(0xff, at);
      if (at < 0 || at >= bytes.length) return stop();
      if (bytes[at] !== 0xff) return stop(at);
      while (bytes[at] === 0xff) at++; // fill bytes before a marker
      if (at >= bytes.length) return stop();
      const code = bytes[at]!;
      const restart = code >= 0xd0 && code <= 0xd7;
      at++;
      if (scan && (code === 0x00 || restart)) continue; // a stuffed FF or a restart marker inside the scan
      scan = false;
      if (code === 0xd9) break;
      if (restart || code === 0x01) continue;
      if (code === 0x00 || code === 0xd8) return stop(at - 1);
      if (at + 2 > bytes.length) return stop();
      const length = bytes.readUInt16BE(at);
      // The two length bytes count themselves.
      if (length < 2) return stop(at + 1);
      at += length;
      scan = code === 0xda;
    }
    end = at;
  }
  return stop();
}

function count(value: number): string {
  return value.toLocaleString("en-US");
}
