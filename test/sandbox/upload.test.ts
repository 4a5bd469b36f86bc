import { request } from "node:http";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { MAX_UPLOAD_BYTES } from "../../src/models.js";
import { expectError, expectOk, multipart, tinyPng, useSandbox } from "./support.js";

const JPEG_HEAD = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46]);
const WEBP_HEAD = Buffer.concat([Buffer.from("RIFF"), Buffer.from([0x1a, 0, 0, 0]), Buffer.from("WEBPVP8L")]);

function fileOf(head: Buffer, size: number): Buffer {
  const bytes = Buffer.alloc(size, 0x42);
  head.copy(bytes);
  return bytes;
}

describe("POST /upload", () => {
  it("accepts PNG, JPEG and WebP by their bytes and serves them back with the right type", async () => {
    const { api, sandbox } = await useSandbox();
    const cases: [Buffer, string, string, string][] = [
      [tinyPng(), "photo.png", "image/png", "png"],
      [fileOf(JPEG_HEAD, 500), "photo.jpg", "image/jpeg", "jpg"],
      [fileOf(WEBP_HEAD, 34), "photo.webp", "image/webp", "webp"],
      // The name and the declared type are ignored: the bytes decide.
      [fileOf(JPEG_HEAD, 64), "misnamed.png", "image/jpeg", "jpg"],
      [tinyPng(), "no-extension", "image/png", "png"],
    ];
    for (const [bytes, name, type, extension] of cases) {
      const answer = await api("/upload", { body: multipart("image", name, bytes, "text/plain") });
      expectOk(answer);
      expect(answer.data).toEqual({
        url: expect.stringMatching(new RegExp(`^${sandbox.origin}/media/uploads/upl_\\d+\\.${extension}$`)),
        content_type: type,
        size: bytes.length,
      });
      const served = await fetch(answer.data.url);
      expect(served.status).toBe(200);
      expect(served.headers.get("content-type")).toBe(type);
      expect(Buffer.from(await served.arrayBuffer()).equals(bytes)).toBe(true);
    }
  });

  it("refuses files that are not JPG, PNG or WebP whatever their name", async () => {
    const { api } = await useSandbox();
    const fakes = [
      Buffer.from("GIF89a........"),
      Buffer.from("%PDF-1.7"),
      Buffer.from("not an image at all"),
      Buffer.from([0x89, 0x50, 0x4e, 0x47]), // a truncated PNG signature
      Buffer.concat([Buffer.from("RIFF"), Buffer.alloc(4), Buffer.from("AVI ")]),
    ];
    for (const bytes of fakes) {
      const answer = await api("/upload", { body: multipart("image", "cat.png", bytes, "image/png") });
      expect(expectError(answer, 400, "validation_error").message).toMatch(
        /^image: file is not a JPG, PNG or WebP/,
      );
    }
  });

  it("refuses an empty file, a missing file, a file in another field, and two files", async () => {
    const { api } = await useSandbox();
    expect(
      expectError(
        await api("/upload", { body: multipart("image", "e.png", new Uint8Array()) }),
        400,
        "validation_error",
      ).message,
    ).toMatch(/^image: file is empty/);
    const fieldOnly = new FormData();
    fieldOnly.append("note", "hello");
    expect(expectError(await api("/upload", { body: fieldOnly }), 400, "validation_error").message).toMatch(
      /^image: required/,
    );
    expect(
      expectError(
        await api("/upload", { body: multipart("file", "a.png", tinyPng()) }),
        400,
        "validation_error",
      ).message,
    ).toMatch(/^image: send the file in multipart field "image"/);
    const two = multipart("image", "a.png", tinyPng());
    two.append("image", new Blob([tinyPng()]), "b.png");
    expect(expectError(await api("/upload", { body: two }), 400, "validation_error").message).toMatch(
      /^image: send exactly one file/,
    );
  });

  it("refuses a body that is not multipart/form-data, or is broken multipart", async () => {
    const { api } = await useSandbox();
    expect(
      expectError(
        await api("/upload", { body: tinyPng(), headers: { "Content-Type": "image/png" } }),
        400,
        "validation_error",
      ).message,
    ).toMatch(/^Content-Type:/);
    expect(expectError(await api("/upload", { method: "POST" }), 400, "validation_error").message).toMatch(
      /^Content-Type:/,
    );
    const broken = await api("/upload", {
      body: '--xyz\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\n\r\n\u0089PNG',
      headers: { "Content-Type": "multipart/form-data; boundary=xyz" },
    });
    expectError(broken, 400, "validation_error");
  });

  it(`accepts exactly ${MAX_UPLOAD_BYTES} bytes and refuses one byte more`, async () => {
    const { api } = await useSandbox();
    const atLimit = await api("/upload", {
      body: multipart("image", "big.png", fileOf(tinyPng(), MAX_UPLOAD_BYTES)),
    });
    expectOk(atLimit);
    expect(atLimit.data.size).toBe(10_485_760);
    const over = await api("/upload", {
      body: multipart("image", "big.png", fileOf(tinyPng(), MAX_UPLOAD_BYTES + 1)),
    });
    expect(expectError(over, 400, "validation_error").message).toMatch(
      /^image: file is larger than the 10485760-byte limit/,
    );
    expect(over.headers.get("connection")).toBe("close");
    // The sandbox keeps serving after cutting a connection.
    expectOk(await api("/credits"));
  });

  it("names the URL field as the shape says", async () => {
    const { api, sandbox } = await useSandbox({ shapes: { uploadUrlField: "image_url" } });
    const answer = await api("/upload", { body: multipart("image", "a.png", tinyPng()) });
    expect(answer.data).toHaveProperty("image_url");
    expect(answer.data).not.toHaveProperty("url");
    sandbox.shapes.uploadUrlField = "file_url";
    expect((await api("/upload", { body: multipart("image", "a.png", tinyPng()) })).data).toHaveProperty(
      "file_url",
    );
  });

  it("needs no paid access", async () => {
    const { api, sandbox } = await useSandbox();
    expectOk(await api("/upload", { key: sandbox.keys.free, body: multipart("image", "a.png", tinyPng()) }));
  });

  it("cuts off a 200 MB stream early and never holds it in memory", async () => {
    const { sandbox } = await useSandbox();
    const total = 200 * 1024 * 1024;
    const boundary = "----sandbox-test-boundary";
    const block = Buffer.alloc(64 * 1024, 0x42);
    tinyPng().copy(block);
    let sent = 0;
    let stopped = false;
    async function* body(): AsyncGenerator<Buffer> {
      yield Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="huge.png"\r\nContent-Type: image/png\r\n\r\n`,
      );
      while (sent < total && !stopped) {
        sent += block.length;
        yield block;
      }
      yield Buffer.from(`\r\n--${boundary}--\r\n`);
    }

    // This thread's own memory (its heap, and the buffers outside it): tests run as worker threads of one
    // process, whose resident size other files move too.
    const held = () => {
      const { heapUsed, external } = process.memoryUsage();
      return heapUsed + external;
    };
    global.gc?.();
    const baseline = held();
    let peak = baseline;
    const sampler = setInterval(() => {
      peak = Math.max(peak, held());
    }, 5);
    const url = new URL(`${sandbox.baseUrl}/upload`);
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(url, {
        method: "POST",
        headers: {
          Authorization: `Bearer ${sandbox.keys.paid}`,
          "Content-Type": `multipart/form-data; boundary=${boundary}`,
          "Transfer-Encoding": "chunked",
        },
      });
      req.on("response", (res) => {
        stopped = true;
        res.resume();
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.on("error", (error) => {
        if (!stopped) reject(error);
      });
      Readable.from(body())
        .on("error", () => undefined)
        .pipe(req);
    });
    clearInterval(sampler);
    peak = Math.max(peak, held());

    expect(status).toBe(400);
    expect(sent).toBeLessThan(total / 4);
    expect(peak - baseline).toBeLessThan(100 * 1024 * 1024);
    const record = sandbox.requests.find((r) => r.route === "upload");
    expect(record?.status).toBe(400);
  });
});
