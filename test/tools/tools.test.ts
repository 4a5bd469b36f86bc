/** The six tools through a real MCP client (in-process transport) against the sandbox. */
import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Progress } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { startHarness, tinyPng, type Harness } from "../helpers/harness.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const credits = (harness: Harness, name = "paid") =>
  harness.sandbox.accounts.find((account) => account.name === name)?.credits;

describe("generate_video", () => {
  it("starts a task, reports progress naming the video_id first, and returns the finished video", async () => {
    h = await startHarness();
    const before = credits(h);
    const progress: Progress[] = [];
    const { result, structured, text } = await h.call(
      "generate_video",
      { prompt: "a red fox in snow", duration: 4 },
      { onProgress: (update) => progress.push(update) },
    );
    expect(result.isError).toBeFalsy();
    expect(structured).toMatchObject({ status: "completed", estimated_credits: 20 });
    const videoId = String(structured?.["video_id"]);
    expect(structured?.["video_url"]).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/media\/videos\/.+\.mp4$/);
    expect(text).toContain(videoId);
    expect(credits(h)).toBe((before ?? 0) - 20);
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress[0]?.message).toContain(videoId);
    const values = progress.map((update) => update.progress);
    expect(values).toEqual([...values].sort((a, b) => a - b));
    expect(new Set(values).size).toBe(values.length);
    expect(h.logs.join("")).toContain(videoId);
  });

  it("answers 'still processing' without an error when the wait window ends, keeping the video_id", async () => {
    h = await startHarness({ sandbox: { timings: { queuedMs: 5000, processingMs: 5000 } } });
    const { result, structured, text } = await h.call("generate_video", {
      prompt: "slow",
      timeout_seconds: 0.2,
    });
    expect(result.isError).toBeFalsy();
    expect(structured?.["video_id"]).toEqual(expect.any(String));
    expect(structured?.["status"]).toBe("queued");
    expect(text).toMatch(/get_status/);
    expect(text).toMatch(/wait: true/);
  });

  it("returns at once with wait: false", async () => {
    h = await startHarness({ sandbox: { timings: { queuedMs: 5000, processingMs: 5000 } } });
    const { structured } = await h.call("generate_video", { prompt: "later", wait: false });
    expect(structured).toMatchObject({ status: "queued", estimated_credits: 25 });
  });

  it.each([
    [{ prompt: "p" }, 25],
    [{ prompt: "p", model: "vendor-video-2-0", duration: 4 }, 30],
    [{ prompt: "p", model: "vendor-video-2-0", duration: 4, resolution: "1080p" }, 40],
    [{ prompt: "p", model: "vendor-video-2-0-fast", duration: 10 }, 50],
    [{ prompt: "p", model: "vendor-video-1-5-pro", duration: 2.5 }, 12.5],
  ])("dry_run estimates %o at %d credits and sends nothing", async (args, expected) => {
    h = await startHarness();
    const mark = h.sandbox.requests.length;
    const { structured } = await h.call("generate_video", { ...args, dry_run: true });
    expect(structured).toMatchObject({ dry_run: true, estimated_credits: expected });
    expect(structured?.["video_id"]).toBeUndefined();
    expect(structured?.["request"]).toMatchObject({ prompt: "p" });
    expect(h.requestsSince(mark)).toEqual([]);
  });

  it("the estimate equals what the sandbox charges", async () => {
    h = await startHarness();
    const before = credits(h) ?? 0;
    const { structured } = await h.call("generate_video", {
      prompt: "cost check",
      model: "vendor-video-2-0",
      resolution: "1080p",
      duration: 3,
      wait: false,
    });
    expect(before - (credits(h) ?? 0)).toBe(structured?.["estimated_credits"]);
  });

  it("returns the earlier task for an identical request instead of charging again", async () => {
    h = await startHarness();
    const first = await h.call("generate_video", { prompt: "same  prompt", wait: false });
    const afterFirst = credits(h);
    const second = await h.call("generate_video", { prompt: "same prompt ", wait: false });
    expect(second.structured).toMatchObject({ video_id: first.structured?.["video_id"], reused: true });
    expect(credits(h)).toBe(afterFirst);
    const third = await h.call("generate_video", {
      prompt: "same prompt",
      wait: false,
      allow_duplicate: true,
    });
    expect(third.structured?.["video_id"]).not.toBe(first.structured?.["video_id"]);
    expect(credits(h)).toBe((afterFirst ?? 0) - 25);
  });

  it("uploads a local image first and starts image_to_video with the hosted URL", async () => {
    h = await startHarness();
    const file = path.join(h.imagesDir, "ref.png");
    await writeFile(file, tinyPng(4, 4));
    const { result, structured } = await h.call("generate_video", {
      prompt: "animate",
      image_path: file,
      wait: false,
    });
    expect(result.isError).toBeFalsy();
    const routes = h.sandbox.requests.map((request) => request.route);
    expect(routes).toContain("upload");
    expect(routes.indexOf("upload")).toBeLessThan(routes.indexOf("generate"));
    const statusRequest = await h.call("get_status", { video_id: String(structured?.["video_id"]) });
    expect(statusRequest.result.isError).toBeFalsy();
  });

  it("a reused request with a local image uploads nothing again", async () => {
    // A task still running at the second call: one that had finished would also have its video fetched for
    // the frame sheet (a loaded machine took longer than the default 0.2 s between the calls).
    h = await startHarness({ sandbox: { timings: { queuedMs: 5000, processingMs: 5000 } } });
    const file = path.join(h.imagesDir, "same.png");
    await writeFile(file, tinyPng(3, 3));
    const first = await h.call("generate_video", { prompt: "again", image_path: file, wait: false });
    const mark = h.sandbox.requests.length;
    const second = await h.call("generate_video", { prompt: "again", image_path: file, wait: false });
    expect(second.structured).toMatchObject({ video_id: first.structured?.["video_id"], reused: true });
    // Nothing uploaded, nothing started: one status read proves the earlier task still exists.
    expect(h.requestsSince(mark).map((request) => request.route)).toEqual(["video-status"]);
  });

  it("saves the finished video with download: true; saving it again returns the same file", async () => {
    h = await startHarness();
    const first = await h.call("generate_video", { prompt: "keep me", download: true });
    const saved = String(first.structured?.["local_path"]);
    expect(saved.startsWith(h.config.outputDir)).toBe(true);
    const bytes = await readFile(saved);
    expect(bytes.subarray(4, 8).toString("ascii")).toBe("ftyp");
    const again = await h.call("get_status", {
      video_id: String(first.structured?.["video_id"]),
      download: true,
    });
    expect(again.structured?.["local_path"]).toBe(saved);
    expect(await readdir(h.config.outputDir)).toEqual([path.basename(saved)]);
    expect((await stat(saved)).size).toBe(bytes.length);
  });

  it("reports a failed task with its error", async () => {
    h = await startHarness();
    h.sandbox.faults.failNextTask("the provider rejected the prompt");
    const { result, structured, text } = await h.call("generate_video", { prompt: "doomed" });
    expect(result.isError).toBeFalsy();
    expect(structured?.["status"]).toBe("failed");
    expect(JSON.stringify(structured?.["error"])).toContain("rejected the prompt");
    expect(text).toMatch(/failed/);
  });
});

