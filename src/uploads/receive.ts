/**
 * `/upload/<token>`: GET is the page; PUT or POST of the raw bytes (or of a multipart field `file`) sends the
 * picture. Nothing is read for a token that opens no link; a body is cut off at the size cap and must keep
 * coming (a slow drip is dropped); the picture is checked like any upload (files/local-image.ts) before
 * anything reaches the service. Browsers get a page, anything else JSON.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import busboy from "busboy";
import { GenerationError } from "../api/errors.js";
import { imageFromBytes, type LocalImage } from "../files/local-image.js";
import type { Logger } from "../logger.js";
import { MAX_UPLOAD_BYTES } from "../models.js";
import type { UploadDesk } from "./desk.js";
import { NO_TRACE, sendForm, sendNotice } from "./page.js";

/** An upload link's path, under any prefix a proxy passes on: the token is 256 random bits, base64url. */
export const UPLOAD_PATH = /\/upload\/([A-Za-z0-9_-]{43})$/;
/** Bodies read at once by this process, each at most MAX_UPLOAD_BYTES (plus a multipart envelope). */
const MAX_BODIES = 8;
/** A body must bring this many bytes every 5 s, or it is dropped. */
const MIN_BYTES_PER_5S = 16 * 1024;
const TOO_LARGE = `The picture is larger than 10 MB (${MAX_UPLOAD_BYTES} bytes). Send a smaller one.`;
let reading = 0;

type Body = { bytes: Buffer; filename: string } | { status: number; message: string };

export async function answerUpload(
  req: IncomingMessage,
  res: ServerResponse,
  token: string,
  desk: UploadDesk,
  logger: Logger,
): Promise<void> {
  const answer = (status: number, message: string, url?: string) => {
    // A refused body is not read on: the connection goes with the answer.
    if (status >= 400 && !req.complete) res.setHeader("connection", "close");
    if (/text\/html/.test(req.headers.accept ?? "")) return sendNotice(res, status, message, url);
    const body = url === undefined ? { [status < 400 ? "message" : "error"]: message } : { url, message };
    res.writeHead(status, { ...NO_TRACE, "content-type": "application/json" }).end(JSON.stringify(body));
  };
  const link = await desk.lookup(token).catch(() => "down" as const);
  if (link === "down")
    return answer(503, "The server cannot read its upload links now. Try again in a minute.");
  if (link === undefined)
    return answer(404, "This upload link is unknown or has expired. Ask for a new one.");
  if (link === "gone")
    return answer(410, "This upload link has been used: it takes one picture. Ask for a new one.");
  if (req.method === "GET" || req.method === "HEAD") return sendForm(res);
  if (req.method !== "PUT" && req.method !== "POST") {
    res.setHeader("allow", "GET, PUT, POST");
    return answer(405, "Open this link in a browser, or send the picture with PUT or POST.");
  }
  if (Number(req.headers["content-length"]) > MAX_UPLOAD_BYTES + 65_536) return answer(413, TOO_LARGE);
  if (reading >= MAX_BODIES)
    return answer(503, "The server is receiving many pictures at once. Try again soon.");
  reading += 1;
  const body = await readPicture(req).finally(() => (reading -= 1));
  if ("status" in body) return answer(body.status, body.message);
  let image: LocalImage;
  try {
    image = imageFromBytes(body.bytes, body.filename, "file", "the file");
  } catch (error) {
    return answer(415, String((error as Error).message).replace(/^file: t/, "T"));
  }
  let url: string | "gone" | undefined;
  try {
    url = await desk.deliver(link, image, body.bytes);
  } catch (error) {
    logger.warning("An upload link's picture could not be uploaded", { error: String(error) });
    const why = error instanceof GenerationError ? `${error.code}: ${error.message}` : "an unexpected error";
    return answer(502, `The picture is fine but the service did not take it (${why}). Try again.`);
  }
  if (url === "gone") return answer(410, "Another picture was sent to this link first.");
  logger.info("a picture came through an upload link", {
    upload_id: link.id,
    uploaded_here: url !== undefined,
  });
  // Parked for the replica that holds the key: a call waiting there may upload it within moments.
  for (const until = Date.now() + 5000; url === undefined && Date.now() < until;) {
    await sleep(250);
    url = (await desk.store.read(link.id).catch(() => undefined))?.url;
  }
  if (url === undefined) return answer(202, "Received. Your assistant will pick the picture up from here.");
  answer(200, "Sent. Your assistant can use it now:", url);
}

/** The picture's bytes (the body, or its multipart field `file`), at most MAX_UPLOAD_BYTES of them. */
function readPicture(req: IncomingMessage): Promise<Body> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let [size, arrived, checked, filename] = [0, 0, 0, ""];
    const finish = (body: Body) => {
      clearInterval(pace);
      resolve(body);
    };
    const refuse = (status: number, message: string) => finish({ status, message });
    const take = (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_UPLOAD_BYTES) refuse(413, TOO_LARGE);
      else chunks.push(chunk);
    };
    const done = () =>
      size > MAX_UPLOAD_BYTES ? refuse(413, TOO_LARGE) : finish({ bytes: Buffer.concat(chunks), filename });
    const pace = setInterval(() => {
      if (arrived - checked < MIN_BYTES_PER_5S)
        refuse(408, "The picture came too slowly and was not taken. Try again.");
      checked = arrived;
    }, 5000);
    req.on("data", (chunk: Buffer) => (arrived += chunk.length));
    req.once("close", () => req.complete || refuse(400, "The upload was interrupted. Try again."));
    if (!/^multipart\/form-data/i.test(req.headers["content-type"] ?? ""))
      return void req.on("data", take).once("end", done);
    try {
      const limits = { fileSize: MAX_UPLOAD_BYTES + 1, files: 1, fields: 10, parts: 11 };
      const parser = busboy({ headers: req.headers, limits });
      parser.on("file", (field, stream, info) => {
        if (field !== "file") return void stream.resume();
        filename = info.filename ?? "";
        stream.on("data", take);
      });
      parser.once("close", () =>
        arrived > 0 && size > 0 ? done() : refuse(400, 'Send the picture in the multipart field "file".'),
      );
      parser.once("error", () => refuse(400, "The multipart body is malformed."));
      req.pipe(parser);
    } catch {
      refuse(400, "The multipart header has no usable boundary.");
    }
  });
}
