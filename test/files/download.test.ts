import { createHash } from "node:crypto";
import { mkdir, readFile, readdir, symlink, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { IncomingHttpHeaders, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { AbortedError, GenerationError, NetworkError, TimeoutError } from "../../src/api/errors.js";
import { downloadMedia, sanitizeBaseName } from "../../src/files/download.js";
import type { DownloadMediaOptions } from "../../src/files/download.js";
import { PNG_BYTES, isoMedia, makeTempDir } from "./fixtures.js";

const MP4_BYTES = Buffer.concat([isoMedia("isom"), Buffer.alloc(500, 7)]);
// Same size and type as MP4_BYTES, different content: only the hash tells them apart.
const OTHER_MP4_BYTES = Buffer.concat([isoMedia("isom"), Buffer.alloc(500, 8)]);
const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

let server: Server;
let origin: string;
const seenHeaders: IncomingHttpHeaders[] = [];
let onHang: ((response: ServerResponse) => void) | undefined;
const RACERS = 6;
const heldResponses: ServerResponse[] = [];

function send(
  response: ServerResponse,
  status: number,
  body: Buffer | string,
  headers: Record<string, string> = {},
) {
  response.writeHead(status, { "content-length": String(Buffer.byteLength(body)), ...headers });
  response.end(body);
}

beforeAll(async () => {
  server = createServer((request, response) => {
    seenHeaders.push(request.headers);
    const url = new URL(request.url ?? "/", "http://localhost");
    const loop = /^\/loop\/(\d+)$/.exec(url.pathname);
    if (loop) {
      const hop = Number(loop[1]);
      if (hop >= 3) return send(response, 200, MP4_BYTES, { "content-type": "video/mp4" });
      response.writeHead(302, { location: `/loop/${hop + 1}` }).end();
      return;
    }
    switch (url.pathname) {
      case "/video":
        return send(response, 200, MP4_BYTES, { "content-type": "video/mp4" });
      case "/held-video":
        // Answered all together once RACERS requests wait, so that their saves overlap.
        heldResponses.push(response);
        if (heldResponses.length === RACERS) {
          for (const held of heldResponses.splice(0))
            send(held, 200, MP4_BYTES, { "content-type": "video/mp4" });
        }
        return;
      case "/other-video":
        return send(response, 200, OTHER_MP4_BYTES, { "content-type": "video/mp4" });
      case "/image":
        return send(response, 200, PNG_BYTES, { "content-type": "image/png" });
      case "/named.mp4":
        return send(response, 200, MP4_BYTES, {
          "content-type": "video/mp4",
          "content-disposition": 'attachment; filename="../../evil.sh"',
        });
      case "/html":
        return send(response, 200, "<html>not media</html>", { "content-type": "text/html" });
      case "/redirect":
        response.writeHead(302, { location: "/video" }).end();
        return;
      case "/to-file":
        response.writeHead(302, { location: "file:///etc/passwd" }).end();
        return;
      case "/forever":
        response.writeHead(301, { location: "/forever" }).end();
        return;
      case "/declared-big":
        response.writeHead(200, { "content-length": "5000" });
        response.end(Buffer.alloc(5000));
        return;
      case "/chunked-big": {
        response.writeHead(200, { "content-type": "video/mp4" });
        response.write(MP4_BYTES);
        const timer = setInterval(() => response.write(Buffer.alloc(400, 1)), 5);
        response.on("close", () => clearInterval(timer));
        return;
      }
      case "/hang":
        response.writeHead(200, { "content-type": "video/mp4" });
        response.write(MP4_BYTES);
        onHang?.(response);
        return;
      case "/empty":
        return send(response, 200, "");
      default:
        return send(response, 404, "not found");
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe("downloadMedia", () => {
  let dir: string;
  let cleanup: () => Promise<void>;

  beforeEach(async () => {
    ({ dir, cleanup } = await makeTempDir("download-"));
    dir = path.join(dir, "out");
    seenHeaders.length = 0;
    onHang = undefined;
  });
  afterEach(() => cleanup());

  const download = (overrides: Partial<DownloadMediaOptions> & { url: string }) =>
    downloadMedia({
      dir,
      baseName: "task_123",
      maxBytes: 1_000_000,
      allowHosts: ["127.0.0.1"],
      ...overrides,
    });

  async function failure(promise: Promise<unknown>): Promise<Error> {
    const error = await promise.then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(Error);
    return error as Error;
  }

  it("saves the media under the caller's name with an extension from the bytes", async () => {
    const result = await download({ url: `${origin}/video`, expected: "video" });
    expect(result).toEqual({
      path: path.join(dir, "task_123.mp4"),
      bytes: MP4_BYTES.length,
      sha256: sha256(MP4_BYTES),
      reused: false,
      contentType: "video/mp4",
    });
    expect((await readFile(result.path)).equals(MP4_BYTES)).toBe(true);
    expect(await readdir(dir)).toEqual(["task_123.mp4"]);
  });

  it("names an image by its content", async () => {
    const result = await download({ url: `${origin}/image`, expected: "video" });
    expect(path.basename(result.path)).toBe("task_123.png");
  });

  it("never sends credentials, even when the URL carries some", async () => {
    const withUser = origin.replace("http://", "http://user:secret@");
    await download({ url: `${withUser}/video` });
    expect(seenHeaders).toHaveLength(1);
    expect(seenHeaders[0]?.authorization).toBeUndefined();
    expect(seenHeaders[0]?.cookie).toBeUndefined();
  });

  it("takes the name from baseName, not from the URL or Content-Disposition", async () => {
    const result = await download({ url: `${origin}/named.mp4`, baseName: "../vid eo:1" });
    expect(path.basename(result.path)).toBe("_vid_eo_1.mp4");
    expect(path.dirname(result.path)).toBe(dir);
  });

  it("falls back to the expected kind's extension for unknown bytes", async () => {
    expect(path.basename((await download({ url: `${origin}/html`, expected: "video" })).path)).toBe(
      "task_123.mp4",
    );
    expect(path.basename((await download({ url: `${origin}/html`, expected: "image" })).path)).toBe(
      "task_123.png",
    );
  });

  it("follows a redirect and up to three in a row", async () => {
    expect((await download({ url: `${origin}/redirect` })).bytes).toBe(MP4_BYTES.length);
    expect((await download({ url: `${origin}/loop/0` })).bytes).toBe(MP4_BYTES.length);
    expect(seenHeaders.every((headers) => headers.authorization === undefined)).toBe(true);
  });

  it("refuses more than three redirects", async () => {
    const error = await failure(download({ url: `${origin}/forever` }));
    expect(error).toBeInstanceOf(GenerationError);
    expect(error.message).toMatch(/redirected more than 3 times/);
    expect(seenHeaders).toHaveLength(4);
  });

  it("refuses a redirect to file:// and non-http addresses", async () => {
    const error = await failure(download({ url: `${origin}/to-file` }));
    expect(error.message).toMatch(/file: address; only http and https/);
    expect((await failure(download({ url: "file:///etc/passwd" }))).message).toMatch(/file: address/);
    expect((await failure(download({ url: "not a url" }))).message).toMatch(/not a valid URL/);
    expect(seenHeaders).toHaveLength(1);
  });

  it("refuses a declared Content-Length over the cap before reading", async () => {
    const error = await failure(download({ url: `${origin}/declared-big`, maxBytes: 1000 }));
    expect(error).toBeInstanceOf(GenerationError);
    expect((error as GenerationError).code).toBe("internal_error");
    expect(error.message).toMatch(/larger than the 1000-byte download limit/);
    expect(await readdir(dir).catch(() => [])).toEqual([]);
  });

  it("stops a chunked body that grows past the cap and leaves no file", async () => {
    const error = await failure(download({ url: `${origin}/chunked-big`, maxBytes: 5000 }));
    expect(error.message).toMatch(/larger than the 5000-byte download limit/);
    expect(await readdir(dir)).toEqual([]);
  });

  it("never overwrites an existing file", async () => {
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, "task_123.mp4"), "precious");
    const first = await download({ url: `${origin}/video` });
    const second = await download({ url: `${origin}/other-video` });
    expect(path.basename(first.path)).toBe("task_123-1.mp4");
    expect(path.basename(second.path)).toBe("task_123-2.mp4");
    expect(await readFile(path.join(dir, "task_123.mp4"), "utf8")).toBe("precious");
    expect((await readFile(first.path)).equals(MP4_BYTES)).toBe(true);
    expect((await readFile(second.path)).equals(OTHER_MP4_BYTES)).toBe(true);
    expect((await readdir(dir)).sort()).toEqual(["task_123-1.mp4", "task_123-2.mp4", "task_123.mp4"]);
  });

  describe("saving the same media again", () => {
    it("returns the earlier file and writes no new one", async () => {
      const first = await download({ url: `${origin}/video` });
      const second = await download({ url: `${origin}/video` });
      expect(first.reused).toBe(false);
      expect(second).toEqual({ ...first, reused: true });
      expect(await readdir(dir)).toEqual(["task_123.mp4"]);
    });

    it("saves different bytes of the same size under the next number", async () => {
      const first = await download({ url: `${origin}/video` });
      const second = await download({ url: `${origin}/other-video` });
      expect(path.basename(second.path)).toBe("task_123-1.mp4");
      expect(second.reused).toBe(false);
      expect((await readFile(first.path)).equals(MP4_BYTES)).toBe(true);
      expect((await readFile(second.path)).equals(OTHER_MP4_BYTES)).toBe(true);
      // Each of them is now found again by content, whichever name it has.
      expect((await download({ url: `${origin}/other-video` })).path).toBe(second.path);
      expect((await download({ url: `${origin}/video` })).path).toBe(first.path);
      expect((await readdir(dir)).sort()).toEqual(["task_123-1.mp4", "task_123.mp4"]);
    });

    it("finds an identical copy after a gap in the numbers", async () => {
      await mkdir(dir, { recursive: true });
      await writeFile(path.join(dir, "task_123.mp4"), OTHER_MP4_BYTES);
      await writeFile(path.join(dir, "task_123-2.mp4"), MP4_BYTES);
      const result = await download({ url: `${origin}/video` });
      expect(result).toMatchObject({ path: path.join(dir, "task_123-2.mp4"), reused: true });
      expect((await readdir(dir)).sort()).toEqual(["task_123-2.mp4", "task_123.mp4"]);
    });

    it("does not take a symlink to identical bytes for a saved copy", async () => {
      const outside = path.join(path.dirname(dir), "elsewhere.mp4");
      await writeFile(outside, MP4_BYTES);
      await mkdir(dir, { recursive: true });
      await symlink(outside, path.join(dir, "task_123.mp4"));
      const result = await download({ url: `${origin}/video` });
      expect(result).toMatchObject({ path: path.join(dir, "task_123-1.mp4"), reused: false });
    });

    it("leaves one file when several downloads of the same media race", async () => {
      const results = await Promise.all(
        Array.from({ length: RACERS }, () => download({ url: `${origin}/held-video` })),
      );
      expect(new Set(results.map((result) => result.path))).toEqual(
        new Set([path.join(dir, "task_123.mp4")]),
      );
      expect(results.filter((result) => !result.reused)).toHaveLength(1);
      expect(await readdir(dir)).toEqual(["task_123.mp4"]);
    });
  });

  it("aborts on the caller's signal and leaves no partial file", async () => {
    const controller = new AbortController();
    let partialSeen: string[] = [];
    onHang = () =>
      setTimeout(() => {
        void readdir(dir).then((names) => {
          partialSeen = names;
          controller.abort();
        });
      }, 50);
    const error = await failure(download({ url: `${origin}/hang`, signal: controller.signal }));
    expect(error).toBeInstanceOf(AbortedError);
    expect(partialSeen).toEqual([expect.stringMatching(/^\.task_123\.[0-9a-f]+\.part$/)]);
    expect(await readdir(dir)).toEqual([]);
  });

  it("refuses to start with an already aborted signal", async () => {
    const error = await failure(download({ url: `${origin}/video`, signal: AbortSignal.abort() }));
    expect(error).toBeInstanceOf(AbortedError);
    expect(seenHeaders).toHaveLength(0);
  });

  it("times out and leaves no partial file", async () => {
    const error = await failure(download({ url: `${origin}/hang`, timeoutMs: 200 }));
    expect(error).toBeInstanceOf(TimeoutError);
    expect(await readdir(dir)).toEqual([]);
  });

  it("copes with out-of-range timeouts instead of firing at once", async () => {
    expect((await download({ url: `${origin}/video`, timeoutMs: 2 ** 40 })).bytes).toBe(MP4_BYTES.length);
    expect((await download({ url: `${origin}/video`, timeoutMs: Number.NaN })).bytes).toBe(MP4_BYTES.length);
    expect((await download({ url: `${origin}/video`, timeoutMs: 1500.5 })).bytes).toBe(MP4_BYTES.length);
  });

  it("maps a 404 to an error carrying the status", async () => {
    const error = await failure(download({ url: `${origin}/missing` }));
    expect(error).toBeInstanceOf(GenerationError);
    expect((error as GenerationError).status).toBe(404);
    expect(error.message).toMatch(/HTTP 404; nothing was saved/);
    expect(await readdir(dir).catch(() => [])).toEqual([]);
  });

  it("refuses an empty body", async () => {
    expect((await failure(download({ url: `${origin}/empty` }))).message).toMatch(/no data/);
    expect(await readdir(dir)).toEqual([]);
  });

  it("reports an unreachable host as a network error", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const error = await failure(download({ url: `http://127.0.0.1:${port}/video` }));
    expect(error).toBeInstanceOf(NetworkError);
  });

  it("keeps signed query strings out of error messages", async () => {
    const error = await failure(download({ url: `${origin}/missing?signature=SECRET` }));
    expect(error.message).not.toContain("SECRET");
  });
});

describe("sanitizeBaseName", () => {
  it("keeps safe characters, collapses the rest and trims dots", () => {
    expect(sanitizeBaseName("abc-DEF_1.2")).toBe("abc-DEF_1.2");
    expect(sanitizeBaseName("a b//c")).toBe("a_b_c");
    expect(sanitizeBaseName("...hidden")).toBe("hidden");
    expect(sanitizeBaseName("..")).toBe("media");
    expect(sanitizeBaseName("")).toBe("media");
    expect(sanitizeBaseName("x".repeat(300))).toHaveLength(100);
    expect(sanitizeBaseName("视频")).toBe("_");
  });
});