describe("get_status, list_videos, get_credits, upload_image, generate_image", () => {
  it("get_status with wait: true resumes waiting and returns the finished video", async () => {
    h = await startHarness();
    const started = await h.call("generate_video", { prompt: "resume", wait: false });
    const { structured } = await h.call("get_status", {
      video_id: String(started.structured?.["video_id"]),
      wait: true,
    });
    expect(structured).toMatchObject({ status: "completed", video_url: expect.stringMatching(/\.mp4$/) });
  });

  it("list_videos pages through history newest first with totals", async () => {
    h = await startHarness();
    for (const prompt of ["one", "two", "three"]) await h.call("generate_video", { prompt, wait: false });
    const { structured } = await h.call("list_videos", { page: 1, limit: 2 });
    const items = structured?.["items"] as Record<string, unknown>[];
    expect(items).toHaveLength(2);
    expect(items[0]?.["prompt"]).toBe("three");
    expect(structured).toMatchObject({ page: 1, limit: 2, total: 3 });
  });

  it("get_credits relays the service's fields", async () => {
    h = await startHarness();
    const { structured, text } = await h.call("get_credits");
    expect(structured).toMatchObject({ credits: credits(h), paid_access: true });
    expect(text).toMatch(/credits/);
  });

  it("upload_image takes a path or base64 and returns the hosted URL", async () => {
    h = await startHarness();
    const file = path.join(h.imagesDir, "up.png");
    await writeFile(file, tinyPng());
    const fromPath = await h.call("upload_image", { path: file });
    expect(fromPath.structured?.["url"]).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/media\/uploads\//);
    const fromBase64 = await h.call("upload_image", {
      data_base64: tinyPng().toString("base64"),
      filename: "x.png",
    });
    const response = await fetch(String(fromBase64.structured?.["url"]));
    expect(response.headers.get("content-type")).toBe("image/png");
    expect(Buffer.from(await response.arrayBuffer())).toEqual(tinyPng());
  });

  it("generate_image returns image URLs and saves them with download: true", async () => {
    h = await startHarness();
    const { result, structured } = await h.call("generate_image", {
      prompt: "a lighthouse",
      output_format: "webp",
      resolution: "1k",
      download: true,
    });
    expect(result.isError).toBeFalsy();
    const urls = structured?.["image_urls"] as string[];
    expect(urls).toHaveLength(1);
    const [saved] = structured?.["local_paths"] as string[];
    expect(saved).toMatch(/\.webp$/);
    expect((await readFile(String(saved))).subarray(8, 12).toString("ascii")).toBe("WEBP");
    expect(structured?.["estimated_credits"]).toBe(5);
  });
});

