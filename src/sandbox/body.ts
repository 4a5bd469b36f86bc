import type { IncomingMessage } from "node:http";
import busboy from "busboy";
import { MAX_UPLOAD_BYTES } from "../models.js";
import { validationError } from "./http.js";
import type { HttpError } from "./http.js";
import { sniffImage } from "./media/sniff.js";
import type { SniffedType } from "./media/sniff.js";

/** Our choice: a generation body is a few hundred bytes; 1 MiB leaves room and bounds memory. */
export const MAX_JSON_BODY_BYTES = 1024 * 1024;

function cut(error: HttpError): HttpError {
  error.closeConnection = true;
  return error;
}

/**
 * Reads a JSON body with a byte cap. A body over the cap is refused as soon as it passes the cap (or at
 * once when Content-Length says so), and the connection is closed instead of reading the rest.
 */
export async function readJsonBody(req: IncomingMessage, maxBytes = MAX_JSON_BODY_BYTES): Promise<unknown> {
  const type = req.headers["content-type"];
  if (type === undefined || !/^application\/json\s*(;|$)/i.test(type)) {
    throw validationError(
      "Content-Type",
      `must be application/json (got ${type === undefined ? "none" : `"${type}"`})`,
    );
  }
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > maxBytes) {
    throw cut(validationError("body", `must be at most ${maxBytes} bytes (Content-Length is ${declared})`));
  }
  // Event listeners, not for-await: leaving an async iterator early destroys the socket before we answer.
  const { chunks, size } = await new Promise<{ chunks: Buffer[]; size: number }>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBytes) {
        req.off("data", onData);
        req.pause();
        reject(cut(validationError("body", `must be at most ${maxBytes} bytes`)));
        return;
      }
      chunks.push(chunk);
    };
    req.on("data", onData);
    req.once("end", () => resolve({ chunks, size }));
    req.once("error", reject);
    // A client that gives up mid-body must not leave the handler waiting forever.
    req.once("close", () => {
      if (!req.complete) reject(validationError("body", "request aborted before its end"));
    });
  });
  const text = Buffer.concat(chunks, size).toString("utf8");
  if (text.trim() === "") throw validationError("body", "required: a JSON object");
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw validationError(
      "body",
      `malformed JSON (${error instanceof Error ? error.message : String(error)})`,
    );
  }
}

export interface UploadedFile extends SniffedType {
  bytes: Buffer;
}

/**
 * Streams a multipart body through busboy, keeping only the `image` file and at most MAX_UPLOAD_BYTES of
 * it. Busboy reports `limit` when a file *reaches* its fileSize limit, so the limit is set one byte above
 * ours: exactly MAX_UPLOAD_BYTES is accepted, and on the first byte past it we stop reading at once and
 * the server closes the connection after answering.
 */
export function readUpload(req: IncomingMessage): Promise<UploadedFile> {
  const type = req.headers["content-type"];
  if (type === undefined || !/^multipart\/form-data\s*;/i.test(type)) {
    return Promise.reject(
      validationError(
        "Content-Type",
        `must be multipart/form-data with a boundary (got ${type === undefined ? "none" : `"${type}"`})`,
      ),
    );
  }
  return new Promise<UploadedFile>((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        limits: {
          fileSize: MAX_UPLOAD_BYTES + 1,
          files: 1,
          fields: 20,
          parts: 21,
          fieldSize: 64 * 1024,
          headerPairs: 50,
        },
      });
    } catch (error) {
      reject(
        validationError(
          "Content-Type",
          `unusable multipart header (${error instanceof Error ? error.message : String(error)})`,
        ),
      );
      return;
    }
    let settled = false;
    let file: Buffer | undefined;
    const fail = (error: HttpError): void => {
      if (settled) return;
      settled = true;
      // Stop feeding the parser but do not destroy it from inside its own callbacks (busboy then touches
      // state it already released); it is dropped with the request. Its late errors mean nothing now.
      req.unpipe(parser);
      parser.removeAllListeners();
      parser.on("error", () => undefined);
      // A small remainder is drained so the connection stays usable; a large one is cut off.
      if (!error.closeConnection) req.resume();
      reject(error);
    };
    parser.on("file", (field, stream) => {
      stream.on("error", () => undefined);
      if (field !== "image") {
        stream.resume();
        fail(validationError("image", `send the file in multipart field "image" (got a file in "${field}")`));
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on("data", (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
      });
      stream.on("limit", () => {
        chunks.length = 0;
        stream.resume();
        fail(
          cut(validationError("image", `file is larger than the ${MAX_UPLOAD_BYTES}-byte limit (10 MiB)`)),
        );
      });
      stream.on("end", () => {
        if (!settled) file = Buffer.concat(chunks, size);
      });
    });
    parser.on("filesLimit", () => fail(validationError("image", "send exactly one file")));
    parser.on("partsLimit", () => fail(validationError("body", "too many multipart parts")));
    parser.on("fieldsLimit", () => fail(validationError("body", "too many multipart fields")));
    parser.on("error", (error: unknown) => {
      fail(
        validationError(
          "body",
          `malformed multipart body (${error instanceof Error ? error.message : String(error)})`,
        ),
      );
    });
    parser.on("close", () => {
      if (settled) return;
      settled = true;
      if (file === undefined) {
        reject(validationError("image", 'required: send the file in multipart field "image"'));
        return;
      }
      if (file.length === 0) {
        reject(validationError("image", "file is empty"));
        return;
      }
      const sniffed = sniffImage(file);
      if (!sniffed) {
        reject(
          validationError(
            "image",
            "file is not a JPG, PNG or WebP image (judged by its content, not its name)",
          ),
        );
        return;
      }
      resolve({ ...sniffed, bytes: file });
    });
    req.on("aborted", () => fail(validationError("body", "request aborted")));
    req.pipe(parser);
  });
}
