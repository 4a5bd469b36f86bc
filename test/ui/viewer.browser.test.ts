/**
 * The MCP Apps viewer as a person sees it: real tool results from the built bin (stdio, against a sandbox
 * on 127.0.0.1), handed to the viewer by a minimal host page built on the SDK's AppBridge, in Debian's
 * headless Chromium driven by playwright-core (no browser download). The viewer page is served with the
 * Content-Security-Policy its resource declares, as a host would apply it.
 *
 * Chromium: `chromium` on PATH, or CHROMIUM_PATH. Without it every test here fails, saying so (CI installs
 * it).
 * Screenshots are kept in test-artifacts/viewer/ (viewer-processing.png, viewer.png).
 */
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { build } from "esbuild";
import { chromium, type Browser, type Frame, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { VIEWER_URI } from "../../src/ui/viewer.js";
import { tinyPng } from "../helpers/harness.js";
import { connectStdio, type StdioSession } from "../helpers/stdio.js";
import type { MountedViewer } from "./host-page.js";

const ARTIFACTS = path.resolve(import.meta.dirname, "../../test-artifacts/viewer");
/** The sandbox's clip (src/sandbox/media/sample-video.ts) lasts 2 s. */
const SAMPLE_SECONDS = 2;

let sandbox: SandboxHandle;
let session: StdioSession;
let root: string;
let host: Server;
let hostUrl: string;
let browser: Browser | undefined;
let page: Page;
let opening: Promise<void> | undefined;

function findChromium(): string {
  const named = process.env["CHROMIUM_PATH"];
  if (named !== undefined && named !== "") return named;
  for (const dir of (process.env["PATH"] ?? "").split(path.delimiter)) {
    for (const name of ["chromium", "chromium-browser"]) {
      if (dir !== "" && existsSync(path.join(dir, name))) return path.join(dir, name);
    }
  }
  throw new Error(
    "Chromium not found: the viewer's browser test needs Debian's chromium (apt-get install -y chromium) " +
      "on PATH, or CHROMIUM_PATH set to a Chromium binary.",
  );
}

/** The policy a host derives from the resource's `_meta.ui.csp`: nothing beyond the declared origins. */
function policyFor(csp: { resourceDomains?: string[]; connectDomains?: string[] }): string {
  const media = (csp.resourceDomains ?? []).join(" ");
  const connect = (csp.connectDomains ?? []).join(" ") || "'none'";
  return [
    "default-src 'none'",
    "script-src 'unsafe-inline'",
    "style-src 'unsafe-inline'",
    `img-src data: ${media}`,
    `media-src data: ${media}`,
    `connect-src ${connect}`,
    "frame-src 'none'",
    "base-uri 'none'",
    "object-src 'none'",
  ].join("; ");
}

async function bundleHostPage(): Promise<string> {
  const result = await build({
    entryPoints: [path.join(import.meta.dirname, "host-page.ts")],
    bundle: true,
    write: false,
    format: "iife",
    platform: "browser",
    target: "es2020",
    logLevel: "warning",
  });
  return result.outputFiles[0]?.text ?? "";
}

async function startHost(viewerHtml: string, viewerPolicy: string): Promise<Server> {
  const hostJs = await bundleHostPage();
  const pixel = tinyPng();
  const server = createServer((req, res) => {
    const send = (type: string, body: string | Buffer, headers: Record<string, string> = {}) => {
      res.writeHead(200, { "content-type": type, ...headers });
      res.end(body);
    };
    if (req.url === "/host.html") {
      return send(
        "text/html",
        '<!doctype html><meta charset="utf-8"><style>body{margin:0;padding:12px;display:flex;gap:12px;' +
          "align-items:flex-start;width:1040px}iframe{width:330px;height:60px;border:1px solid #bbb}</style>" +
          '<body><script src="/host.js"></script></body>',
      );
    }
    if (req.url === "/host.js") return send("text/javascript", hostJs);
    if (req.url === "/viewer.html") {
      return send("text/html", viewerHtml, { "content-security-policy": viewerPolicy });
    }
    if (req.url === "/pixel.png") return send("image/png", pixel);
    if (req.url === "/call" && req.method === "POST") {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
      req.on("end", () => {
        session.client
          .callTool(JSON.parse(body) as { name: string; arguments?: Record<string, unknown> })
          .then((result) => send("application/json", JSON.stringify(result)))
          .catch((error: unknown) => {
            res.writeHead(500);
            res.end(String(error));
          });
      });
      return;
    }
    res.writeHead(404);
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

async function call(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  const result = (await session.client.callTool({ name, arguments: args })) as CallToolResult;
  expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
  return result;
}

/**
 * Launches Chromium and opens the host page, once. Done from the tests rather than beforeAll, so that a
 * machine without Chromium shows each test failed with the reason, not skipped.
 */
function openHostPage(): Promise<void> {
  opening ??= (async () => {
    browser = await chromium.launch({ executablePath: findChromium() });
    page = await browser.newPage({ viewport: { width: 1064, height: 420 } });
    await page.goto(`${hostUrl}/host.html`);
  })();
  return opening;
}

/** Mounts the viewer for one tool call in the host page and returns its frame. */
async function mount(name: string, input: Record<string, unknown>, result: CallToolResult): Promise<Frame> {
  await openHostPage();
  await page.evaluate(([n, i, r]) => window.mountViewer(n, i, r), [name, input, result] as const);
  const frame = page.frame({ name });
  if (frame === null) throw new Error(`no frame named ${name}`);
  return frame;
}

const mounted = (name: string) => page.evaluate((n) => window.viewers[n], name) as Promise<MountedViewer>;

/** Waits until the frame's <video> has read the file's metadata; returns what it read. */
async function videoMetadata(frame: Frame, timeout: number): Promise<{ duration: number; src: string }> {
  await frame.waitForFunction(
    () => {
      const video = document.querySelector("video");
      return video !== null && video.readyState >= 1 && Number.isFinite(video.duration);
    },
    undefined,
    { timeout },
  );
  return frame.evaluate(() => {
    const video = document.querySelector("video") as HTMLVideoElement;
    return { duration: video.duration, src: video.currentSrc };
  });
}

beforeAll(async () => {
  sandbox = await startSandbox({ timings: { queuedMs: 50, processingMs: 300 } });
  root = await mkdtemp(path.join(tmpdir(), "generation-mcp-viewer-"));
  session = await connectStdio([], {
    HOME: root,
    GENERATION_API_KEY: sandbox.keys.paid,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_POLL_INTERVAL_MS: "100",
    GENERATION_STATE_DIR: path.join(root, "state"),
  });
  const read = await session.client.readResource({ uri: VIEWER_URI });
  const content = read.contents[0];
  if (content === undefined || !("text" in content)) throw new Error("the viewer resource has no text");
  const csp = (content._meta?.["ui"] as { csp: { resourceDomains: string[] } }).csp;
  host = await startHost(content.text, policyFor(csp));
  hostUrl = `http://127.0.0.1:${(host.address() as AddressInfo).port}`;
}, 30_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => (host ? host.close(resolve) : resolve(undefined)));
  await session?.close();
  await sandbox?.close();
  if (root !== undefined) await rm(root, { recursive: true, force: true });
});

describe("the MCP Apps viewer in headless Chromium", () => {
  it("plays the finished video of a real generate_video result (metadata read, about 2 s)", async () => {
    const input = { prompt: "a lighthouse at dusk, waves" };
    const result = await call("generate_video", input);
    const videoUrl = (result.structuredContent as { video_url: string }).video_url;
    expect(new URL(videoUrl).origin).toBe(new URL(sandbox.baseUrl).origin);

    const frame = await mount("video", input, result);
    const video = await videoMetadata(frame, 10_000);
    expect(video.src).toBe(videoUrl);
    expect(video.duration).toBeCloseTo(SAMPLE_SECONDS, 1);
    // The player keeps the clip's 16:9 at the frame's width (about 310 px), and the viewer asked the host
    // for a height that shows it whole.
    const shown = await frame.evaluate(() => document.querySelector("video")?.getBoundingClientRect().height);
    expect(shown).toBeGreaterThan(150);
    await expect.poll(async () => (await mounted("video")).heights.at(-1)).toBeGreaterThan(shown ?? 0);
  }, 30_000);

  it("shows generate_image's images in a gallery, each decoded; other origins stay blocked", async () => {
    const input = { prompt: "a red fox in snow", aspect_ratio: "4:3" };
    const result = await call("generate_image", input);
    const urls = (result.structuredContent as { image_urls: string[] }).image_urls;
    expect(urls.length).toBeGreaterThan(0);

    const frame = await mount("images", input, result);
    await frame.waitForFunction(
      (count) => {
        const images = [...document.querySelectorAll("img")];
        return images.length === count && images.every((image) => image.complete && image.naturalWidth > 0);
      },
      urls.length,
      { timeout: 10_000 },
    );
    const shown = await frame.evaluate(() => [...document.querySelectorAll("img")].map((image) => image.src));
    expect(shown).toEqual(urls);
    // The policy from the resource's _meta.ui.csp admits the service's origin only: the host's own
    // origin (also 127.0.0.1, another port) is refused.
    const elsewhere = await frame.evaluate(
      (src) =>
        new Promise<string>((resolve) => {
          const image = new Image();
          image.onload = () => resolve("loaded");
          image.onerror = () => resolve("blocked");
          image.src = src;
        }),
      `${hostUrl}/pixel.png`,
    );
    expect(elsewhere).toBe("blocked");
  }, 30_000);

  it("shows the status with elapsed time while processing, then the video once get_status says so", async () => {
    const input = { prompt: "a paper boat on a pond", wait: false };
    const result = await call("generate_video", input);
    const started = result.structuredContent as { video_id: string; status: string };
    expect(["completed", "failed"]).not.toContain(started.status);

    const frame = await mount("status", input, result);
    await frame.waitForFunction(() => /elapsed/.test(document.body.textContent ?? ""), undefined, {
      timeout: 5_000,
    });
    const statusText = await frame.evaluate(() => document.querySelector(".status")?.textContent ?? "");
    expect(statusText).toMatch(new RegExp(`^${started.status} · \\d+:\\d\\d elapsed$`));
    expect(await frame.evaluate(() => document.body.textContent)).toContain(started.video_id);
    await mkdir(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, "viewer-processing.png"), fullPage: true });

    // The viewer asks get_status through the host (tools/call), which forwards it to the server.
    const video = await videoMetadata(frame, 15_000);
    expect(video.duration).toBeCloseTo(SAMPLE_SECONDS, 1);
    expect((await mounted("status")).calls).toContain("get_status");
    await page.screenshot({ path: path.join(ARTIFACTS, "viewer.png"), fullPage: true });
  }, 30_000);
});
