/** The configuration is refused at start when it cannot work, with the value we think was meant. */
import { createHash } from "node:crypto";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  ConfigError,
  FLAG_TO_ENV,
  checkBaseUrl,
  describeOptions,
  loadConfig,
} from "../../src/config/index.js";
import { SETTINGS } from "../../src/config/schema.js";

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

describe("--http configuration", () => {
  const hash = (token: string) => createHash("sha256").update(token).digest("hex");

  it("defaults to 127.0.0.1:8080, passthrough auth, a 4 MiB body, 16 calls per caller and 1024 connections", () => {
    const config = loadConfig({ env: {}, flags: { "--http": true, "--sandbox": true } });
    expect(config.http).toEqual({
      port: 8080,
      host: "127.0.0.1",
      allowedHosts: [],
      allowedOrigins: [],
      tokenHashes: undefined,
      maxBodyBytes: 4 * 1024 * 1024,
      maxConcurrentPerKey: 16,
      maxConnections: 1024,
    });
  });

  it("mirrors every setting as a flag and a variable", () => {
    const config = loadConfig({
      env: {
        GENERATION_HTTP: "1",
        GENERATION_BASE_URL: "https://gen.example.com/api/v1",
        GENERATION_HTTP_HOST: "0.0.0.0",
        GENERATION_HTTP_ALLOWED_HOSTS: "mcp.example.com, mcp.internal:8443",
        GENERATION_HTTP_ALLOWED_ORIGINS: "https://app.example.com",
        GENERATION_HTTP_MAX_BODY_BYTES: "2048",
      },
      flags: { "--port": "9000", "--max-concurrent": "4", "--max-connections": "64" },
    });
    expect(config.http).toMatchObject({
      port: 9000,
      host: "0.0.0.0",
      allowedHosts: ["mcp.example.com", "mcp.internal:8443"],
      allowedOrigins: ["https://app.example.com"],
      maxBodyBytes: 2048,
      maxConcurrentPerKey: 4,
      maxConnections: 64,
    });
  });

  it("refuses a non-loopback host without an allow-list of Host names", () => {
    expect(() =>
      loadConfig({ env: {}, flags: { "--http": true, "--sandbox": true, "--host": "0.0.0.0" } }),
    ).toThrow(/GENERATION_HTTP_HOST.*not a loopback address.*GENERATION_HTTP_ALLOWED_HOSTS/);
  });

  it("refuses a server-side key without caller tokens: anyone reaching the port would spend it", () => {
    expect(() =>
      loadConfig({
        env: {
          GENERATION_HTTP: "1",
          GENERATION_API_KEY: "sk-team-123456",
          GENERATION_BASE_URL: "https://g.example/api/v1",
        },
      }),
    ).toThrow(/GENERATION_API_KEY is set with --http but no caller tokens/);
  });

  it("gateway mode: token hashes from the variable or a file (comments allowed), the server's own key", () => {
    const env = {
      GENERATION_HTTP: "1",
      GENERATION_API_KEY: "sk-team-123456",
      GENERATION_BASE_URL: "https://g.example/api/v1",
    };
    const inline = loadConfig({ env: { ...env, GENERATION_HTTP_TOKENS: `${hash("alice")},${hash("bob")}` } });
    expect(inline.http?.tokenHashes).toEqual([hash("alice"), hash("bob")]);
    const fromFile = loadConfig({
      env: { ...env, GENERATION_HTTP_TOKENS_FILE: "/etc/generation/tokens" },
      readFile: (file) => (file === "/etc/generation/tokens" ? `# team\n${hash("alice")}  # alice\n\n` : ""),
    });
    expect(fromFile.http?.tokenHashes).toEqual([hash("alice")]);
    expect(() => loadConfig({ env: { ...env, GENERATION_HTTP_TOKENS: "alice" } })).toThrow(
      /SHA-256 \(64 hex digits\).*sha256sum/,
    );
    expect(() =>
      loadConfig({
        env: {
          GENERATION_HTTP: "1",
          GENERATION_BASE_URL: env.GENERATION_BASE_URL,
          GENERATION_HTTP_TOKENS: hash("a"),
        },
      }),
    ).toThrow(/own GENERATION_API_KEY, which is missing/);
  });

  it("refuses an origin that is not one", () => {
    expect(() =>
      loadConfig({
        env: { GENERATION_HTTP_ALLOWED_ORIGINS: "app.example.com" },
        flags: { "--http": true, "--sandbox": true },
      }),
    ).toThrow(/GENERATION_HTTP_ALLOWED_ORIGINS.*not an origin/);
  });
});

