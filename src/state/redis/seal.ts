/**
 * What a replica writes to shared state is sealed, `<43 base64url characters of HMAC-SHA256>.<JSON text>`,
 * under a key derived from the service key (which never reaches Redis): a value planted by anyone without the
 * service key is skipped, never relayed. Redis is an exit like any output: the text has secrets masked.
 */
import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto";
import { PROCESS_REDACTOR } from "../../redact.js";

const MAC_CHARS = 43;

/** Longer values are not even checked: nothing this server writes comes near it. */
const MAX_SEALED_CHARS = 1024 * 1024;

export type Sealer = ReturnType<typeof sealerFor>;

export function sealerFor(baseUrl: string, serviceKey: string) {
  const key = Buffer.from(
    hkdfSync("sha256", serviceKey, baseUrl, "generation-mcp shared state v1", 32) as ArrayBuffer,
  );
  const mac = (text: string) => createHmac("sha256", key).update(text).digest("base64url");
  const redactor = PROCESS_REDACTOR.with(serviceKey);
  return {
    seal(value: unknown): string {
      const text = redactor.text(JSON.stringify(value));
      return `${mac(text)}.${text}`;
    },
    /** The parsed value when the seal holds; undefined for anything else (planted, torn, not JSON). */
    open(sealed: string): unknown {
      if (sealed.length > MAX_SEALED_CHARS || sealed.charCodeAt(MAC_CHARS) !== 0x2e) return undefined;
      const text = sealed.slice(MAC_CHARS + 1);
      const given = Buffer.from(sealed.slice(0, MAC_CHARS));
      const expected = Buffer.from(mac(text));
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
      try {
        return JSON.parse(text) as unknown;
      } catch {
        return undefined;
      }
    },
  };
}
