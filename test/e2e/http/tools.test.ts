/**
 * Every tool through the SDK's Streamable HTTP client against the built bin in `--http` mode, twice: with
 * its embedded sandbox (`--http --sandbox`, demo timings: a task takes 12 s) and against a separately started
 * sandbox with short timings. Plus what differs from stdio on purpose: local paths only from
 * GENERATION_ALLOWED_DIRS (never the caller's roots or the default folders), downloads only into
 * GENERATION_OUTPUT_DIR. Needs `npm run build`.
 */
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ListRootsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../../src/sandbox/index.js";
import type { SandboxHandle } from "../../../src/sandbox/types.js";
import { tinyPng } from "../../helpers/harness.js";
import { callTool, tempRoot } from "../../helpers/http-calls.js";
import { connectHttp, startHttpBin, type HttpServerProcess } from "../../helpers/http.js";

const IN_PROGRESS = ["queued", "processing"];
const PNG_SIGNATURE = Buffer.from("89504e470d0a1a0a", "hex");

/** One way of running the server, with what the suite needs to know about it. */
interface Target {
  server: HttpServerProcess;
  key: string;
  /** Where the service serves its media (uploads are fetched back from here). */
  origin: string;
  imagesDir: string;
  outputDir: string;
  /** Whether a task finishes inside a short wait (false with the embedded sandbox's demo timings). */
  quick: boolean;
  close(): Promise<void>;
}

/** The files and folders a server of the suite is given. */
async function prepareDirs(prefix: string) {
  const root = await tempRoot(prefix);
  const imagesDir = path.join(root.dir, "images");
  await mkdir(imagesDir);
  const env = {
    HOME: root.dir,
    GENERATION_STATE_DIR: path.join(root.dir, "state"),
    GENERATION_OUTPUT_DIR: path.join(root.dir, "out"),
    GENERATION_ALLOWED_DIRS: imagesDir,
  };
  return { root, imagesDir, outputDir: env.GENERATION_OUTPUT_DIR, env };
}

async function startEmbedded(): Promise<Target> {
  const { root, imagesDir, outputDir, env } = await prepareDirs("http-tools-embedded-");
  const server = await startHttpBin(["--sandbox"], { ...env, GENERATION_POLL_INTERVAL_MS: "500" });
  const origin = /built-in sandbox at (http:\/\/\S+)\/api\/v1/.exec(server.stderr())?.[1];
  if (origin === undefined) throw new Error(`no sandbox address on stderr:\n${server.stderr()}`);
  return {
    server,
    key: "sk-sandbox-paid",
    origin,
    imagesDir,
    outputDir,
    quick: false,
    async close() {
      await server.stop();
      await root.remove();
    },
  };
}

async function startAgainstSandbox(): Promise<Target> {
  const sandbox = await startSandbox({ timings: { queuedMs: 200, processingMs: 800 } });
  const { root, imagesDir, outputDir, env } = await prepareDirs("http-tools-remote-");
  const server = await startHttpBin([], {
    ...env,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_POLL_INTERVAL_MS: "200",
  });
  return {
    server,
    key: sandbox.keys.paid,
    origin: sandbox.origin,
    imagesDir,
    outputDir,
    quick: true,
    async close() {
      await server.stop();
      await sandbox.close();
      await root.remove();
    },
  };
}

async function fetchBytes(url: string): Promise<Buffer> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

/** The file exists inside `dir` and holds something. */
async function expectSavedInside(localPath: unknown, dir: string): Promise<void> {
  expect(typeof localPath).toBe("string");
  expect(path.dirname(String(localPath))).toBe(dir);
  expect((await stat(String(localPath))).size).toBeGreaterThan(0);
}

