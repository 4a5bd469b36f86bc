/**
 * A stderr log line cannot be forged: whatever a message or its data holds (text from the service, a
 * prompt, a file name), one call to the logger writes exactly one line, that line carries no control,
 * separator or bidi character, and its data part stays valid JSON that reads back to what was logged.
 */
import { describe, expect, it } from "vitest";
import { Logger } from "../src/logger.js";

const HOSTILE = [
  "ok\n[generation-mcp] error: forged line",
  "carriage\rreturn",
  "crlf\r\n[generation-mcp] info: forged",
  "next line\u0085NEL",
  "line\u2028separator and paragraph\u2029separator",
  "vertical\u000btab and form\u000cfeed",
  "\u001b[2K\u001b[1Gerased and recoloured\u001b[31m",
  "bidi \u202egnp.exe\u202c and \u2066isolate\u2069 and \u200fRLM",
  "nul\u0000byte and bell\u0007 and DEL\u007f",
];

function capture(): { logger: Logger; lines: () => string[]; raw: () => string } {
  let raw = "";
  const logger = new Logger("debug", (text) => {
    raw += text;
  });
  return { logger, raw: () => raw, lines: () => raw.split("\n").slice(0, -1) };
}

// eslint-disable-next-line no-control-regex
const LINE_BREAKING = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/;

describe("stderr log lines", () => {
  it.each(HOSTILE)("one line for the message %j", (message) => {
    const { logger, lines, raw } = capture();
    logger.warning(message);
    expect(raw().endsWith("\n")).toBe(true);
    expect(lines()).toHaveLength(1);
    const [line] = lines();
    expect(line).toMatch(/^\[generation-mcp\] warning: /);
    expect(line).not.toMatch(LINE_BREAKING);
    // Escaped, not dropped: the reader still sees that something was there.
    expect(line).toMatch(/\\[nrt]|\\u00|\\u20/);
  });

  it.each(HOSTILE)("one line, and valid JSON that reads back, for data holding %j", (text) => {
    const { logger, lines } = capture();
    logger.error("request failed", { reason: text, [text]: "as a key", nested: { list: [text] } });
    expect(lines()).toHaveLength(1);
    const [line = ""] = lines();
    expect(line).not.toMatch(LINE_BREAKING);
    const json = line.slice(line.indexOf("{"));
    expect(JSON.parse(json)).toEqual({ reason: text, [text]: "as a key", nested: { list: [text] } });
  });

  it("keeps an ordinary message as it is", () => {
    const { logger, lines } = capture();
    logger.info("uploaded cat.png — 12 KB, naïve ✓", { bytes: 12 });
    expect(lines()).toEqual(['[generation-mcp] info: uploaded cat.png — 12 KB, naïve ✓ {"bytes":12}']);
  });

  it("writes one line even for data JSON cannot serialize", () => {
    const { logger, lines } = capture();
    const cyclic: Record<string, unknown> = {};
    cyclic["self"] = cyclic;
    logger.info("odd data", { cyclic, big: 10n });
    expect(lines()).toHaveLength(1);
    expect(lines()[0]).toMatch(/^\[generation-mcp\] info: odd data \{.*\}$/);
  });
});
