/**
 * The MCP Apps viewer as a person sees it: real tool results from the built bin against a sandbox on
 * 127.0.0.1, handed to the viewer by a minimal host page built on the SDK's AppBridge (ext-apps 2.x), in
 * Debian's headless Chromium driven by playwright-core (no browser download). The viewer page is served
 * with the Content-Security-Policy its resource declares, as a host would apply it, or with a stricter one
 * (a host that leaves out our media origin, or has no media-src).
 *
 * Both protocol eras, each with the page, the results and the forwarded get_status of its own connection:
 * 2025-11-25 (the SDK v1 client over stdio) and 2026-07-28 (the SDK v2 client pinned to it, over
 * `--http`). The viewer never sees the era: the host hands it plain tool results either way. Then every
 * state of the viewer in a wider frame, in the host's light and dark themes, and every medium under a host
 * policy that blocks it.
 *
 * Chromium: `chromium` on PATH, or CHROMIUM_PATH. Without it every test here fails, saying so (CI installs
 * it).
 * Screenshots are kept in test-artifacts/viewer/ (viewer-processing.png and viewer.png after the
 * 2025-11-25 run, viewer-processing-2026.png and viewer-2026.png after the 2026-07-28 one; viewer-light.png
 * and viewer-dark.png: every state in each theme; viewer-blocked.png: the links a blocking host shows).
 */
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { build } from "esbuild";
import { chromium, type Browser, type Frame, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
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
import type { MountedViewer, MountOptions } from "./host-page.js";

// Most cases wait on the viewer's own 5 s refresh or a video's metadata: all of them at once, not 5 at a time.
vi.setConfig({ maxConcurrency: 20 });

const ARTIFACTS = path.resolve(import.meta.dirname, "../../test-artifacts/viewer");
/** The sandbox's clip (src/sandbox/media/sample-video.ts) lasts 2 s, at 320x180. */
const SAMPLE_SECONDS = 2;
const SAMPLE_WIDTH = 320;
const VIEWPORT_HEIGHT = 2400;

let sandbox: SandboxHandle;
let root: string;
let httpServer: Awaited<ReturnType<typeof startHttpServer>> | undefined;
const hosts = {} as Record<Era, EraHost>;
let host: Server;
let hostUrl: string;
let browser: Promise<Browser> | undefined;
const pages = new Map<string, Promise<Page>>();
/** Results shown by several cases: a failed video, and (makeShared) a completed video and an image. */
const shared: { video?: ToolResult; image?: ToolResult; failed?: ToolResult } = {};

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

type Csp = { resourceDomains?: string[]; connectDomains?: string[] };
type Policy = NonNullable<MountOptions["csp"]>;

/**
 * The policy a host derives from the resource's `_meta.ui.csp`: nothing beyond the declared origins. "none":
 * a host that gives the page no resource origin; "no-media-src": an older host without that directive.
 */
function policyFor(csp: Csp, policy: Policy): string {
  const media = policy === "none" ? "" : (csp.resourceDomains ?? []).join(" ");
  const connect = (csp.connectDomains ?? []).join(" ") || "'none'";
  return [
    "default-src 'none'",
    "script-src 'unsafe-inline'",
    "style-src 'unsafe-inline'",
    `img-src data: ${media}`,
    ...(policy === "no-media-src" ? [] : [`media-src data: ${media}`]),
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

/** Per era: the viewer page as that era's resources/read gave it, and the CSP it declares. */
type Viewers = Record<Era, { html: string; csp: Csp }>;

/** The host's own page in its theme, as a chat client would paint around the frames. */
const HOST_THEMES = {
  light: "color-scheme:light;background:#faf9f5;color:#1f1f1f",
  dark: "color-scheme:dark;background:#262624;color:#eee",
};

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
      const theme = url.searchParams.get("theme") === "dark" ? "dark" : "light";
      return send(
        "text/html",
        `<!doctype html><meta charset="utf-8"><style>html{${HOST_THEMES[theme]}}body{margin:0;padding:12px;` +
          "display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start;width:1140px;font:13px system-ui}" +
          "iframe{height:60px;border:1px solid #8886;border-radius:10px}" +
          '</style><body><script src="/host.js"></script></body>',
      );
    }
    if (url.pathname === "/host.js") return send("text/javascript", hostJs);
    if (url.pathname === "/viewer.html" && era !== null && era in viewers) {
      const policy = policyFor(viewers[era].csp, (url.searchParams.get("csp") ?? "declared") as Policy);
      return send("text/html", viewers[era].html, { "content-security-policy": policy });
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
 * Launches Chromium and opens a host page, once per key. Done from the tests rather than beforeAll, so
 * that a machine without Chromium shows each test failed with the reason, not skipped.
 */
function hostPage(key: string, theme: "light" | "dark" = "light"): Promise<Page> {
  let opened = pages.get(key);
  if (opened === undefined) {
    opened = (async () => {
      // One browser for every page, launched by whichever test asks first.
      browser ??= chromium.launch({ executablePath: findChromium() });
      // Tall enough to keep every frame on screen: Chromium stops rendering, resize observers and
      // animation frames in a cross-origin frame off screen, as a host page scrolled away would.
      const page = await (await browser).newPage({ viewport: { width: 1164, height: VIEWPORT_HEIGHT } });
      await page.goto(`${hostUrl}/host.html?theme=${theme}`);
      return page;
    })();
    pages.set(key, opened);
  }
  return opened;
}

/** A screenshot of the host page as tall as its frames (the viewport is taller). */
async function screenshot(page: Page, file: string): Promise<void> {
  const height = await page.evaluate(() => Math.ceil(document.body.getBoundingClientRect().bottom));
  await page.screenshot({ path: path.join(ARTIFACTS, file), clip: { x: 0, y: 0, width: 1164, height } });
}

/** Mounts the viewer for one tool call in a host page and returns its frame; no result: still running. */
async function mount(
  page: Page,
  name: string,
  options: MountOptions,
  input: Record<string, unknown>,
  result?: ToolResult,
): Promise<Frame> {
  await page.evaluate(
    ([n, o, i, r]) => window.mountViewer(n, o, i, r as Parameters<typeof window.mountViewer>[3]),
    [name, options, input, result] as const,
  );
  const frame = page.frame({ name });
  if (frame === null) throw new Error(`no frame named ${name}`);
  return frame;
}

const mounted = (page: Page, name: string) =>
  page.evaluate((n) => window.viewers[n], name) as Promise<MountedViewer>;

/** Waits until the frame's <video> has read the file's metadata; returns what it read and shows. */
async function videoMetadata(
  frame: Frame,
  timeout: number,
): Promise<{ duration: number; src: string; width: number; shownWidth: number }> {
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
    const shownWidth = video.getBoundingClientRect().width;
    return { duration: video.duration, src: video.currentSrc, width: video.videoWidth, shownWidth };
  });
}

/** Waits until every <img> of the frame (the frame sheet included) has decoded. */
async function imagesDecoded(frame: Frame, count: number): Promise<void> {
  await frame.waitForFunction(
    (n) => {
      const images = [...document.querySelectorAll("img")];
      return images.length === n && images.every((image) => image.complete && image.naturalWidth > 0);
    },
    count,
    { timeout: 10_000 },
  );
}

const textOf = (frame: Frame) => frame.evaluate(() => document.body.innerText);
const captionOf = (frame: Frame, selector = "figure") =>
  frame.evaluate((s) => document.querySelector(`${s} .caption`)?.textContent ?? "", selector);

/**
 * What `read` gives once `done` holds of it, or after 5 s, whichever comes first: the cases run side by side,
 * where expect.poll cannot tell which case it belongs to.
 */
async function settled<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 5000;
  let value = await read();
  while (!done(value) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    value = await read();
  }
  return value;
}

