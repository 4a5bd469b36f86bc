/** Reading request bodies with caps: JSON, the multipart upload, and the few bytes a body fault reads. */
import type { IncomingMessage } from "node:http";
import busboy from "busboy";
import { MAX_UPLOAD_BYTES } from "../models.js";
import { validationError } from "./http.js";

/** Our choice: a generation body is a few hundred bytes; 1 MiB leaves room and bounds memory. */
export const MAX_JSON_BODY_BYTES = 1024 * 1024;

const got = (type: string | undefined): string => (type === undefined ? "none" : `"${type}"`);
const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** A body over the cap is refused as soon as it passes it, and the connection closed instead of reading on. */
export async function readJsonBody(req: IncomingMessage, maxBytes = MAX_JSON_BODY_BYTES): Promise<unknown> {
  const type = req.headers["content-type"];
  if (type === undefined || !/^application\/json\s*(;|$)/i.test(type))
    throw validationError("Content-Type", `must be application/json (got ${got(type)})`);
  const declared = Number(req.headers["content-length"]);
  if (declared > maxBytes)
    throw validationError("body", `must be at most ${maxBytes} bytes (Content-Length is ${declared})`, true);
  // Event listeners, not for-await: leaving an async iterator early destroys the socket before we answer.
  const text = await new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      chunks.push(chunk);
      if (size <= maxBytes) return;
      req.off("data", onData);
      req.pause();
      reject(validationError("body", `must be at most ${maxBytes} bytes`, true));
    };
    req.on("data", onData);
    req.once("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.once("error", reject);
    // A client that gives up mid-body must not leave the handler waiting forever.
    req.once(
      "close",
      () => req.complete || reject(validationError("body", "request aborted before its end")),
    );
  });
  if (text.trim() === "") throw validationError("body", "required: a JSON object");
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw validationError("body", `malformed JSON (${messageOf(error)})`);
  }
}

export interface UploadedFile {
  contentType: "image/png" | "image/jpeg" | "image/webp";
  extension: "png" | "jpg" | "webp";
  bytes: Buffer;
}

/** Upload types are decided by the file's first bytes, never by its name or declared type. */
export function sniffImage(head: Buffer): Omit<UploadedFile, "bytes"> | undefined {
  if (head.subarray(0, 8).equals(Buffer.from("89504e470d0a1a0a", "hex")))
    return { contentType: "image/png", extension: "png" };
  if (head.subarray(0, 3).equals(Buffer.from([0xff, 0xd8, 0xff])))
    return { contentType: "image/jpeg", extension: "jpg" };
  if (head.toString("latin1", 0, 4) === "RIFF" && head.toString("latin1", 8, 12) === "WEBP")
    return { contentType: "image/webp", extension: "webp" };
  return undefined;
}

/**
 * Streams a multipart body through busboy, keeping only the `image` file and at most MAX_UPLOAD_BYTES of it.
 * Busboy reports `limit` when a file *reaches* its fileSize, so the limit is one byte above ours: exactly
 * MAX_UPLOAD_BYTES is accepted, and on the first byte past it we stop reading and close the connection.
 */
export function readUpload(req: IncomingMessage): Promise<UploadedFile> {
  const type = req.headers["content-type"];
  if (type === undefined || !/^multipart\/form-data\s*;/i.test(type))
    throw validationError("Content-Type", `must be multipart/form-data with a boundary (got ${got(type)})`);
  let parser: busboy.Busboy;
  try {
    const limits = {
      fileSize: MAX_UPLOAD_BYTES + 1,
      files: 1,
      fields: 20,
      parts: 21,
      fieldSize: 65_536,
      headerPairs: 50,
    };
    parser = busboy({ headers: req.headers, limits });
  } catch (error) {
    throw validationError("Content-Type", `unusable multipart header (${messageOf(error)})`);
  }
  return new Promise<UploadedFile>((resolve, reject) => {
    let settled = false;
    let file: Buffer | undefined;
    const refuse = (field: string, problem: string, cutOff = false): void => {
      if (settled) return;
      settled = true;
      // Stop feeding the parser but do not destroy it from inside its own callbacks (busboy then touches
      // state it already released); its late errors mean nothing now.
      req.unpipe(parser);
      parser.removeAllListeners();
      parser.on("error", () => undefined);
      // A small remainder is drained so the connection stays usable; a large one is cut off.
      if (!cutOff) req.resume();
      reject(validationError(field, problem, cutOff));
    };
    parser.on("file", (field, stream) => {
      stream.on("error", () => undefined);
      if (field !== "image") {
        stream.resume();
        return refuse("image", `send the file in multipart field "image" (got a file in "${field}")`);
      }
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("limit", () => {
        chunks.length = 0;
        stream.resume();
        refuse("image", `file is larger than the ${MAX_UPLOAD_BYTES}-byte limit (10 MiB)`, true);
      });
      stream.on("end", () => (file = Buffer.concat(chunks)));
    });
    parser.on("filesLimit", () => refuse("image", "send exactly one file"));
    parser.on("partsLimit", () => refuse("body", "too many multipart parts"));
    parser.on("fieldsLimit", () => refuse("body", "too many multipart fields"));
    parser.on("error", (error) => refuse("body", `malformed multipart body (${messageOf(error)})`));
    parser.on("close", () => {
      const sniffed = file && sniffImage(file);
      if (file === undefined) refuse("image", 'required: send the file in multipart field "image"');
      else if (file.length === 0) refuse("image", "file is empty");
      else if (!sniffed)
        refuse("image", "file is not a JPG, PNG or WebP image (judged by its content, not its name)");
      else if (!settled) resolve({ ...sniffed, bytes: file });
      settled = true;
    });
    req.on("aborted", () => refuse("body", "request aborted"));
    req.pipe(parser);
  });
}

/**
 * Reads and discards body bytes until at least `bytes` have come (a chunk may carry it past), the body ends or
 * the client goes; then stops reading. Resolves with the number of bytes read.
 */
export function readBodyBytes(req: IncomingMessage, bytes: number): Promise<number> {
  if (bytes <= 0) return Promise.resolve(0);
  return new Promise((resolve) => {
    let read = 0;
    const done = (): void => {
      req.off("data", onData).off("end", done).off("close", done).pause();
      resolve(read);
    };
    const onData = (chunk: Buffer): void => {
      read += chunk.length;
      if (read >= bytes) done();
    };
    req.on("data", onData).once("end", done).once("close", done);
  });
}
