/** Upload types are decided by the file's first bytes, never by its name or declared type. */
export interface SniffedType {
  contentType: "image/png" | "image/jpeg" | "image/webp";
  extension: "png" | "jpg" | "webp";
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export function sniffImage(head: Buffer): SniffedType | undefined {
  if (head.length >= 8 && head.subarray(0, 8).equals(PNG_SIGNATURE))
    return { contentType: "image/png", extension: "png" };
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) {
    return { contentType: "image/jpeg", extension: "jpg" };
  }
  if (
    head.length >= 12 &&
    head.toString("latin1", 0, 4) === "RIFF" &&
    head.toString("latin1", 8, 12) === "WEBP"
  ) {
    return { contentType: "image/webp", extension: "webp" };
  }
  return undefined;
}