describe("MCP roots", () => {
  it("lets files inside the client's roots be uploaded, and follows the roots when they change", async () => {
    const root = await mkdtemp(path.join(tmpdir(), "generation-mcp-roots-"));
    const [first, second] = [path.join(root, "first"), path.join(root, "second")];
    await mkdir(first);
    await mkdir(second);
    try {
      h = await startHarness({ roots: [first], config: { allowedDirs: [] } });
      const inRoot = path.join(first, "a.png");
      await writeFile(inRoot, tinyPng());
      const outsideRoots = path.join(h.imagesDir, "b.png");
      await writeFile(outsideRoots, tinyPng());

      expect((await h.call("upload_image", { path: inRoot })).result.isError).toBeFalsy();
      expect((await h.call("upload_image", { path: outsideRoots })).text).toMatch(
        /^validation_error: path: /,
      );

      await h.setRoots([second]);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect((await h.call("upload_image", { path: inRoot })).text).toMatch(/^validation_error: path: /);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe("service errors become isError results that start with the code", () => {
  it.each([
    ["credits", 401, "unauthorized", "get_credits", {}],
    ["generate", 403, "insufficient_credits", "generate_video", { prompt: "x" }],
    ["generate", 403, "paid_access_required", "generate_video", { prompt: "x" }],
    ["generate", 400, "validation_error", "generate_video", { prompt: "x" }],
    ["video-status", 404, "not_found", "get_status", { video_id: "nope" }],
  ] as const)("%s %d %s", async (route, status, code, tool, args) => {
    h = await startHarness();
    h.sandbox.faults.failNext(route, { status, code, message: `forced ${code}` });
    const { result, text } = await h.call(tool, args);
    expect(result.isError).toBe(true);
    expect(text.startsWith(`${code}: `)).toBe(true);
    expect(text).toMatch(/Next step: /);
  });

  it("real insufficient credits and paid access answers from the accounts", async () => {
    h = await startHarness({ apiKey: "poor" });
    const poor = await h.call("generate_video", { prompt: "x" });
    expect(poor.text).toMatch(/^insufficient_credits: /);
    await h.close();
    h = await startHarness({ apiKey: "free" });
    const free = await h.call("generate_video", { prompt: "x", model: "vendor-video-2-0" });
    expect(free.text).toMatch(/^paid_access_required: /);
    const image = await h.call("generate_image", { prompt: "x" });
    expect(image.text).toMatch(/^paid_access_required: /);
  });

  it("an unknown video_id is not_found", async () => {
    h = await startHarness();
    const { text } = await h.call("get_status", { video_id: "does-not-exist" });
    expect(text).toMatch(/^not_found: /);
  });

  it("429 on a read is ridden out; 429 beyond it is rate_limit_exceeded", async () => {
    h = await startHarness();
    h.sandbox.faults.headersNext("credits", { "Retry-After": "0" }, 5);
    h.sandbox.faults.failNext("credits", { status: 429, code: "rate_limit_exceeded", count: 1 });
    const recovered = await h.call("get_credits");
    expect(recovered.result.isError).toBeFalsy();
    h.sandbox.faults.headersNext("credits", { "Retry-After": "0" }, 5);
    h.sandbox.faults.failNext("credits", { status: 429, code: "rate_limit_exceeded", count: 5 });
    const exhausted = await h.call("get_credits");
    expect(exhausted.text).toMatch(/^rate_limit_exceeded: /);
  });

  it("a start refused by a 429 whose reset is an hour away answers at once, charging nothing", async () => {
    h = await startHarness();
    const before = credits(h);
    h.sandbox.faults.headersNext("generate", { "Retry-After": "3600" });
    h.sandbox.faults.failNext("generate", { status: 429, code: "rate_limit_exceeded" });
    const mark = h.sandbox.requests.length;
    const started = Date.now();
    const { text } = await h.call("generate_video", { prompt: "later", wait: false });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(text).toMatch(/^rate_limit_exceeded: .*resets in about \d+ s/);
    expect(h.requestsSince(mark).filter((request) => request.route === "generate")).toHaveLength(1);
    expect(credits(h)).toBe(before);
  });

  it("internal_error and upstream_error on reads after retries", async () => {
    h = await startHarness({ client: { maxRetries: 0 } });
    h.sandbox.faults.failNext("videos", { status: 500, code: "internal_error" });
    expect((await h.call("list_videos")).text).toMatch(/^internal_error: /);
    h.sandbox.faults.failNext("credits", { status: 502, code: "upstream_error" });
    expect((await h.call("get_credits")).text).toMatch(/^upstream_error: /);
  });

  it("a start that fails ambiguously says a charge is possible", async () => {
    h = await startHarness();
    h.sandbox.faults.failNext("generate", { status: 500, code: "internal_error" });
    const { result, text } = await h.call("generate_video", { prompt: "ambiguous" });
    expect(result.isError).toBe(true);
    expect(text).toMatch(/^internal_error: /);
    expect(text).toMatch(/charge is possible/i);
  });

  it("a start whose answer was lost after the charge is reconciled from history", async () => {
    h = await startHarness();
    h.sandbox.faults.dropNext("generate", { phase: "after" });
    const before = credits(h) ?? 0;
    const { result, structured } = await h.call("generate_video", { prompt: "lost answer", wait: false });
    expect(result.isError).toBeFalsy();
    expect(structured?.["video_id"]).toEqual(expect.any(String));
    expect(structured?.["warning"]).toMatch(/adopted/);
    expect(before - (credits(h) ?? 0)).toBe(25);
  });

  it("network_error when the service cannot be reached, and timeout when it does not answer", async () => {
    h = await startHarness({ client: { maxRetries: 0, timeoutMs: 300 } });
    h.sandbox.faults.latency("credits", 2000);
    expect((await h.call("get_credits")).text).toMatch(/^timeout: /);
    h.sandbox.faults.clear();
    await h.close();
    h = await startHarness({ client: { maxRetries: 0 }, config: { baseUrl: "http://127.0.0.1:9/api/v1" } });
    expect((await h.call("get_credits")).text).toMatch(/^network_error: /);
  });

  it("an HTML error page or malformed JSON never reaches the assistant raw", async () => {
    h = await startHarness({ client: { maxRetries: 0 } });
    h.sandbox.faults.malformedNext("credits", "html", { status: 502 });
    const html = await h.call("get_credits");
    expect(html.text).toMatch(/^upstream_error: /);
    expect(html.text).not.toMatch(/<html|<body/i);
    h.sandbox.faults.malformedNext("credits", "invalid-json");
    expect((await h.call("get_credits")).text).toMatch(/^internal_error: .*not JSON/);
    h.sandbox.faults.malformedNext("credits", "no-data");
    expect((await h.call("get_credits")).text).toMatch(/^internal_error: .*envelope/);
  });
});

describe("tolerance of the shapes the spec leaves open", () => {
  it("a bare-array history", async () => {
    h = await startHarness({ sandbox: { shapes: { listShape: "array" } } });
    await h.call("generate_video", { prompt: "listed", wait: false });
    const { result, structured } = await h.call("list_videos");
    expect(result.isError).toBeFalsy();
    expect(structured?.["items"]).toHaveLength(1);
  });

  it("an upload URL under another field name", async () => {
    h = await startHarness({ sandbox: { shapes: { uploadUrlField: "file_location" } } });
    const { structured } = await h.call("upload_image", {
      data_base64: tinyPng().toString("base64"),
      filename: "a.png",
    });
    expect(structured?.["url"]).toMatch(/^http:\/\/127\.0\.0\.1/);
  });

  it("unfamiliar in-progress statuses", async () => {
    h = await startHarness({
      // Long enough that a loaded machine still polls before the end (the default 200 ms it may not).
      sandbox: {
        shapes: { inProgressStatuses: ["pending", "rendering", "in_queue"] },
        timings: { queuedMs: 300, processingMs: 1200 },
      },
    });
    const progress: string[] = [];
    const { structured } = await h.call(
      "generate_video",
      { prompt: "odd statuses" },
      { onProgress: (update) => progress.push(String(update.message)) },
    );
    expect(structured?.["status"]).toBe("completed");
    expect(progress.join(" ")).toMatch(/pending|rendering|in_queue/);
  });

  it("an unknown video_id answered as 400", async () => {
    h = await startHarness({ sandbox: { shapes: { notFoundStatus: 400 } } });
    const { result, text } = await h.call("get_status", { video_id: "missing" });
    expect(result.isError).toBe(true);
    expect(text).toMatch(/^(validation_error|not_found): /);
  });

  it("an image answer that is a task to follow up", async () => {
    h = await startHarness({ sandbox: { shapes: { imageShape: "task" } } });
    const { result, structured } = await h.call("generate_image", { prompt: "later" });
    expect(result.isError).toBeFalsy();
    expect(structured?.["image_urls"]).toEqual([]);
    expect(structured?.["result"]).toMatchObject({ status: "processing" });
  });
});