/** Clicks the link of the frame whose text is `text`, and returns the links the host was asked to open. */
async function openLink(page: Page, name: string, frame: Frame, text: string): Promise<string[]> {
  await frame.getByRole("link", { name: text, exact: true }).click();
  const links = await settled(
    async () => (await mounted(page, name)).links,
    (opened) => opened.length > 0,
  );
  expect(links.length).toBeGreaterThan(0);
  return links;
}

/** The viewer page as `host`'s resources/read returns it, and the CSP it declares. */
async function readViewer(host: EraHost): Promise<{ html: string; csp: Csp }> {
  const read = await host.readResource(VIEWER_URI);
  const content = read.contents[0];
  if (content === undefined || typeof content["text"] !== "string") {
    throw new Error(`the viewer resource has no text (${host.era})`);
  }
  const meta = content["_meta"] as { ui: { csp: Csp } };
  return { html: content["text"], csp: meta.ui.csp };
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
  await mkdir(ARTIFACTS, { recursive: true });
  // The sandbox fails the next task it starts, whoever starts it: before the cases, which run side by side.
  sandbox.faults.failNextTask("The provider could not render this prompt.");
  shared.failed = await call(LEGACY, "generate_video", { prompt: "a failing prompt" });
}, 30_000);

afterAll(async () => {
  await browser?.then((opened) => opened.close()).catch(() => undefined);
  await new Promise((resolve) => (host ? host.close(resolve) : resolve(undefined)));
  await Promise.all(Object.values(hosts).map((era) => era.close()));
  await httpServer?.stop();
  await sandbox?.close();
  if (root !== undefined) await rm(root, { recursive: true, force: true });
});

