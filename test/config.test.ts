/** The configuration is refused at start when it cannot work, with the value we think was meant. */
import { describe, expect, it } from "vitest";
import { ConfigError, checkBaseUrl, loadConfig } from "../src/config.js";

const refusal = (value: string): string => {
  try {
    checkBaseUrl(value);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error(`${value} was accepted`);
};

describe("GENERATION_BASE_URL must end in the version segment /api/v1", () => {
  it.each([
    ["http://127.0.0.1:8787/api/v1", "http://127.0.0.1:8787/api/v1"],
    ["http://127.0.0.1:8787/api/v1/", "http://127.0.0.1:8787/api/v1"],
    ["https://gen.example.com/prefix/api/v1//", "https://gen.example.com/prefix/api/v1"],
    ["HTTPS://Gen.Example.com/api/v1", "https://gen.example.com/api/v1"],
  ])("accepts %s as %s", (value, expected) => {
    expect(checkBaseUrl(value)).toBe(expected);
  });

  it.each([
    ["http://127.0.0.1:8787", "http://127.0.0.1:8787/api/v1"],
    ["http://127.0.0.1:8787/", "http://127.0.0.1:8787/api/v1"],
    ["https://gen.example.com/api", "https://gen.example.com/api/v1"],
    ["https://gen.example.com/v1", "https://gen.example.com/api/v1"],
    ["https://gen.example.com/api/v1/generate", "https://gen.example.com/api/v1"],
    ["https://gen.example.com/api/v1/videos/vid_1", "https://gen.example.com/api/v1"],
    ["https://gen.example.com/api/v1?x=1", "https://gen.example.com/api/v1"],
    ["https://user:secret@gen.example.com/api/v1", "https://gen.example.com/api/v1"],
  ])("refuses %s and suggests %s", (value, suggestion) => {
    const message = refusal(value);
    expect(message).toMatch(/^GENERATION_BASE_URL \(or --base-url\): /);
    expect(message).toContain("/api/v1");
    expect(message).toContain(`Did you mean ${suggestion}?`);
    expect(message).not.toContain("secret");
  });

  it.each(["not a url", "ftp://gen.example.com/api/v1", "file:///api/v1"])("refuses %s", (value) => {
    expect(refusal(value)).toMatch(/not a URL|does not start with http/);
  });

  it("is checked by loadConfig, naming the flag too", () => {
    expect(() =>
      loadConfig({ env: { GENERATION_API_KEY: "k-123456", GENERATION_BASE_URL: "http://127.0.0.1:8787" } }),
    ).toThrow(/GENERATION_BASE_URL \(or --base-url\).*Did you mean http:\/\/127\.0\.0\.1:8787\/api\/v1\?/);
    const config = loadConfig({
      env: { GENERATION_API_KEY: "k-123456" },
      flags: { "--base-url": "http://127.0.0.1:8787/api/v1/" },
    });
    expect(config.baseUrl).toBe("http://127.0.0.1:8787/api/v1");
  });
});
