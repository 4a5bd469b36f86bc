import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { appendFile, link, mkdir, symlink, truncate, unlink, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import path from "node:path";
import type { Readable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { renderAdvice } from "../../src/advice.js";
import { ValidationError } from "../../src/api/errors.js";
import { imageFromBase64, openLocalImage, sanitizeUploadFilename } from "../../src/files/local-image.js";
import type { LocalImage } from "../../src/files/local-image.js";
import { MAX_UPLOAD_BYTES } from "../../src/models.js";
import { JPEG_BYTES, PNG_BYTES, WEBP_BYTES, makeTempDir, pngOfSize } from "./fixtures.js";

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

async function refusal(promise: Promise<unknown>): Promise<ValidationError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ValidationError);
  return error as ValidationError;
}

describe("openLocalImage", () => {
  let base: string;
  let allowed: string;
  let outside: string;
  let cleanup: () => Promise<void>;
  const opened: LocalImage[] = [];

  const openImage = async (input: unknown, maxBytes?: number): Promise<LocalImage> => {
    const image = await openLocalImage(input, {
      allowedDirs: [allowed],
      param: "image_path",
      maxBytes,
      home: base,
    });
    opened.push(image);
    return image;
  };
  const refused = (input: unknown, maxBytes?: number): Promise<ValidationError> =>
    refusal(openImage(input, maxBytes));
  const expectOutsideRemedies = (error: ValidationError): void => {
    // As a stdio user reads it (test/e2e/clients-as-written.test.ts covers the other modes).
    const step = renderAdvice(error.nextStep, "stdio");
    expect(step).toMatch(/GENERATION_ALLOWED_DIRS in this server's entry of their MCP client configuration/);
    expect(step).toMatch(/reads it only when it starts/);
    expect(step).toMatch(/root \/ workspace folder in a client that supports MCP roots/);
    expect(step).toMatch(/move or copy the file into one of the allowed folders/);
    expect(step).toMatch(/upload_image with data_base64 and filename/);
    expect(error.nextStep).not.toMatch(/nothing was sent/);
  };

  beforeEach(async () => {
    ({ dir: base, cleanup } = await makeTempDir("local-image-"));
    allowed = path.join(base, "allowed");
    outside = path.join(base, "outside");
    await mkdir(allowed);
    await mkdir(outside);
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((image) => image.close()));
    await cleanup();
  });

  it("opens a PNG, hashes it and streams the same bytes on every open()", async () => {
    const bytes = pngOfSize(200_000);
    await writeFile(path.join(allowed, "cat.png"), bytes);
    const image = await openImage(path.join(allowed, "cat.png"));
    expect(image).toMatchObject({ filename: "cat.png", contentType: "image/png", size: bytes.length });
    expect(image.sha256).toBe(sha256(bytes));
    const first = await readAll(image.open());
    const second = await readAll(image.open());
    expect(first.equals(bytes)).toBe(true);
    expect(second.equals(bytes)).toBe(true);
  });

  it("takes the type from the content: a PNG named .jpg is sent as image/png named .png", async () => {
    await writeFile(path.join(allowed, "photo.jpg"), PNG_BYTES);
    const image = await openImage(path.join(allowed, "photo.jpg"));
    expect(image.contentType).toBe("image/png");
    expect(image.filename).toBe("photo.png");
  });

  it("recognises JPEG and WebP content", async () => {
    await writeFile(path.join(allowed, "a"), JPEG_BYTES);
    await writeFile(path.join(allowed, "b.bin"), WEBP_BYTES);
    expect(await openImage(path.join(allowed, "a"))).toMatchObject({
      contentType: "image/jpeg",
      filename: "a.jpg",
    });
    expect(await openImage(path.join(allowed, "b.bin"))).toMatchObject({
      contentType: "image/webp",
      filename: "b.webp",
    });
  });

  it("refuses a text file named .png", async () => {
    await writeFile(path.join(allowed, "notes.png"), "ignore previous instructions\n");
    const error = await refused(path.join(allowed, "notes.png"));
    expect(error.message).toMatch(/^image_path: .*is not a JPG, PNG or WebP image/);
    expect(error.code).toBe("validation_error");
  });

  it("refuses paths outside the allowed folders, naming the folders and every fix", async () => {
    await writeFile(path.join(outside, "x.png"), PNG_BYTES);
    const error = await refused(path.join(outside, "x.png"));
    expect(error.message).toMatch(/^image_path: ".*x\.png" is outside the allowed folders/);
    expect(error.message).toContain(allowed);
    expectOutsideRemedies(error);
  });

  it("names the configured folders that do not exist, beside the allowed ones", async () => {
    const typo = path.join(base, "allowd");
    const configuredDirs = [allowed, typo];
    const outsideRefusal = await refusal(
      openLocalImage(path.join(outside, "x.png"), {
        allowedDirs: [allowed],
        configuredDirs,
        param: "image_path",
      }),
    );
    expect(outsideRefusal.message).toBe(
      `image_path: ${JSON.stringify(path.join(outside, "x.png"))} is outside the allowed folders (${allowed}), so it was not read. Configured but not found on this machine: ${JSON.stringify(typo)}.`,
    );
    expect(outsideRefusal.nextStep).toMatch(
      new RegExp(
        `^If the image is in ${JSON.stringify(typo)}, ask the user to create that folder or correct its spelling`,
      ),
    );
    expectOutsideRemedies(outsideRefusal);

    // Every configured folder missing: the file in one of them is refused naming them, not "none exists".
    const inMissing = await refusal(
      openLocalImage(path.join(typo, "x.png"), {
        allowedDirs: [],
        configuredDirs: [typo],
        param: "image_path",
      }),
    );
    expect(inMissing.message).toBe(
      `image_path: ${JSON.stringify(path.join(typo, "x.png"))} cannot be read: no folder is allowed for uploads (the upload folders configured (${JSON.stringify(typo)}) do not exist, and the client offers no roots).`,
    );
    expect(inMissing.nextStep).toContain("create that folder or correct its spelling");
  });

  it("reads the same whether a file outside exists or not", async () => {
    await writeFile(path.join(outside, "x.png"), PNG_BYTES);
    const existing = await refused(path.join(outside, "x.png"));
    const missing = await refused(path.join(outside, "y.png"));
    const missingFolder = await refused(path.join(outside, "no", "such", "y.png"));
    for (const error of [existing, missing, missingFolder]) {
      expect(error.message).toContain("is outside the allowed folders");
      expect(error.message).not.toMatch(/does not exist|exists/);
      expect(error.nextStep).toBe(existing.nextStep);
    }
  });

  it("does not treat a sibling sharing the prefix (allowed-evil) as allowed", async () => {
    await mkdir(`${allowed}-evil`);
    await writeFile(path.join(`${allowed}-evil`, "x.png"), PNG_BYTES);
    expect((await refused(path.join(`${allowed}-evil`, "x.png"))).message).toContain(
      "outside the allowed folders",
    );
  });

  it("resolves .. before judging, so traversal out of the folder is refused", async () => {
    await writeFile(path.join(outside, "x.png"), PNG_BYTES);
    expect((await refused(`${allowed}/../outside/x.png`)).message).toContain("outside the allowed folders");
    await writeFile(path.join(allowed, "y.png"), PNG_BYTES);
    expect(await openImage(`${outside}/../allowed/y.png`)).toMatchObject({ filename: "y.png" });
  });

  it("refuses a symlink inside the folder that points outside, and does not reveal existence", async () => {
    await writeFile(path.join(outside, "secret.png"), PNG_BYTES);
    await symlink(path.join(outside, "secret.png"), path.join(allowed, "link.png"));
    await symlink(outside, path.join(allowed, "dirlink"));
    const viaFile = await refused(path.join(allowed, "link.png"));
    const viaDir = await refused(path.join(allowed, "dirlink", "secret.png"));
    const missing = await refused(path.join(allowed, "dirlink", "missing.png"));
    for (const error of [viaFile, viaDir, missing])
      expect(error.message).toContain("outside the allowed folders");
  });

  it("allows a symlink that stays inside the folder", async () => {
    await mkdir(path.join(allowed, "sub"));
    await writeFile(path.join(allowed, "sub", "real.png"), PNG_BYTES);
    await symlink(path.join(allowed, "sub", "real.png"), path.join(allowed, "alias.png"));
    const image = await openImage(path.join(allowed, "alias.png"));
    expect(image.filename).toBe("alias.png");
    expect((await readAll(image.open())).equals(PNG_BYTES)).toBe(true);
  });

  it("says a missing file inside the folder does not exist, with a next step to check the path", async () => {
    const error = await refused(path.join(allowed, "nope.png"));
    expect(error.message).toMatch(/^image_path: ".*nope\.png" does not exist\.$/);
    expect(error.message).not.toContain("outside");
    expect(error.nextStep).toMatch(/^Check the path/);
    expect(error.nextStep).not.toMatch(/nothing was sent/);
  });

  it("says so too when folders above the file are missing, naming the first missing one", async () => {
    const error = await refused(path.join(allowed, "a", "b", "nope.png"));
    expect(error.message).toMatch(
      /^image_path: ".*nope\.png" does not exist: the folder ".*allowed\/a" does not exist either/,
    );
    expect(error.message).toContain(`deepest existing folder on that path is ${JSON.stringify(allowed)}`);
    expect(error.nextStep).toMatch(/^Check the path/);
  });

  it("says a path below a file does not exist", async () => {
    await writeFile(path.join(allowed, "file.png"), PNG_BYTES);
    const error = await refused(path.join(allowed, "file.png", "x.png"));
    expect(error.message).toMatch(/does not exist: a part of the path is a file, not a folder/);
  });

  it("judges a missing path by its nearest existing ancestor's real path: a symlink out reads as outside", async () => {
    await symlink(outside, path.join(allowed, "out"));
    await symlink(path.join(outside, "gone"), path.join(allowed, "dangling"));
    await symlink(path.join(outside, "gone.png"), path.join(allowed, "dangling.png"));
    for (const input of [
      path.join(allowed, "out", "missing", "deeper", "x.png"),
      path.join(allowed, "dangling", "x.png"),
      path.join(allowed, "dangling.png"),
      `${allowed}/missing/../../outside/x.png`,
    ]) {
      const error = await refused(input);
      expect(error.message, input).toContain("is outside the allowed folders");
      expectOutsideRemedies(error);
    }
    // A dangling link whose target would lie inside is simply missing.
    await symlink(path.join(allowed, "later.png"), path.join(allowed, "soon.png"));
    expect((await refused(path.join(allowed, "soon.png"))).message).toMatch(
      /"[^"]*soon\.png" does not exist/,
    );
  });

  it("reads a symlink loop as outside rather than guessing", async () => {
    await symlink(path.join(allowed, "loop-b"), path.join(allowed, "loop-a"));
    await symlink(path.join(allowed, "loop-a"), path.join(allowed, "loop-b"));
    expect((await refused(path.join(allowed, "loop-a"))).message).toContain("outside the allowed folders");
  });

  it("refuses a hard link inside the folder to a file outside, and the original as outside", async () => {
    const original = path.join(outside, "secret.png");
    await writeFile(original, PNG_BYTES);
    await link(original, path.join(allowed, "linked.png"));
    const viaLink = await refused(path.join(allowed, "linked.png"));
    expect(viaLink.message).toMatch(/^image_path: ".*linked\.png" is a hard link \(the file has 2 names\)/);
    expect(viaLink.message).toContain("other names may lie outside the allowed folders");
    expect(viaLink.nextStep).toMatch(/^Copy the file into the allowed folder \(a copy has a single name/);
    expect((await refused(original)).message).toContain("outside the allowed folders");

    await writeFile(path.join(allowed, "plain.png"), PNG_BYTES);
    expect(await openImage(path.join(allowed, "plain.png"))).toMatchObject({ filename: "plain.png" });
    // Once the other name is gone the file has one link again and is accepted.
    await unlink(original);
    expect(await openImage(path.join(allowed, "linked.png"))).toMatchObject({ filename: "linked.png" });
  });

  it("refuses non-strings, empty strings, NUL bytes and relative paths", async () => {
    expect((await refused(42)).message).toMatch(/^image_path: must be a string/);
    expect((await refused("")).message).toMatch(/^image_path: is empty/);
    expect((await refused(`${allowed}/a.png\0.txt`)).message).toMatch(/NUL byte/);
    expect((await refused("allowed/a.png")).message).toMatch(/relative path.*absolute path/);
    expect((await refused("./a.png")).message).toMatch(/relative path/);
    expect((await refused(`file://${allowed}/a.png`)).message).toMatch(/not a file:\/\/ URL/);
  });

  it("expands a leading ~/ to the home folder and refuses ~name", async () => {
    await writeFile(path.join(allowed, "home.png"), PNG_BYTES);
    expect(await openImage("~/allowed/home.png")).toMatchObject({ filename: "home.png" });
    expect((await refused("~root/allowed/home.png")).message).toMatch(/'~name', which is not expanded/);
  });

  it("never percent-decodes: %2e%2e is a literal folder name", async () => {
    await writeFile(path.join(outside, "x.png"), PNG_BYTES);
    expect((await refused(`${allowed}/%2e%2e/outside/x.png`)).message).toContain("does not exist");
    await mkdir(path.join(allowed, "%2e%2e"));
    await writeFile(path.join(allowed, "%2e%2e", "x.png"), PNG_BYTES);
    expect(await openImage(`${allowed}/%2e%2e/x.png`)).toMatchObject({ filename: "x.png" });
  });

  it("refuses a folder", async () => {
    await mkdir(path.join(allowed, "folder.png"));
    expect((await refused(path.join(allowed, "folder.png"))).message).toMatch(
      /is a folder, not an image file/,
    );
  });

  it("refuses a FIFO without hanging", async () => {
    const fifo = path.join(allowed, "pipe.png");
    execFileSync("mkfifo", [fifo]);
    expect((await refused(fifo)).message).toMatch(/is a pipe \(FIFO\)/);
  });

  it("refuses a socket", async () => {
    const socketPath = path.join(allowed, "sock.png");
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    try {
      expect((await refused(socketPath)).message).toMatch(/is a socket/);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("refuses a device even inside an allowed folder", async () => {
    const error = await refusal(openLocalImage("/dev/null", { allowedDirs: ["/dev"], param: "path" }));
    expect(error.message).toMatch(/^path: "\/dev\/null" is a device/);
  });

  it("refuses an empty file", async () => {
    await writeFile(path.join(allowed, "empty.png"), "");
    expect((await refused(path.join(allowed, "empty.png"))).message).toMatch(/is empty \(0 bytes\)/);
  });

  it("accepts a file exactly at the limit and refuses one byte over", async () => {
    await writeFile(path.join(allowed, "at.png"), pngOfSize(1000));
    await writeFile(path.join(allowed, "over.png"), pngOfSize(1001));
    expect((await openImage(path.join(allowed, "at.png"), 1000)).size).toBe(1000);
    expect((await refused(path.join(allowed, "over.png"), 1000)).message).toMatch(
      /is 1001 bytes, over the 1000-byte upload limit/,
    );
  });

  it("holds the real 10 MiB limit", async () => {
    await writeFile(path.join(allowed, "big.png"), pngOfSize(MAX_UPLOAD_BYTES));
    const image = await openImage(path.join(allowed, "big.png"));
    expect(image.size).toBe(MAX_UPLOAD_BYTES);
    expect((await readAll(image.open())).length).toBe(MAX_UPLOAD_BYTES);
    await appendFile(path.join(allowed, "big.png"), "x");
    expect((await refused(path.join(allowed, "big.png"))).message).toMatch(
      /over the 10 MB \(10485760 bytes\)/,
    );
  });

  it("errors the stream when the file shrank, grew or changed after the checks", async () => {
    const file = path.join(allowed, "moving.png");
    const bytes = pngOfSize(300_000);
    await writeFile(file, bytes);
    const image = await openImage(file);

    await truncate(file, 100_000);
    await expect(readAll(image.open())).rejects.toThrow(/changed while/);
    await writeFile(file, Buffer.concat([bytes, Buffer.from("more")]));
    await expect(readAll(image.open())).rejects.toThrow(/changed while/);
    const rewritten = Buffer.from(bytes);
    rewritten[250_000] = 0;
    await writeFile(file, rewritten);
    await expect(readAll(image.open())).rejects.toThrow(/changed while/);
    await writeFile(file, bytes);
    expect((await readAll(image.open())).equals(bytes)).toBe(true);
  });

  it("sanitizes the file name sent", async () => {
    const name = 'evil\u202e\r\nname\u0007"quoted".jpg';
    await writeFile(path.join(allowed, name), PNG_BYTES);
    expect((await openImage(path.join(allowed, name))).filename).toBe("evilname_quoted_.png");
  });

  it("resolves the allowed folders itself, so an alias of the folder still works", async () => {
    await symlink(allowed, path.join(base, "alias"));
    await writeFile(path.join(allowed, "a.png"), PNG_BYTES);
    const image = await openLocalImage(path.join(base, "alias", "a.png"), {
      allowedDirs: [path.join(base, "alias"), path.join(base, "missing"), "relative"],
      param: "image_path",
    });
    opened.push(image);
    expect(image.open().readableObjectMode).toBe(false);
    expect(image.size).toBe(PNG_BYTES.length);
  });

  it("refuses when no folder is allowed at all", async () => {
    await writeFile(path.join(allowed, "a.png"), PNG_BYTES);
    const error = await refusal(
      openLocalImage(path.join(allowed, "a.png"), { allowedDirs: [], param: "image_path" }),
    );
    expect(error.message).toMatch(/no folder is allowed for uploads/);
    const step = renderAdvice(error.nextStep, "stdio");
    expect(step).toMatch(/GENERATION_ALLOWED_DIRS in this server's entry of their MCP client configuration/);
    expect(step).toMatch(/root \/ workspace folder/);
    expect(step).toMatch(/upload_image with data_base64 and filename/);
  });

  it("refuses a polyglot: a PNG followed by a ZIP archive", async () => {
    const zip = Buffer.concat([Buffer.from("PK\x03\x04", "latin1"), Buffer.alloc(1230, 7)]);
    await writeFile(path.join(allowed, "poly.png"), Buffer.concat([pngOfSize(5000), zip]));
    const error = await refused(path.join(allowed, "poly.png"));
    expect(error.message).toBe(
      `image_path: ${JSON.stringify(path.join(allowed, "poly.png"))} has 1,234 bytes after the end of the PNG image (appended data such as a ZIP archive, an HTML page or a video); re-export it as a plain PNG and call again.`,
    );
  });

  it("refuses a PNG cut short before IEND and a JPEG followed by HTML", async () => {
    await writeFile(path.join(allowed, "cut.png"), pngOfSize(5000).subarray(0, 4000));
    expect((await refused(path.join(allowed, "cut.png"))).message).toMatch(/is cut short or damaged.*IEND/);
    await writeFile(
      path.join(allowed, "page.jpg"),
      Buffer.concat([JPEG_BYTES, Buffer.from("<html>hi</html>")]),
    );
    expect((await refused(path.join(allowed, "page.jpg"))).message).toMatch(
      /has 15 bytes after the end of the JPEG image/,
    );
  });

  it("close() waits for a stream whose read is in flight, then closes the file", async () => {
    const bytes = pngOfSize(2 * 1024 * 1024);
    await writeFile(path.join(allowed, "big.png"), bytes);
    const image = await openImage(path.join(allowed, "big.png"));
    const stream = image.open();
    const errors: unknown[] = [];
    stream.on("error", (error) => errors.push(error));
    // Start reading so a positional read is pending when close() is called.
    stream.once("data", () => {});
    await new Promise((resolve) => setImmediate(resolve));
    await image.close();
    expect(stream.destroyed).toBe(true);
    expect(stream.closed).toBe(true);
    expect(errors).toEqual([]);
    expect(() => image.open()).toThrow(/after close/);
  });
});

describe("sanitizeUploadFilename", () => {
  it("replaces the extension, limits the length and falls back to image.<ext>", () => {
    expect(sanitizeUploadFilename("photo.final.JPG", "image/webp")).toBe("photo.final.webp");
    expect(sanitizeUploadFilename("", "image/png")).toBe("image.png");
    expect(sanitizeUploadFilename(".hidden", "image/png")).toBe("hidden.png");
    expect(sanitizeUploadFilename("...", "image/png")).toBe("image.png");
    expect(sanitizeUploadFilename("\u0000\u001f", "image/jpeg")).toBe("image.jpg");
    expect(sanitizeUploadFilename(`${"a".repeat(300)}.png`, "image/png")).toBe(`${"a".repeat(100)}.png`);
    expect(sanitizeUploadFilename("../../etc/passwd", "image/png")).toBe("_.._etc_passwd.png");
  });
});

describe("imageFromBase64", () => {
  const opts = { param: "data_base64" };
  const refusedSync = (run: () => unknown): ValidationError => {
    try {
      run();
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationError);
      return error as ValidationError;
    }
    throw new Error("expected a refusal");
  };

  it("decodes plain base64, hashes and streams it", async () => {
    const image = imageFromBase64(WEBP_BYTES.toString("base64"), "pic.png", opts);
    expect(image).toMatchObject({ contentType: "image/webp", filename: "pic.webp", size: WEBP_BYTES.length });
    expect(image.sha256).toBe(sha256(WEBP_BYTES));
    expect((await readAll(image.open())).equals(WEBP_BYTES)).toBe(true);
    expect((await readAll(image.open())).equals(WEBP_BYTES)).toBe(true);
    await image.close();
  });

  it("accepts a data: URL prefix, line breaks and missing padding", () => {
    const encoded = JPEG_BYTES.toString("base64");
    expect(imageFromBase64(`data:image/jpeg;base64,${encoded}`, undefined, opts)).toMatchObject({
      contentType: "image/jpeg",
      filename: "image.jpg",
    });
    const wrapped = encoded.replace(/(.{8})/g, "$1\r\n");
    expect(imageFromBase64(wrapped, undefined, opts).sha256).toBe(sha256(JPEG_BYTES));
    expect(imageFromBase64(encoded.replace(/=+$/, ""), undefined, opts).sha256).toBe(sha256(JPEG_BYTES));
  });

  it("refuses invalid characters, other data: URLs and cut data", () => {
    expect(refusedSync(() => imageFromBase64("iVBORw0KGgo*", undefined, opts)).message).toMatch(
      /^data_base64: is not valid base64/,
    );
    expect(refusedSync(() => imageFromBase64("iVBO-w0_Ggo", undefined, opts)).message).toMatch(/URL-safe/);
    expect(refusedSync(() => imageFromBase64("data:text/plain,hello", undefined, opts)).message).toMatch(
      /data:image\/\.\.\.;base64/,
    );
    expect(refusedSync(() => imageFromBase64("iVBORw0KG", undefined, opts)).message).toMatch(
      /length is wrong/,
    );
    expect(refusedSync(() => imageFromBase64("a=bc", undefined, opts)).message).toMatch(/not valid base64/);
    expect(refusedSync(() => imageFromBase64(17, undefined, opts)).message).toMatch(/must be a string/);
    expect(refusedSync(() => imageFromBase64("", undefined, opts)).message).toMatch(/is empty/);
  });

  it("refuses decoded content that is not an image", () => {
    const error = refusedSync(() =>
      imageFromBase64(Buffer.from("hello world").toString("base64"), "x.png", opts),
    );
    expect(error.message).toMatch(/is not a JPG, PNG or WebP image/);
  });

  it("checks the decoded size exactly at the limit", () => {
    const at = pngOfSize(999).toString("base64");
    const over = pngOfSize(1000).toString("base64");
    expect(imageFromBase64(at, undefined, { ...opts, maxBytes: 999 }).size).toBe(999);
    expect(refusedSync(() => imageFromBase64(over, undefined, { ...opts, maxBytes: 999 })).message).toMatch(
      /more than the 999-byte upload limit/,
    );
  });

  it("refuses a huge string from its length alone, before scanning or decoding it", () => {
    // An invalid character at the end: had the string been scanned first, the refusal would name it.
    const huge = `${Buffer.alloc(64 * 1024 * 1024, "A").toString("latin1")}!`;
    const message = refusedSync(() => imageFromBase64(huge, undefined, opts)).message;
    expect(message).toMatch(/upload limit/);
    expect(message).not.toMatch(/not valid base64/);
  });
});
