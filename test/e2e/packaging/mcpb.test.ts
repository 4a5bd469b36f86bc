/**
 * The Claude Desktop bundle as a user gets it. `mcpb validate` checks the manifest; scripts/pack-mcpb.mjs
 * packs the bundle into a temporary folder with the official CLI, and the CLI's `unpack` opens it again.
 * The unpacked server is then started the way Claude Desktop starts it: the manifest's mcp_config with
 * ${__dirname} and ${user_config.*} substituted by the CLI library's own getMcpConfigForManifest (which
 * leaves a blank optional field as its literal placeholder, as Claude Desktop does), and driven with the
 * SDK's stdio client. Needs `npm run build` first (pretest).
 */
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import type { McpbManifestAny } from "@anthropic-ai/mcpb";
import { getMcpConfigForManifest } from "@anthropic-ai/mcpb/node";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error -- a plain ESM script run by npm and here
import { DISPLAY_NAME } from "../../../scripts/distribution.mjs";

const repo = path.resolve(import.meta.dirname, "../../..");
const pkg = JSON.parse(readFileSync(path.join(repo, "package.json"), "utf8")) as {
  name: string;
  version: string;
};
const committedManifest = JSON.parse(
  readFileSync(path.join(repo, "mcpb", "manifest.json"), "utf8"),
) as McpbManifestAny;
const mcpbCli = path.join(
  path.dirname(createRequire(import.meta.url).resolve("@anthropic-ai/mcpb")),
  "cli",
  "cli.js",
);
const mcpb = (args: string[]) =>
  execFileSync(process.execPath, [mcpbCli, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

let work: string;
let bundleFile: string;
let unpacked: string;
let manifest: McpbManifestAny;

beforeAll(() => {
  work = mkdtempSync(path.join(tmpdir(), "generation-mcp-mcpb-test-"));
  bundleFile = path.join(work, `${pkg.name}-${pkg.version}.mcpb`);
  execFileSync(process.execPath, [path.join(repo, "scripts", "pack-mcpb.mjs"), "--out", bundleFile], {
    cwd: repo,
    stdio: ["ignore", "pipe", "pipe"],
  });
  unpacked = path.join(work, "installed");
  mcpb(["unpack", bundleFile, unpacked]);
  manifest = JSON.parse(readFileSync(path.join(unpacked, "manifest.json"), "utf8")) as McpbManifestAny;
}, 60_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

function listFiles(dir: string, base = dir): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    return entry.isDirectory()
      ? listFiles(file, base)
      : [path.relative(base, file).split(path.sep).join("/")];
  });
}

/** A user's machine: a home folder of its own, so nothing of this one is read or written. */
const makeHome = (): string => mkdtempSync(path.join(work, "home-"));

/** Starts the unpacked bundle as Claude Desktop would, with what the user typed into its form. */
async function startInstalled(
  userConfig: Record<string, string | number | boolean | string[]>,
  home: string,
) {
  const config = await getMcpConfigForManifest({
    manifest,
    extensionPath: unpacked,
    systemDirs: { HOME: home, DESKTOP: path.join(home, "Desktop"), DOCUMENTS: home, DOWNLOADS: home },
    userConfig,
    pathSeparator: path.sep,
  });
  if (config === undefined) throw new Error("the manifest gave no mcp_config for this user_config");
  expect(config.command).toBe("node");
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: config.args ?? [],
    env: { ...config.env, HOME: home },
    stderr: "pipe",
  });
  const client = new Client({ name: "claude-desktop-like", version: "1.0.0" }, { capabilities: {} });
  await client.connect(transport);
  return { client, config };
}

const call = async (client: Client, name: string, args: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args })) as CallToolResult;
const text = (result: CallToolResult) =>
  result.content.map((item) => (item.type === "text" ? item.text : "")).join("\n");

