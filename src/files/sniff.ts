import type { UploadMimeType } from "../models.js";

/** How many leading bytes the sniffers look at; read at least this many before calling them. */
export const SNIFF_LENGTH = 16;

export type ImageExtension = "jpg" | "png" | "webp";
export type MediaExtension = "mp4" | "mov" | "png" | "jpg" | "webp" | "gif" | "webm";

const JPEG_SIGNATURE = [0xff, 0xd8, 0xff] as const;
const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] as const;
const EBML_SIGNATURE = [0x1a, 0x45, 0xdf, 0xa3] as const;
const WEBP_CHUNKS = ["VP8 ", "VP8L", "VP8X"] as const;
// ISO-BMFF brands of still images (AVIF, HEIC): an `ftyp` box alone does not make a video.
const STILL_IMAGE_BRANDS = new Set(["avif", "avis", "heic", "heix", "heim", "heis", "mif1", "msf1"]);

const IMAGE_EXTENSIONS: Readonly<Record<UploadMimeType, ImageExtension>> = {
  "image/jpeg": "jpg",
  "image/png": "png",
  "image/webp": "webp",
};

/**
 * The upload type of an image judged only by its leading bytes (JPEG, PNG, WebP); `undefined` for
 * anything else, including truncated signatures. File names and declared types are never consulted.
 */
export function sniffImageType(bytes: Uint8Array): UploadMimeType | undefined {
  if (hasBytes(bytes, 0, JPEG_SIGNATURE)) return "image/jpeg";
  if (hasBytes(bytes, 0, PNG_SIGNATURE)) return "image/png";
  if (isWebp(bytes)) return "image/webp";
  return undefined;
}

/** The file extension (without dot) that names an upload type. */
export function extensionFor(mime: UploadMimeType): ImageExtension {
  return IMAGE_EXTENSIONS[mime];
}

/**
 * The extension for downloaded media judged by its leading bytes: mp4 / mov (ISO-BMFF `ftyp` box),
 * png, jpg, webp, gif, webm (EBML header). `undefined` when the bytes match none of them.
 */
export function sniffMediaExtension(bytes: Uint8Array): MediaExtension | undefined {
  const isoMedia = sniffIsoMedia(bytes);
  if (isoMedia !== undefined) return isoMedia;
  const image = sniffImageType(bytes);
  if (image !== undefined) return extensionFor(image);
  if (hasAscii(bytes, 0, "GIF87a") || hasAscii(bytes, 0, "GIF89a")) return "gif";
  if (hasBytes(bytes, 0, EBML_SIGNATURE)) return "webm";
  return undefined;
}

function isWebp(bytes: Uint8Array): boolean {
  return (
    hasAscii(bytes, 0, "RIFF") &&
    hasAscii(bytes, 8, "WEBP") &&
    WEBP_CHUNKS.some((chunk) => hasAscii(bytes, 12, chunk))
  );
}

function sniffIsoMedia(bytes: Uint8Array): "mp4" | "mov" | undefined {
  if (bytes.length < 12 || !hasAscii(bytes, 4, "ftyp")) return undefined;
  // A real ftyp box holds at least its header, a major brand and a minor version (16 bytes).
  const boxSize = ((bytes[0]! << 24) | (bytes[1]! << 16) | (bytes[2]! << 8) | bytes[3]!) >>> 0;
  if (boxSize < 16) return undefined;
  const brand = String.fromCharCode(...bytes.subarray(8, 12));
  if (!/^[\x20-\x7e]{4}$/.test(brand)) return undefined;
  if (STILL_IMAGE_BRANDS.has(brand)) return undefined;
  return brand === "qt  " ? "mov" : "mp4";
}

function hasBytes(bytes: Uint8Array, offset: number, expected: readonly number[]): boolean {
  if (bytes.length < offset + expected.length) return false;
  return expected.every((value, index) => bytes[offset + index] === value);
}

function hasAscii(bytes: Uint8Array, offset: number, text: string): boolean {
  const expected = Array.from(text, (char) => char.charCodeAt(0));
  return hasBytes(bytes, offset, expected);
}
