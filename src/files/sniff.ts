/** The type of a file judged only by its leading bytes: names and declared types are never consulted. */
import type { UploadMimeType } from "../models.js";

/** How many leading bytes the sniffers look at; read at least this many before calling them. */
export const SNIFF_LENGTH = 16;

type MediaExtension = "mp4" | "mov" | "png" | "jpg" | "webp" | "gif" | "webm";

const EXTENSIONS = { "image/jpeg": "jpg", "image/png": "png", "image/webp": "webp" } as const;
// ISO-BMFF brands of still images (AVIF, HEIC): an `ftyp` box alone does not make a video.
const STILL_IMAGE_BRANDS = new Set(["avif", "avis", "heic", "heix", "heim", "heis", "mif1", "msf1"]);

/** JPEG, PNG or WebP; `undefined` for anything else, including truncated signatures. */
export function sniffImageType(bytes: Uint8Array): UploadMimeType | undefined {
  if (has(bytes, 0, "\xff\xd8\xff")) return "image/jpeg";
  if (has(bytes, 0, "\x89PNG\r\n\x1a\n")) return "image/png";
  const webp = has(bytes, 0, "RIFF") && has(bytes, 8, "WEBP");
  if (webp && ["VP8 ", "VP8L", "VP8X"].some((chunk) => has(bytes, 12, chunk))) return "image/webp";
  return undefined;
}

export const extensionFor = (mime: UploadMimeType) => EXTENSIONS[mime];

/** The extension for downloaded media: mp4 / mov (an ISO-BMFF video), png, jpg, webp, gif, webm. */
export function sniffMediaExtension(bytes: Uint8Array): MediaExtension | undefined {
  const image = sniffImageType(bytes);
  if (image !== undefined) return extensionFor(image);
  if (has(bytes, 0, "GIF87a") || has(bytes, 0, "GIF89a")) return "gif";
  if (has(bytes, 0, "\x1a\x45\xdf\xa3")) return "webm";
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // A real ftyp box holds at least its header, a major brand and a minor version (16 bytes).
  if (bytes.length < 12 || !has(bytes, 4, "ftyp") || view.readUInt32BE(0) < 16) return undefined;
  const brand = view.toString("latin1", 8, 12);
  if (!/^[\x20-\x7e]{4}$/.test(brand) || STILL_IMAGE_BRANDS.has(brand)) return undefined;
  return brand === "qt  " ? "mov" : "mp4";
}

function has(bytes: Uint8Array, offset: number, text: string): boolean {
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return view.toString("latin1", offset, offset + text.length) === text;
}
