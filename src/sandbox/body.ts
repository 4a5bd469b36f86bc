/** Reading request bodies with caps: JSON, the multipart upload, and the few bytes a body fault reads. */
import type { IncomingMessage } from "node:http";
import busboy from "busboy";
import { MAX_UPLOAD_BYTES } from "../models.js";
import { validationError } from "./http.js";
import type { UploadRecord } from "./store.js";

/** Our choice: a generation body is a few hundred bytes; 1 MiB leaves room and bounds memory. */
export const MAX_JSON_BODY_BYTES = 1024 * 1024;

const got = (type: string | undefined): string => (type === undefined ? "none" : `"${type}"`);
const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** Refused as soon as it passes the cap, and the connection closed instead of reading on. */
export async function readJsonObject(req: IncomingMessage): Promise<Record<string, unknown>> {
  const type = req.headers["content-type"];
  if (type === undefined || !/^application\/json\s*(;|$)/i.test(type))
    throw validationError("Content-Type", `must be application/json (got ${got(type)})`);
  const max = MAX_JSON_BODY_BYTES;
  const declared = Number(req.headers["content-length"]);
  if (declared > max)
    throw validationError("body", `must be at most ${max} bytes (Content-Length is ${declared})`, true);
  const chunks: Buffer[] = [];
  if ((await readBodyBytes(req, max + 1, chunks)) > max)
    throw validationError("body", `must be at most ${max} bytes`, true);
  // A client that gives up mid-body must not leave the handler waiting forever.
  if (!req.complete) throw validationError("body", "request aborted before its end");
  const text = Buffer.concat(chunks).toString("utf8");
  if (text.trim() === "") throw validationError("body", "required: a JSON object");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw validationError("body", `malformed JSON (${messageOf(error)})`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw validationError("body", "must be a JSON object");
  return value as Record<string, unknown>;
}

/** Upload types are decided by the file's first bytes, never by its name or declared type. */
export function sniffImage(head: Buffer): Omit<UploadRecord, "bytes"> | undefined {
  if (head.subarray(0, 8).equals(Buffer.from("89504e470d0a1a0a", "hex")))
    return { contentType: "image/png", extension: "png" };
  if (head.subarray(0, 3).equals(Buffer.from([0xff, 0xd8, 0xff])))
    return { contentType: "image/jpeg", extension: "jpg" };
  if (head.toString("latin1", 0, 4) === "RIFF" && head.toString("latin1", 8, 12) === "WEBP")
    return { contentType: "image/webp", extension: "webp" };
  return undefined;
}

/**
 * Streams a multipart body through busboy, keeping only the `image` file. Busboy reports `limit` when a file
 * *reaches* its fileSize, so the limit is one byte above ours: exactly MAX_UPLOAD_BYTES is accepted.
 */
export function readUpload(req: IncomingMessage): Promise<UploadRecord> {
  const type = req.headers["content-type"];
  if (type === undefined || !/^multipart\/form-data\s*;/i.test(type))
    throw validationError("Content-Type", `must be multipart/form-data with a boundary (got ${got(type)})`);
  const limits = {
    fileSize: MAX_UPLOAD_BYTES + 1,
    files: 1,
    fields: 20,
    parts: 21,
    fieldSize: 65_536,
    headerPairs: 50,
  };
  let parser: busboy.Busboy;
  try {
    parser = busboy({ headers: req.headers, limits });
  } catch (error) {
    throw validationError("Content-Type", `unusable multipart header (${messageOf(error)})`);
  }
  return new Promise<UploadRecord>((resolve, reject) => {
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
 * Reads body bytes (into `keep` if given) until at least `bytes` came, the body ends or the client goes;
 * resolves with the count. Listeners, not for-await: leaving an async iterator early destroys the socket.
 */
export function readBodyBytes(req: IncomingMessage, bytes: number, keep?: Buffer[]): Promise<number> {
  if (bytes <= 0) return Promise.resolve(0);
  return new Promise((resolve) => {
    let read = 0;
    const done = (): void => {
      req.off("data", onData).off("end", done).off("close", done).pause();
      resolve(read);
    };
    const onData = (chunk: Buffer): void => {
      read += chunk.length;
      keep?.push(chunk);
      if (read >= bytes) done();
    };
    req.on("data", onData).once("end", done).once("close", done);
  });
}