describe.concurrent.each([LEGACY, MODERN] as const)("the MCP Apps viewer in headless Chromium, %s", (era) => {
  /** Frame names are per era: both eras' viewers stay mounted side by side in the host page. */
  const frameName = (name: string) => `${name}-${era}`;
  const shot = (name: string) => (era === LEGACY ? `${name}.png` : `${name}-2026.png`);
  const options = { era, theme: "light" } as const;

  it("runs on a connection of that revision", () => {
    expect(hosts[era].protocolVersion).toBe(era);
  });

  it("plays the finished video of a real generate_video result (metadata read, about 2 s)", async () => {
    const page = await hostPage("eras");
    const input = { prompt: "a lighthouse at dusk, waves" };
    const result = await call(era, "generate_video", input);
    const videoUrl = (result.structuredContent as { video_url: string }).video_url;
    expect(new URL(videoUrl).origin).toBe(new URL(sandbox.baseUrl).origin);

    const frame = await mount(page, frameName("video"), options, input, result);
    const video = await videoMetadata(frame, 10_000);
    expect(video.src).toBe(videoUrl);
    expect(video.duration).toBeCloseTo(SAMPLE_SECONDS, 1);
    // The player keeps the clip's 16:9 at the frame's width (about 306 px), and the viewer asked the host
    // for a height that shows it whole.
    const shown = await frame.evaluate(() => document.querySelector("video")?.getBoundingClientRect().height);
    expect(shown).toBeGreaterThan(150);
    const asked = await settled(
      async () => (await mounted(page, frameName("video"))).heights.at(-1),
      (height) => (height ?? 0) > (shown ?? 0),
    );
    expect(asked).toBeGreaterThan(shown ?? 0);
  }, 30_000);

  it("shows generate_image's image, decoded and captioned; other origins stay blocked", async () => {
    const page = await hostPage("eras");
    const input = { prompt: "a red fox in snow", aspect_ratio: "4:3" };
    const result = await call(era, "generate_image", input);
    const urls = (result.structuredContent as { image_urls: string[] }).image_urls;
    expect(urls.length).toBeGreaterThan(0);

    const frame = await mount(page, frameName("images"), options, input, result);
    await imagesDecoded(frame, urls.length);
    const shown = await frame.evaluate(() => [...document.querySelectorAll("img")].map((image) => image.src));
    expect(shown).toEqual(urls);
    expect(await captionOf(frame)).toBe("1024×768 · PNG · Open the image");
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
    const page = await hostPage("eras");
    const input = { prompt: "a paper boat on a pond", wait: false };
    const result = await call(era, "generate_video", input);
    const started = result.structuredContent as { video_id: string; status: string };
    expect(["completed", "failed"]).not.toContain(started.status);

    const frame = await mount(page, frameName("status"), options, input, result);
    await frame.waitForFunction(() => /elapsed/.test(document.body.textContent ?? ""), undefined, {
      timeout: 5_000,
    });
    const statusText = await frame.evaluate(() => document.querySelector(".status")?.textContent ?? "");
    expect(statusText).toMatch(new RegExp(`^${started.status} · \\d+:\\d\\d elapsed$`, "i"));
    expect(await frame.evaluate(() => document.body.textContent)).toContain(started.video_id);
    await screenshot(page, shot("viewer-processing"));

    // The viewer asks get_status through the host (tools/call), which forwards it to the server.
    const video = await videoMetadata(frame, 15_000);
    expect(video.duration).toBeCloseTo(SAMPLE_SECONDS, 1);
    expect((await mounted(page, frameName("status"))).calls).toContain("get_status");
    await screenshot(page, shot("viewer"));
  }, 30_000);
});