describe("values as an MCPB bundle (Claude Desktop) passes them", () => {
  const blank = {
    GENERATION_API_KEY: "${user_config.api_key}",
    GENERATION_BASE_URL: "${user_config.base_url}",
    GENERATION_OUTPUT_DIR: "${user_config.output_dir}",
    GENERATION_SANDBOX: "true",
  };

  it("takes a field left blank (its bare placeholder) or cleared (empty) as not set", () => {
    for (const env of [blank, { ...blank, GENERATION_API_KEY: "", GENERATION_BASE_URL: " " }]) {
      const config = loadConfig({ env, home: "/home/u" });
      expect(config).toMatchObject({ sandbox: true, apiKey: undefined, baseUrl: undefined });
      expect(config.outputDir).toBe(path.join("/home/u", "Downloads", "generation-mcp"));
      expect(config.outputDirConfigured).toBe(false);
    }
    expect(() => loadConfig({ env: { ...blank, GENERATION_SANDBOX: "false" } })).toThrow(
      /set GENERATION_API_KEY and GENERATION_BASE_URL/,
    );
  });

  it("still reads a placeholder-like value that is more than the placeholder", () => {
    expect(() =>
      loadConfig({ env: { ...blank, GENERATION_BASE_URL: "${user_config.base_url}/api/v1" } }),
    ).toThrow(/GENERATION_BASE_URL.*is not a URL/);
  });

  it("takes folders given as arguments as the upload folders, over GENERATION_ALLOWED_DIRS", () => {
    const env = { ...blank, GENERATION_ALLOWED_DIRS: "/from/env" };
    const dirs = [path.resolve("/pictures"), path.resolve("/work/shots")];
    expect(loadConfig({ env, directories: dirs }).allowedDirs).toEqual(dirs);
    // A blank multi-folder field arrives as its placeholder: the variable (or the defaults) apply.
    expect(loadConfig({ env, directories: ["${user_config.allowed_dirs}"] }).allowedDirs).toEqual([
      path.resolve("/from/env"),
    ]);
    expect(loadConfig({ env: blank, directories: [] }).allowedDirs).toBeUndefined();
  });

  it("refuses a relative folder argument (a mistyped subcommand) and folders given twice", () => {
    expect(() => loadConfig({ env: blank, directories: ["sandbx"] })).toThrow(
      /unexpected argument "sandbx".*absolute paths/,
    );
    expect(() =>
      loadConfig({ env: blank, flags: { "--allowed-dirs": "/a" }, directories: [path.resolve("/b")] }),
    ).toThrow(/either as --allowed-dirs or as arguments, not both/);
  });
});

describe("previews and media links", () => {
  const sandbox = { GENERATION_SANDBOX: "1" };

  it("defaults to previews on at 1024 px and resource links off", () => {
    expect(loadConfig({ env: sandbox })).toMatchObject({
      previews: true,
      previewMaxSide: 1024,
      resourceLinks: false,
    });
  });

  it("reads on/off in any case from the variables, and the flags win", () => {
    const env = {
      ...sandbox,
      GENERATION_PREVIEWS: "OFF",
      GENERATION_PREVIEW_MAX_SIDE: "512",
      GENERATION_RESOURCE_LINKS: "on",
    };
    expect(loadConfig({ env })).toMatchObject({ previews: false, previewMaxSide: 512, resourceLinks: true });
    const flags = { "--previews": "on", "--preview-max-side": "256", "--resource-links": "0" };
    expect(loadConfig({ env, flags })).toMatchObject({
      previews: true,
      previewMaxSide: 256,
      resourceLinks: false,
    });
  });

  it("refuses what is not on/off and sides out of 64-2000, naming the variable and the flag", () => {
    expect(() => loadConfig({ env: { ...sandbox, GENERATION_PREVIEWS: "maybe" } })).toThrow(
      /^GENERATION_PREVIEWS \(or --previews\): must be on or off/,
    );
    expect(() => loadConfig({ env: sandbox, flags: { "--preview-max-side": "4096" } })).toThrow(
      /^GENERATION_PREVIEW_MAX_SIDE \(or --preview-max-side\): must be from 64 to 2000$/,
    );
    expect(() => loadConfig({ env: { ...sandbox, GENERATION_PREVIEW_MAX_SIDE: "512.5" } })).toThrow(
      /^GENERATION_PREVIEW_MAX_SIDE \(or --preview-max-side\): must be a whole number of pixels$/,
    );
    expect(() => loadConfig({ env: { ...sandbox, GENERATION_DAILY_CREDITS: "-5" } })).toThrow(
      /^GENERATION_DAILY_CREDITS \(or --daily-credits\): must be a non-negative number$/,
    );
    expect(loadConfig({ env: { ...sandbox, GENERATION_DAILY_CREDITS: " 7.5 " } }).spend?.dailyCredits).toBe(
      7.5,
    );
  });
});

