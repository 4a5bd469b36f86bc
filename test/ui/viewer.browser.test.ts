/**
 * The MCP Apps viewer as a person sees it: real tool results from the built bin against a sandbox on
 * 127.0.0.1, handed to the viewer by a minimal host page built on the SDK's AppBridge (ext-apps 2.x), in
 * Debian's headless Chromium driven by playwright-core (no browser download). The viewer page is served
 * with the Content-Security-Policy its resource declares, as a host would apply it.
 *
 * Both protocol eras, each with the page, the results and the forwarded get_status of its own connection:
 * 2025-11-25 (the SDK v1 client over stdio) and 2026-07-28 (the SDK v2 client pinned to it, over
 * `--http`). The viewer never sees the era: the host hands it plain tool results either way.
 *
 * Chromium: `chromium` on PATH, or CHROMIUM_PATH. Without it every test here fails, saying so (CI installs
 * it).
 * Screenshots are kept in test-artifacts/viewer/ (viewer-processing.png and viewer.png after the
 * 2025-11-25 run, viewer-processing-2026.png and viewer-2026.png after the 2026-07-28 one).
 */
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { build } from "esbuild";
import { chromium, type Browser, type Frame, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { VIEWER_URI } from "../../src/ui/viewer.js";
import { tinyPng } from "../helpers/harness.js";
import {
  LEGACY,
  MODERN,
  legacyStdioHost,
  modernHttpHost,
  startHttpServer,
  type Era,
  type EraHost,
  type ToolResult,
} from "./eras.js";
import type { MountedViewer } from "./host-page.js";

const ARTIFACTS = path.resolve(import.meta.dirname, "../../test-artifacts/viewer");
/** The sandbox's clip (src/sandbox/media/sample-video.ts) lasts 2 s. */
const SAMPLE_SECONDS = 2;

let sandbox: SandboxHandle;
let root: string;
let httpServer: Awaited<ReturnType<typeof startHttpServer>> | undefined;
const hosts = {} as Record<Era, EraHost>;
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

/** Per era: the viewer page as that era's resources/read gave it, and the policy its CSP asks for. */
type Viewers = Record<Era, { html: string; policy: string }>;

async function startHost(viewers: Viewers): Promise<Server> {
  const hostJs = await bundleHostPage();
  const pixel = tinyPng();
  const server = createServer((req, res) => {
    const send = (type: string, body: string | Buffer, headers: Record<string, string> = {}) => {
      res.writeHead(200, { "content-type": type, ...headers });
      res.end(body);
    };
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const era = url.searchParams.get("era") as Era | null;
    if (url.pathname === "/host.html") {
      return send(
        "text/html",
        '<!doctype html><meta charset="utf-8"><style>body{margin:0;padding:12px;display:flex;flex-wrap:wrap;' +
          "gap:12px;align-items:flex-start;width:1040px}iframe{width:330px;height:60px;border:1px solid #bbb}" +
          '</style><body><script src="/host.js"></script></body>',
      );
    }
    if (url.pathname === "/host.js") return send("text/javascript", hostJs);
    if (url.pathname === "/viewer.html" && era !== null && era in viewers) {
      return send("text/html", viewers[era].html, { "content-security-policy": viewers[era].policy });
    }
    if (url.pathname === "/pixel.png") return send("image/png", pixel);
    if (url.pathname === "/call" && req.method === "POST" && era !== null && era in hosts) {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
      req.on("end", () => {
        const params = JSON.parse(body) as { name: string; arguments?: Record<string, unknown> };
        hosts[era]
          .callTool(params.name, params.arguments)
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

async function call(era: Era, name: string, args: Record<string, unknown>): Promise<ToolResult> {
  const result = await hosts[era].callTool(name, args);
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

/** Mounts the viewer for one tool call of `era` in the host page and returns its frame. */
async function mount(
  name: string,
  era: Era,
  input: Record<string, unknown>,
  result: ToolResult,
): Promise<Frame> {
  await openHostPage();
  await page.evaluate(
    ([n, e, i, r]) => window.mountViewer(n, e, i, r as Parameters<typeof window.mountViewer>[3]),
    [name, era, input, result] as const,
  );
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

/** The viewer page as `host`'s resources/read returns it, and the policy a host derives from its CSP. */
async function readViewer(host: EraHost): Promise<{ html: string; policy: string }> {
  const read = await host.readResource(VIEWER_URI);
  const content = read.contents[0];
  if (content === undefined || typeof content["text"] !== "string") {
    throw new Error(`the viewer resource has no text (${host.era})`);
  }
  const meta = content["_meta"] as { ui: { csp: { resourceDomains: string[] } } };
  return { html: content["text"], policy: policyFor(meta.ui.csp) };
}

beforeAll(async () => {
  sandbox = await startSandbox({ timings: { queuedMs: 50, processingMs: 300 } });
  root = await mkdtemp(path.join(tmpdir(), "generation-mcp-viewer-"));
  // Each server its own HOME and state folder; both against the one sandbox, so one media origin. Over
  // HTTP each caller brings its key (Authorization), as a remote host's user does.
  const env = (dir: string) => ({
    HOME: dir,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_POLL_INTERVAL_MS: "100",
    GENERATION_STATE_DIR: path.join(dir, "state"),
  });
  await mkdir(path.join(root, "http"));
  [hosts[LEGACY], httpServer] = await Promise.all([
    legacyStdioHost({ ...env(root), GENERATION_API_KEY: sandbox.keys.paid }),
    startHttpServer(env(path.join(root, "http"))),
  ]);
  hosts[MODERN] = await modernHttpHost(httpServer.url, sandbox.keys.paid);
  const [legacy, modern] = await Promise.all([readViewer(hosts[LEGACY]), readViewer(hosts[MODERN])]);
  host = await startHost({ [LEGACY]: legacy, [MODERN]: modern });
  hostUrl = `http://127.0.0.1:${(host.address() as AddressInfo).port}`;
}, 30_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => (host ? host.close(resolve) : resolve(undefined)));
  await Promise.all(Object.values(hosts).map((era) => era.close()));
  await httpServer?.stop();
  await sandbox?.close();
  if (root !== undefined) await rm(root, { recursive: true, force: true });
});

describe.each([LEGACY, MODERN] as const)("the MCP Apps viewer in headless Chromium, %s", (era) => {
  /** Frame names are per era: both eras' viewers stay mounted side by side in the host page. */
  const frameName = (name: string) => `${name}-${era}`;
  const shot = (name: string) => path.join(ARTIFACTS, era === LEGACY ? `${name}.png` : `${name}-2026.png`);

  it("runs on a connection of that revision", () => {
    expect(hosts[era].protocolVersion).toBe(era);
  });

  it("plays the finished video of a real generate_video result (metadata read, about 2 s)", async () => {
    const input = { prompt: "a lighthouse at dusk, waves" };
    const result = await call(era, "generate_video", input);
    const videoUrl = (result.structuredContent as { video_url: string }).video_url;
    expect(new URL(videoUrl).origin).toBe(new URL(sandbox.baseUrl).origin);

    const frame = await mount(frameName("video"), era, input, result);
    const video = await videoMetadata(frame, 10_000);
    expect(video.src).toBe(videoUrl);
    expect(video.duration).toBeCloseTo(SAMPLE_SECONDS, 1);
    // The player keeps the clip's 16:9 at the frame's width (about 310 px), and the viewer asked the host
    // for a height that shows it whole.
    const shown = await frame.evaluate(() => document.querySelector("video")?.getBoundingClientRect().height);
    expect(shown).toBeGreaterThan(150);
    await expect
      .poll(async () => (await mounted(frameName("video"))).heights.at(-1))
      .toBeGreaterThan(shown ?? 0);
  }, 30_000);

  it("shows generate_image's images in a gallery, each decoded; other origins stay blocked", async () => {
    const input = { prompt: "a red fox in snow", aspect_ratio: "4:3" };
    const result = await call(era, "generate_image", input);
    const urls = (result.structuredContent as { image_urls: string[] }).image_urls;
    expect(urls.length).toBeGreaterThan(0);

    const frame = await mount(frameName("images"), era, input, result);
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
    const result = await call(era, "generate_video", input);
    const started = result.structuredContent as { video_id: string; status: string };
    expect(["completed", "failed"]).not.toContain(started.status);

    const frame = await mount(frameName("status"), era, input, result);
    await frame.waitForFunction(() => /elapsed/.test(document.body.textContent ?? ""), undefined, {
      timeout: 5_000,
    });
    const statusText = await frame.evaluate(() => document.querySelector(".status")?.textContent ?? "");
    expect(statusText).toMatch(new RegExp(`^${started.status} · \\d+:\\d\\d elapsed$`));
    expect(await frame.evaluate(() => document.body.textContent)).toContain(started.video_id);
    await mkdir(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: shot("viewer-processing"), fullPage: true });

    // The viewer asks get_status through the host (tools/call), which forwards it to the server.
    const video = await videoMetadata(frame, 15_000);
    expect(video.duration).toBeCloseTo(SAMPLE_SECONDS, 1);
    expect((await mounted(frameName("status"))).calls).toContain("get_status");
    await page.screenshot({ path: shot("viewer"), fullPage: true });
  }, 30_000);
});