/** The suite over one target: its cases in order (they share a task started first). */
function describeToolsOver(label: string, start: () => Promise<Target>): void {
  describe(label, () => {
    let target: Target;
    let client: Client;
    /** A task started without waiting at the beginning, so that it is done by the time the suite waits for it. */
    let earlyTaskId: string;
    let uploadedUrl: string;

    beforeAll(async () => {
      target = await start();
      client = await connectHttp(target.server.url, target.key);
    });
    afterAll(async () => {
      await client?.close();
      await target?.close();
    });

    async function startFreshTask(): Promise<string> {
      const { structured } = await callTool(client, "generate_video", { prompt: "a windmill", wait: false });
      expect(structured["status"]).toBe("queued");
      return String(structured["video_id"]);
    }

    it.sequential(
      "generate_video with wait: false starts a task and answers at once with its id and status",
      async () => {
        const { result, structured } = await callTool(client, "generate_video", {
          prompt: "a lighthouse at dusk",
          duration: 2,
          wait: false,
        });
        expect(result.isError).toBeFalsy();
        expect(structured).toMatchObject({ video_id: expect.any(String), estimated_credits: 10 });
        expect(IN_PROGRESS).toContain(structured["status"]);
        expect(structured).not.toHaveProperty("video_url");
        expect(structured["reused"]).toBeFalsy();
        earlyTaskId = String(structured["video_id"]);
      },
    );

    it.sequential("get_credits reports the account, the early task already charged", async () => {
      const { result, structured } = await callTool(client, "get_credits");
      expect(result.isError).toBeFalsy();
      expect(structured).toMatchObject({ credits: 10_000 - 10, paid_access: true, plan: "pro" });
    });

    it.sequential("upload_image stores the bytes of data_base64 at the service", async () => {
      const bytes = tinyPng(6, 4);
      const { result, structured } = await callTool(client, "upload_image", {
        data_base64: bytes.toString("base64"),
        filename: "sketch.png",
      });
      expect(result.isError).toBeFalsy();
      uploadedUrl = String(structured["url"]);
      expect(uploadedUrl.startsWith(`${target.origin}/`)).toBe(true);
      expect(await fetchBytes(uploadedUrl)).toEqual(bytes);
    });

    it.sequential("upload_image reads a local path inside GENERATION_ALLOWED_DIRS", async () => {
      const bytes = tinyPng(5, 5);
      const file = path.join(target.imagesDir, "local.png");
      await writeFile(file, bytes);
      const { result, structured } = await callTool(client, "upload_image", { path: file });
      expect(result.isError).toBeFalsy();
      expect(await fetchBytes(String(structured["url"]))).toEqual(bytes);
    });

    it.sequential("generate_image returns the URL of a real image", async () => {
      const { result, structured } = await callTool(client, "generate_image", {
        prompt: "a red kite",
        images: [uploadedUrl],
      });
      expect(result.isError).toBeFalsy();
      const urls = structured["image_urls"] as string[];
      expect(urls).toHaveLength(1);
      expect(structured).toMatchObject({ estimated_credits: expect.any(Number), result: expect.any(Object) });
      expect((await fetchBytes(urls[0] ?? "")).subarray(0, 8)).toEqual(PNG_SIGNATURE);
    });

    it.sequential("get_status without waiting reports the early task as still running", async () => {
      const { result, structured } = await callTool(client, "get_status", { video_id: earlyTaskId });
      expect(result.isError).toBeFalsy();
      expect(structured["video_id"]).toBe(earlyTaskId);
      // The quick sandbox may already have finished it on a slow machine; the demo one cannot have.
      const possible = target.quick ? [...IN_PROGRESS, "completed"] : IN_PROGRESS;
      expect(possible).toContain(structured["status"]);
    });

    it.sequential("list_videos lists the early task", async () => {
      const { result, structured } = await callTool(client, "list_videos", { limit: 5 });
      expect(result.isError).toBeFalsy();
      expect(structured).toMatchObject({ page: 1, limit: 5, total: 1 });
      const items = structured["items"] as Array<Record<string, unknown>>;
      expect(items.map((item) => item["video_id"])).toEqual([earlyTaskId]);
    });

    it.sequential(
      "generate_video with wait: true waits for the task (or says how to keep waiting)",
      async () => {
        const { result, structured, text } = await callTool(client, "generate_video", {
          prompt: "a paper boat on a pond",
          image_url: uploadedUrl,
          duration: 2,
          download: target.quick,
          // The demo timings would take 12 s: one short window shows the "still processing" answer instead.
          ...(!target.quick && { timeout_seconds: 1 }),
        });
        expect(result.isError).toBeFalsy();
        expect(structured["video_id"]).toEqual(expect.any(String));
        expect(structured["video_id"]).not.toBe(earlyTaskId);
        if (target.quick) {
          expect(structured).toMatchObject({
            status: "completed",
            video_url: expect.stringMatching(/^http/),
          });
          await expectSavedInside(structured["local_path"], target.outputDir);
        } else {
          expect(IN_PROGRESS).toContain(structured["status"]);
          expect(text).toContain("get_status");
          expect(text).toContain(String(structured["video_id"]));
        }
      },
    );

    it.sequential(
      "get_status with wait: true follows a running task to completed and downloads it",
      async () => {
        // The quick sandbox has finished the early task by now: a fresh one shows that the call waits.
        const videoId = target.quick ? await startFreshTask() : earlyTaskId;
        const { result, structured } = await callTool(client, "get_status", {
          video_id: videoId,
          wait: true,
          download: true,
          timeout_seconds: 30,
        });
        expect(result.isError).toBeFalsy();
        expect(structured).toMatchObject({
          video_id: videoId,
          status: "completed",
          video_url: expect.stringMatching(/^http/),
        });
        await expectSavedInside(structured["local_path"], target.outputDir);
      },
      40_000,
    );
  });
}