/**
 * Not the eras' prompts: an identical request would be answered with that one (reused, the image without
 * its size), whichever of the cases side by side asked first.
 */
const VIDEO_INPUT = { prompt: "a lighthouse at dusk, waves, in every state" };
const IMAGE_INPUT = { prompt: "a red fox asleep in snow", aspect_ratio: "4:3" };
/** One completed video and one image, made once for the cases that show them. */
const made: { video?: Promise<ToolResult>; image?: Promise<ToolResult> } = {};
async function makeShared(): Promise<void> {
  made.video ??= call(LEGACY, "generate_video", VIDEO_INPUT);
  made.image ??= call(LEGACY, "generate_image", IMAGE_INPUT);
  [shared.video, shared.image] = await Promise.all([made.video, made.image]);
}

describe.concurrent.each(["light", "dark"] as const)("every state of the viewer, %s theme", (theme) => {
  /** A frame wider than the clip, as a desktop chat gives it. */
  const options = { era: LEGACY, theme, width: 560 } as const;
  const name = (what: string) => `${what}-${theme}`;

  beforeAll(makeShared, 30_000);

  it("shows the elapsed time while the call is starting, and the prompt", async () => {
    const page = await hostPage(theme, theme);
    const frame = await mount(page, name("starting"), options, { prompt: "a slow start" });
    await frame.waitForFunction(
      () => /^Starting · 0:0[1-9] elapsed$/.test(document.querySelector(".status")?.textContent ?? ""),
      undefined,
      { timeout: 5_000 },
    );
    expect(await textOf(frame)).toContain("a slow start");
  });

  it("shows the video at its natural size, centred, with a caption, a link and the frame sheet", async () => {
    const page = await hostPage(theme, theme);
    const result = shared.video as ToolResult;
    const {
      video_id: videoId,
      video_url: videoUrl,
      frames,
    } = result.structuredContent as {
      video_id: string;
      video_url: string;
      frames: { width: number };
    };
    const frame = await mount(page, name("video"), options, VIDEO_INPUT, result);
    const video = await videoMetadata(frame, 10_000);
    // Not stretched to the frame's 536 px: the 320x180 clip is shown at 320 px, centred.
    expect(video.width).toBe(SAMPLE_WIDTH);
    expect(video.shownWidth).toBe(SAMPLE_WIDTH);
    const offset = await frame.evaluate(() => {
      const box = document.querySelector("video")?.getBoundingClientRect();
      return box === undefined ? -1 : box.left + box.width / 2 - document.body.clientWidth / 2;
    });
    expect(Math.abs(offset)).toBeLessThan(2);
    const caption = `0:02 · 320×180 · ${videoId} · Open the video`;
    expect(
      await settled(
        () => captionOf(frame),
        (shownCaption) => shownCaption === caption,
      ),
    ).toBe(caption);
    // The frame sheet of the result (its image content, told in structuredContent.frames), decoded.
    await imagesDecoded(frame, 1);
    const sheet = await frame.evaluate(() => document.querySelector("img")?.naturalWidth);
    expect(sheet).toBe(frames.width);
    expect(await captionOf(frame, "figure:nth-of-type(2)")).toMatch(/^Frames at 0\.0 s, 0\.3 s/);
    expect(await openLink(page, name("video"), frame, "Open the video")).toEqual([videoUrl]);
  }, 30_000);

  it("shows the image with its size and format and a link to the full image", async () => {
    const page = await hostPage(theme, theme);
    const result = shared.image as ToolResult;
    const [url] = (result.structuredContent as { image_urls: string[] }).image_urls;
    const frame = await mount(page, name("image"), options, IMAGE_INPUT, result);
    await imagesDecoded(frame, 1);
    const image = await frame.evaluate(() => {
      const img = document.querySelector("img") as HTMLImageElement;
      return {
        natural: img.naturalWidth,
        shown: img.getBoundingClientRect().width,
        frame: document.body.clientWidth,
      };
    });
    // 1024 px wide: shown at the frame's width, never above its own.
    expect(image.natural).toBe(1024);
    expect(image.shown).toBeLessThanOrEqual(image.frame);
    expect(await captionOf(frame)).toBe("1024×768 · PNG · Open the image");
    expect(await openLink(page, name("image"), frame, "Open the image")).toEqual([url]);
  }, 30_000);

  it("shows a queued video with its elapsed time, then plays it once it completes", async () => {
    const page = await hostPage(theme, theme);
    const input = { prompt: `a paper boat on a pond, ${theme}`, wait: false };
    const result = await call(LEGACY, "generate_video", input);
    expect((result.structuredContent as { status: string }).status).toBe("queued");
    const frame = await mount(page, name("queued"), options, input, result);
    await frame.waitForSelector(".status", { timeout: 5_000 });
    expect(await frame.evaluate(() => document.querySelector(".status")?.textContent)).toMatch(
      /^Queued · 0:\d\d elapsed$/,
    );
    const video = await videoMetadata(frame, 15_000);
    expect(video.shownWidth).toBe(SAMPLE_WIDTH);
    expect((await mounted(page, name("queued"))).calls).toContain("get_status");
  }, 30_000);

  it("says clearly when a video failed, and when a call was cancelled", async () => {
    const page = await hostPage(theme, theme);
    const failed = await mount(page, name("failed"), options, { prompt: "a failing prompt" }, shared.failed);
    await failed.waitForSelector(".state.failed", { timeout: 5_000 });
    const failedText = await textOf(failed);
    expect(failedText).toContain("Failed");
    expect(failedText).toContain("The provider could not render this prompt.");
    expect(failedText).toContain((shared.failed?.structuredContent as { video_id: string }).video_id);

    const cancelled = await mount(page, name("cancelled"), options, { prompt: "a cancelled call" });
    await page.evaluate(
      (n) => window.finishViewer(n, { cancelled: "The user stopped the call." }),
      name("cancelled"),
    );
    await cancelled.waitForSelector(".state.cancelled", { timeout: 5_000 });
    expect(await textOf(cancelled)).toMatch(/^Cancelled\s+The user stopped the call\./);
    await screenshot(page, `viewer-${theme}.png`);
  }, 30_000);
});