describe("the MCPB bundle", () => {
  it("has a manifest the official CLI validates", () => {
    expect(mcpb(["validate", path.join(repo, "mcpb", "manifest.json")])).toContain(
      "Manifest schema validation passes",
    );
  });

  it("holds only the manifest, the icon, the self-contained server bundle and the docs", () => {
    const size = statSync(bundleFile).size;
    process.stderr.write(`mcpb bundle: ${path.basename(bundleFile)} is ${(size / 1024).toFixed(0)} KiB\n`);
    expect(size).toBeLessThan(1024 * 1024);
    const files = listFiles(unpacked);
    expect(files).toEqual(
      expect.arrayContaining(["manifest.json", "icon.png", "server/cli.js", "server/package.json"]),
    );
    const unexpected = files.filter(
      (file) =>
        !/^(manifest\.json|icon\.png|README\.md|LICENSE|server\/package\.json|server\/cli\.js|server\/preview-worker\.js|server\/chunks\/[\w-]+\.c?js)$/.test(
          file,
        ),
    );
    expect(unexpected).toEqual([]);
    expect(files.filter((file) => /node_modules|\.ts$|\.test\.|(^|\/)(test|src)\//.test(file))).toEqual([]);
    expect(manifest).toEqual(committedManifest);
    expect(manifest.server.entry_point).toBe("server/cli.js");
  });

  it("starts with a blank form plus sandbox on, answers as the manifest says, and serves the sandbox", async () => {
    const { client, config } = await startInstalled({ sandbox: true }, makeHome());
    try {
      // What makes this the hard case: the blank fields arrive as their own placeholders.
      expect(config.env).toMatchObject({
        GENERATION_SANDBOX: "true",
        GENERATION_API_KEY: "${user_config.api_key}",
        GENERATION_BASE_URL: "${user_config.base_url}",
      });
      expect(config.args).toContain("${user_config.allowed_dirs}");
      expect(client.getServerVersion()).toMatchObject({
        name: pkg.name,
        version: pkg.version,
        title: DISPLAY_NAME,
      });
      const { tools } = await client.listTools();
      expect(tools.map(({ name, description }) => ({ name, description }))).toEqual(manifest.tools);
      const credits = await call(client, "get_credits", {});
      expect(credits.isError, text(credits)).toBeFalsy();
      expect(credits.structuredContent).toEqual(expect.any(Object));
      // The bundle carries no sharp (native, per platform): images come without a preview, and say why.
      const image = await call(client, "generate_image", { prompt: "a kite in the desktop app" });
      expect(image.isError, text(image)).toBeFalsy();
      expect(image.content.filter((item) => item.type === "image")).toEqual([]);
      expect(text(image)).toMatch(/No preview: previews are unavailable/);
    } finally {
      await client.close();
    }
  });

  it("takes cleared fields as unset and the chosen upload folders as the only ones", async () => {
    const home = makeHome();
    const folder = (name: string) => {
      const dir = path.join(home, name);
      mkdirSync(dir);
      cpSync(path.join(unpacked, "icon.png"), path.join(dir, "frame.png"));
      return dir;
    };
    const [pictures, shots, elsewhere] = [folder("pictures"), folder("shots"), folder("elsewhere")];
    const { client, config } = await startInstalled(
      { sandbox: true, api_key: "", base_url: "", output_dir: "", allowed_dirs: [pictures, shots] },
      home,
    );
    try {
      expect(config.env).toMatchObject({ GENERATION_API_KEY: "", GENERATION_BASE_URL: "" });
      const inside = await call(client, "upload_image", { path: path.join(shots, "frame.png") });
      expect(inside.isError, text(inside)).toBeFalsy();
      expect(inside.structuredContent?.["url"]).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
      const outside = await call(client, "upload_image", { path: path.join(elsewhere, "frame.png") });
      expect(outside.isError).toBe(true);
      expect(text(outside)).toMatch(/^validation_error/);
    } finally {
      await client.close();
    }
  });

  describe("spend limits in the settings form", () => {
    const SPEND_FIELDS = {
      daily_credits: "GENERATION_DAILY_CREDITS",
      max_credits_per_call: "GENERATION_MAX_CREDITS_PER_CALL",
      confirm_above_credits: "GENERATION_CONFIRM_ABOVE_CREDITS",
    };
    const titleOf = (key: string) => manifest.user_config?.[key]?.title ?? "";
    const video = (duration: number, prompt: string) => ({ prompt, duration, wait: false });
    const allowanceOf = async (client: Client) => {
      const credits = await call(client, "get_credits", {});
      expect(credits.isError, text(credits)).toBeFalsy();
      return credits.structuredContent?.["allowance"];
    };

    it("offers the three limits as optional number fields, each passed as its variable", () => {
      for (const [key, variable] of Object.entries(SPEND_FIELDS)) {
        expect(manifest.user_config?.[key], key).toMatchObject({ type: "number", required: false, min: 0 });
        expect(manifest.user_config?.[key]?.description, key).toMatch(/Leave empty/);
        expect(manifest.server.mcp_config.env?.[variable], key).toBe(`\${user_config.${key}}`);
      }
    });

    for (const [form, userConfig] of [
      ["left blank (their placeholders)", {}],
      ["cleared (empty values)", { daily_credits: "", max_credits_per_call: "", confirm_above_credits: "" }],
    ] as const) {
      it(`takes fields ${form} as no limit`, async () => {
        const { client, config } = await startInstalled({ sandbox: true, ...userConfig }, makeHome());
        try {
          for (const [key, variable] of Object.entries(SPEND_FIELDS)) {
            expect(config.env?.[variable]).toBe(key in userConfig ? "" : `\${user_config.${key}}`);
          }
          expect(await allowanceOf(client)).toBeUndefined();
          // 100 credits, with nobody to ask: started, since no limit is set.
          const costly = await call(client, "generate_video", {
            ...video(10, "a costly lighthouse"),
            model: "vendor-video-2-0",
            resolution: "1080p",
          });
          expect(costly.isError, text(costly)).toBeFalsy();
          expect(costly.structuredContent).toMatchObject({
            estimated_credits: 100,
            video_id: expect.any(String),
          });
        } finally {
          await client.close();
        }
      });
    }

    it("enforces the numbers typed in, and a refusal names the form's fields, not variables", async () => {
      const { client, config } = await startInstalled(
        { sandbox: true, daily_credits: 60, max_credits_per_call: 40, confirm_above_credits: 30 },
        makeHome(),
      );
      try {
        expect(config.env).toMatchObject({
          GENERATION_DAILY_CREDITS: "60",
          GENERATION_MAX_CREDITS_PER_CALL: "40",
          GENERATION_CONFIRM_ABOVE_CREDITS: "30",
        });
        expect(await allowanceOf(client)).toMatchObject({ daily_limit: 60, used_today: 0 });

        // 50 credits: above the per-call cap, and this client cannot be asked.
        const capped = await call(client, "generate_video", video(10, "above the cap"));
        expect(capped.isError).toBe(true);
        expect(text(capped)).toMatch(/^budget_exceeded: /);
        const advice = text(capped).slice(text(capped).indexOf("Next step:"));
        expect(advice).toContain("Settings > Extensions > Video & image generation");
        for (const key of Object.keys(SPEND_FIELDS)) expect(advice).toContain(titleOf(key));
        expect(advice).not.toMatch(/GENERATION_|has no field/);

        // 25 credits each: two fit the day of 60, the third does not.
        for (const prompt of ["first kite", "second kite"]) {
          const started = await call(client, "generate_video", video(5, prompt));
          expect(started.isError, text(started)).toBeFalsy();
        }
        const third = await call(client, "generate_video", video(5, "third kite"));
        expect(third.isError).toBe(true);
        expect(text(third)).toMatch(/^budget_exceeded: .*only 10 of today's 60 credits remain/);
        expect(text(third)).toContain(
          `raise ${titleOf("max_credits_per_call")} or ${titleOf("daily_credits")}`,
        );
        expect(text(third)).not.toContain("GENERATION_DAILY_CREDITS in this server's entry");
        expect(await allowanceOf(client)).toMatchObject({
          daily_limit: 60,
          used_today: 50,
          remaining_today: 10,
        });
      } finally {
        await client.close();
      }
    });
  });
});