// The two targets side by side: the embedded sandbox's demo timings keep its suite waiting most of the time.
describe.concurrent("every tool over Streamable HTTP", () => {
  describeToolsOver("--http --sandbox (the embedded sandbox)", startEmbedded);
  describeToolsOver("--http against a separately started sandbox", startAgainstSandbox);
});

describe("--http without GENERATION_ALLOWED_DIRS and GENERATION_OUTPUT_DIR", () => {
  let sandbox: SandboxHandle;
  let root: Awaited<ReturnType<typeof tempRoot>>;
  let server: HttpServerProcess;
  let client: Client;
  /** In the caller-side default folder of stdio (~/Pictures), and offered as the client's root too. */
  let picture: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ timings: { queuedMs: 0, processingMs: 0 } });
    root = await tempRoot("http-tools-bare-");
    const pictures = path.join(root.dir, "Pictures");
    await mkdir(pictures);
    picture = path.join(pictures, "holiday.png");
    await writeFile(picture, tinyPng());
    server = await startHttpBin([], {
      HOME: root.dir,
      GENERATION_STATE_DIR: path.join(root.dir, "state"),
      GENERATION_BASE_URL: sandbox.baseUrl,
    });
    // A client that offers the picture's folder as a root: a remote caller's roots must not count. (Each
    // request meets a fresh server that never saw this client's initialize, so it could not ask for them
    // anyway; the runtime ignores them over HTTP besides.)
    client = new Client({ name: "http-roots", version: "1" }, { capabilities: { roots: {} } });
    client.setRequestHandler(ListRootsRequestSchema, () => ({
      roots: [{ uri: pathToFileURL(pictures).href }],
    }));
    await client.connect(
      new StreamableHTTPClientTransport(new URL(server.url), {
        requestInit: { headers: { authorization: `Bearer ${sandbox.keys.paid}` } },
      }),
    );
  });
  afterAll(async () => {
    await client?.close();
    await server?.stop();
    await sandbox?.close();
    await root?.remove();
  });

  it("refuses a local path, whatever the default folders and the caller's roots", async () => {
    sandbox.clearRequests();
    const upload = await callTool(client, "upload_image", { path: picture });
    const video = await callTool(client, "generate_video", { prompt: "x", image_path: picture, wait: false });
    for (const refused of [upload, video]) {
      expect(refused.result.isError).toBe(true);
      expect(refused.text).toMatch(/^validation_error: /);
      expect(refused.text).toContain("no folder is allowed");
    }
    expect(sandbox.requests).toEqual([]);
  });

  it("refuses download: true before starting anything, and still serves the same call without it", async () => {
    const started = await callTool(client, "generate_video", { prompt: "a quiet street", wait: false });
    expect(started.result.isError).toBeFalsy();
    const videoId = String(started.structured["video_id"]);
    sandbox.clearRequests();

    const refusals = [
      await callTool(client, "generate_video", { prompt: "a busy street", download: true }),
      await callTool(client, "generate_image", { prompt: "a bus", download: true }),
      await callTool(client, "get_status", { video_id: videoId, download: true }),
    ];
    for (const refused of refusals) {
      expect(refused.result.isError).toBe(true);
      expect(refused.text).toMatch(/^validation_error: download: /);
      expect(refused.text).toContain("GENERATION_OUTPUT_DIR");
    }
    expect(sandbox.requests).toEqual([]);

    const status = await callTool(client, "get_status", { video_id: videoId });
    expect(status.structured).toMatchObject({ video_id: videoId, status: "completed" });
    expect(await readFile(picture)).toEqual(tinyPng());
  });
});