describe.concurrent("under a host policy that blocks our media origin", () => {
  it.each([
    ["no resource origin at all", "none", true],
    ["no media-src (an older host)", "no-media-src", false],
  ] as const)(
    "%s: each blocked medium shows its link and what is known of it",
    async (_title, csp, imageBlocked) => {
      const page = await hostPage("blocked");
      await makeShared();
      if (shared.video === undefined || shared.image === undefined) throw new Error("no shared results");
      const { video_url: videoUrl } = shared.video.structuredContent as { video_url: string };
      const [imageUrl] = (shared.image.structuredContent as { image_urls: string[] }).image_urls;
      const options = { era: LEGACY, theme: "light", csp, width: 420 } as const;
      const video = await mount(page, `video-${csp}`, options, VIDEO_INPUT, shared.video);
      const image = await mount(page, `image-${csp}`, options, IMAGE_INPUT, shared.image);

      await video.waitForFunction(() => /cannot play here/.test(document.body.innerText), undefined, {
        timeout: 10_000,
      });
      expect(await textOf(video)).toContain(`The video cannot play here. Open it: ${videoUrl}`);
      expect(await openLink(page, `video-${csp}`, video, videoUrl ?? "")).toEqual([videoUrl]);
      if (imageBlocked) {
        await image.waitForFunction(() => /cannot load here/.test(document.body.innerText), undefined, {
          timeout: 10_000,
        });
        expect(await textOf(image)).toContain(`The image cannot load here. Open it: ${imageUrl}`);
        // Its size and format, from the service's answer.
        expect(await textOf(image)).toContain("1024×768 · PNG");
        expect(await openLink(page, `image-${csp}`, image, imageUrl ?? "")).toEqual([imageUrl]);
      } else {
        await imagesDecoded(image, 1);
      }
      await screenshot(page, "viewer-blocked.png");
    },
    30_000,
  );
});
