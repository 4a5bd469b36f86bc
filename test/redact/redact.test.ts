/**
 * The API key is masked however the service mangles it on the way back: an escape sequence, an invisible
 * character or a line break inside it, its case changed, cut in two, or seen through JSON escapes. Each
 * case checks that no readable form of the key is left (not merely that "[redacted]" appears somewhere).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cleanText, redact, redactValue, registerSecret } from "../../src/redact.js";
import { readable } from "../helpers/readable.js";

const KEY = "sk-live-Q7fV2pLx9RtZ4mWc8NbJ3hYd6KsGa1Ue";
const A = KEY.slice(0, 20);
const B = KEY.slice(20);

let forget: () => void = () => {};
beforeEach(() => {
  forget = registerSecret(KEY);
});
afterEach(() => forget());

/** No piece of the key as long as the rule promises to mask is readable. */
function expectNoKey(output: string): void {
  const plain = readable(output);
  const key = readable(KEY);
  const piece = Math.max(8, Math.ceil(key.length / 3));
  for (let at = 0; at + piece <= key.length; at++) {
    expect(plain, `piece ${key.slice(at, at + piece)} in ${JSON.stringify(output)}`).not.toContain(
      key.slice(at, at + piece),
    );
  }
}

describe("redact masks the key in disguise", () => {
  it.each([
    ["plain", `key ${KEY} end`],
    ["an ANSI escape with ESC", `key ${A}\u001b[31m${B} end`],
    ["an ANSI escape without its ESC", `key ${A}[31m${B} end`],
    [
      "a reset and a colour in two places",
      `${KEY.slice(0, 9)}\u001b[0m${KEY.slice(9, 30)}[1;32m${KEY.slice(30)}`,
    ],
    ["a zero-width space", `key ${A}\u200b${B} end`],
    ["a newline", `key ${A}\n${B} end`],
    ["a CRLF", `key ${A}\r\n${B} end`],
    ["a tab", `key ${A}\t${B} end`],
    ["a soft hyphen", `key ${A}\u00ad${B} end`],
    ["bidi controls", `key \u202e${A}\u202c\u2066${B}\u2069 end`],
    ["a BOM and a word joiner", `key ${A}\ufeff${B.slice(0, 4)}\u2060${B.slice(4)} end`],
    ["a C1 control and DEL", `key ${A}\u0085${B.slice(0, 3)}\u007f${B.slice(3)} end`],
    ["a no-break space and an ideographic space", `key ${A}\u00a0${B.slice(0, 5)}\u3000${B.slice(5)}`],
    ["a character between every character", [...KEY].join("\u200c")],
    ["lower case", `key ${KEY.toLowerCase()} end`],
    ["upper case", `key ${KEY.toUpperCase()} end`],
    [
      "full-width letters",
      `key ${A}${[...B].map((c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0)).join("")}`,
    ],
    ["split into two fields of a JSON object", JSON.stringify({ code: A, message: B })],
    ["split with text between", `${A} -- the service says hello -- ${B}`],
    ["split unevenly (the longer part masked)", `${KEY.slice(0, 12)} and ${KEY.slice(12)}`],
    ["a JSON-escaped newline", JSON.stringify({ message: `${A}\n${B}` })],
    [
      "a JSON-escaped zero-width space",
      JSON.stringify({ message: `${A}\u200b${B}` }).replace("\u200b", "\\u200b"),
    ],
    ["a JSON-escaped ESC sequence", JSON.stringify({ message: `${A}\u001b[31m${B}` })],
    ["JSON escapes twice over", JSON.stringify(JSON.stringify({ message: `${A}\n${B}\u0007` }))],
    ["a C-style escape", `${A}\\x1b[31m${B} and ${A}\\033[0m${B}`],
  ])("%s", (_name, text) => {
    const out = redact(text);
    expect(out).toContain("[redacted]");
    expectNoKey(out);
  });

  it("replaces the whole original span, junk inside included, and leaves the text around it alone", () => {
    expect(redact(`before ${A}\u001b[31m${B} after`)).toBe("before [redacted] after");
    expect(redact(`before ${A}\u200b${B.toLowerCase()} after`)).toBe("before [redacted] after");
    expect(redact(`(${A}\n${B})`)).toBe("([redacted])");
    expect(redact(JSON.stringify({ code: A, message: B }))).toBe(
      '{"code":"[redacted]","message":"[redacted]"}',
    );
  });

  it("masks every occurrence and keeps Bearer tokens masked", () => {
    expect(redact(`${KEY} ${KEY.toLowerCase()} Bearer abc.def ${KEY}`)).toBe(
      "[redacted] [redacted] Bearer [redacted] [redacted]",
    );
  });

  it("leaves text without the key as it was, escapes and invisible characters included", () => {
    for (const text of [
      "plain text, sandbox mode: nothing to hide",
      "\u001b[31mred\u001b[0m [1m bold \\n \\u200b zero\u200bwidth",
      `${KEY.slice(0, 7)} is too short a piece to say anything`,
      "",
    ]) {
      expect(redact(text)).toBe(text);
    }
  });

  it("ignores registered secrets shorter than 6 characters", () => {
    const forgetShort = registerSecret("abc12");
    try {
      expect(redact("abc12 ABC12")).toBe("abc12 ABC12");
    } finally {
      forgetShort();
    }
  });

  it("matches a short secret (6-7 characters) only whole", () => {
    const forgetShort = registerSecret("Zq81xP");
    try {
      expect(redact("id Zq81xP, ZQ81\u200bXP; Zq81 alone")).toBe("id [redacted], [redacted]; Zq81 alone");
    } finally {
      forgetShort();
    }
  });

  it("cleanText relays no readable key either", () => {
    expectNoKey(cleanText(`code ${A}\u001b[31m${B}\u200b and ${KEY.toUpperCase()}`));
  });
});

describe("redactValue redacts structured data before it is serialized", () => {
  it("redacts every string and key, at any depth, and keeps the shape", () => {
    const value = {
      [KEY]: "key as a key",
      list: [`${A}\n${B}`, 3, true, null, { deep: [`${A}\u200b${B}`] }],
      split: { first: A, second: B },
      count: 2,
    };
    const out = redactValue(value);
    expect(out).toEqual({
      "[redacted]": "key as a key",
      list: ["[redacted]", 3, true, null, { deep: ["[redacted]"] }],
      split: { first: "[redacted]", second: "[redacted]" },
      count: 2,
    });
    expectNoKey(JSON.stringify(out));
  });

  it("gives what a JSON round trip would give, without throwing on a cycle", () => {
    const cyclic: Record<string, unknown> = {
      when: new Date(0),
      skip: undefined,
      fn: () => 1,
      n: Number.NaN,
    };
    cyclic["self"] = cyclic;
    expect(redactValue(cyclic)).toEqual({ when: "1970-01-01T00:00:00.000Z", n: null, self: "[circular]" });
    expect(redactValue([undefined, KEY])).toEqual([null, "[redacted]"]);
  });
});