describe("shared state on Redis", () => {
  const base = { GENERATION_API_KEY: "k", GENERATION_BASE_URL: "http://127.0.0.1:8787/api/v1" };

  it("is off unless GENERATION_REDIS_URL (or --redis-url) is set; the prefix defaults to generation-mcp:, starts are refused while it is down", () => {
    expect(loadConfig({ env: base }).redis).toBeUndefined();
    expect(loadConfig({ env: { ...base, GENERATION_REDIS_URL: "redis://127.0.0.1:6379" } }).redis).toEqual({
      url: "redis://127.0.0.1:6379",
      prefix: "generation-mcp:",
      whenDown: "refuse",
    });
    const flagged = loadConfig({
      env: { ...base, GENERATION_REDIS_URL: "redis://ignored:1" },
      flags: {
        "--redis-url": "rediss://cache.internal:6380/2",
        "--redis-prefix": "team-a:",
        "--redis-when-down": "alone",
      },
    });
    expect(flagged.redis).toEqual({
      url: "rediss://cache.internal:6380/2",
      prefix: "team-a:",
      whenDown: "alone",
    });
    expect(() =>
      loadConfig({
        env: { ...base, GENERATION_REDIS_URL: "redis://x:1", GENERATION_REDIS_WHEN_DOWN: "maybe" },
      }),
    ).toThrow(/GENERATION_REDIS_WHEN_DOWN \(or --redis-when-down\): must be refuse or alone/);
  });

  it("refuses an address that is not redis:// or rediss://, and a prefix with other characters", () => {
    expect(() => loadConfig({ env: { ...base, GENERATION_REDIS_URL: "http://127.0.0.1:6379" } })).toThrow(
      /^GENERATION_REDIS_URL \(or --redis-url\): must be a redis:\/\/ or rediss:\/\/ address/,
    );
    expect(() =>
      loadConfig({
        env: { ...base, GENERATION_REDIS_URL: "redis://127.0.0.1:6379", GENERATION_REDIS_PREFIX: "a b" },
      }),
    ).toThrow(/^GENERATION_REDIS_PREFIX \(or --redis-prefix\): /);
  });
});

describe("the one table of settings (src/config/schema.ts)", () => {
  const accepts = (parse: (value: string) => unknown, value: string) => {
    try {
      parse(value);
      return true;
    } catch {
      return false;
    }
  };
  const flagged = Object.entries(SETTINGS).filter(([, setting]) => setting.flag !== undefined);

  it("is what --help lists: every variable, with its flag on the same line", () => {
    const help = describeOptions();
    for (const [variable, setting] of Object.entries(SETTINGS)) {
      const flag = setting.flag ?? "(variable only)";
      expect(help, variable).toContain(`${flag}`);
      expect(
        help.split("\n").some((line) => line.includes(flag) && line.endsWith(variable)),
        variable,
      ).toBe(true);
    }
  });

  it("maps every flag to its variable, and a refused value names both", () => {
    expect(Object.values(FLAG_TO_ENV).sort()).toEqual(flagged.map(([variable]) => variable).sort());
    let refused = 0;
    for (const [variable, setting] of flagged) {
      const flag = setting.flag?.split(" ")[0] ?? "";
      expect(FLAG_TO_ENV[flag]).toBe(variable);
      if (accepts(setting.parse, "%%%") && variable !== "GENERATION_BASE_URL") continue;
      refused++;
      expect(() => loadConfig({ env: { GENERATION_SANDBOX: "1" }, flags: { [flag]: "%%%" } }), flag).toThrow(
        new RegExp(`^${variable} \\(or ${flag}\\): `),
      );
    }
    expect(refused).toBeGreaterThan(15);
  });
});
