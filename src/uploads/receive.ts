/**
 * `/upload/<token>`: GET is the page, PUT or POST of the raw bytes (or of a multipart field `file`) sends the
 * picture. Nothing is read for a token that opens no link; a body is cut off at the size cap and must keep
 * coming (a slow drip is dropped); the file is checked like any upload (files/local-image.ts) before
 * anything reaches the service. Browsers get a page, everything else JSON.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import busboy from "busboy";
import { GenerationError } from "../api/errors.js";
import { imageFromBytes } from "../files/local-image.js";
import type { Logger } from "../logger.js";
import { MAX_UPLOAD_BYTES } from "../models.js";
import type { UploadDesk } from "./desk.js";
import { NO_TRACE, sendForm, sendNotice } from "./page.js";

/** Bodies read at once by this process, each at most MAX_UPLOAD_BYTES (plus a multipart envelope). */
const MAX_BODIES = 8;
const ENVELOPE_BYTES = 64 * 1024;
/** A body must bring this many bytes in every such period, or it is dropped. */
const MIN_BYTES = 16 * 1024;
const PERIOD_MS = 5000;
/** How long the page waits for the hosted URL when the file went to another replica to upload. */
const SHOW_URL_MS = 5000;

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
    const body = JSON.stringify(
      url === undefined ? { [status < 400 ? "message" : "error"]: message } : { url, message },
    );
    res.writeHead(status, { ...NO_TRACE, "content-type": "application/json" }).end(body);
  };
  const link = await desk.lookup(token).catch(() => "down" as const);
  if (link === "down")
    return answer(503, "The server cannot read its upload links right now. Try again in a minute.");
  if (link === undefined) {
    return answer(404, "This upload link is unknown or has expired. Ask your assistant for a new one.");
  }
  if (link === "gone")
    return answer(
      410,
      "This upload link has been used: it takes one picture. Ask your assistant for a new one.",
    );
  if (req.method === "GET" || req.method === "HEAD") return sendForm(res);
  if (req.method !== "PUT" && req.method !== "POST") {
    res.setHeader("allow", "GET, PUT, POST");
    return answer(405, "Open this link in a browser, or send the picture with PUT or POST.");
  }
  if (Number(req.headers["content-length"]) > MAX_UPLOAD_BYTES + ENVELOPE_BYTES)
    return answer(413, tooLarge());
  if (reading >= MAX_BODIES)
    return answer(503, "The server is receiving too many pictures at once. Try again in a moment.");
  reading += 1;
  let body: Body;
  try {
    body = await readPicture(req);
  } finally {
    reading -= 1;
  }
  if ("status" in body) return answer(body.status, body.message);
  let image;
  try {
    image = imageFromBytes(body.bytes, body.filename, "file", "the file");
  } catch (error) {
    const message = error instanceof Error ? error.message.replace(/^file: t/, "T") : String(error);
    return answer(415, message);
  }
  const signal = AbortSignal.timeout(60_000);
  let url: string | undefined;
  try {
    const delivered = await desk.deliver(link, image, body.bytes, signal);
    if (delivered === "gone") return answer(410, "Another picture was sent to this link first.");
    url = delivered;
  } catch (error) {
    logger.warning("An upload link's picture could not be uploaded", { error: String(error) });
    const why = error instanceof GenerationError ? `${error.code}: ${error.message}` : "an unexpected error";
    return answer(502, `The picture was fine but the service did not take it (${why}). Try again.`);
  }
  // Parked for the replica that holds the key: its call may upload it within moments.
  for (const until = Date.now() + SHOW_URL_MS; url === undefined && Date.now() < until;) {
    await sleep(250);
    const now = await desk.store.read(link.id).catch(() => undefined);
    if (now?.state === "done") ({ url } = now);
  }
  if (url === undefined) return answer(202, "Received. Your assistant will pick the picture up from here.");
  answer(200, "Sent. Your assistant can use it now:", url);
}

const tooLarge = () =>
  `The picture is larger than ${MAX_UPLOAD_BYTES / (1024 * 1024)} MB (${MAX_UPLOAD_BYTES} bytes). Send a smaller or more compressed one.`;

/** The picture's bytes (the body, or its multipart field `file`), at most MAX_UPLOAD_BYTES of them. */
function readPicture(req: IncomingMessage): Promise<Body> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let arrived = 0;
    let checked = 0;
    let filename = "";
    const finish = (body: Body) => {
      clearInterval(pace);
      resolve(body);
    };
    const take = (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_UPLOAD_BYTES) finish({ status: 413, message: tooLarge() });
      else chunks.push(chunk);
    };
    const done = () =>
      finish(
        size > MAX_UPLOAD_BYTES
          ? { status: 413, message: tooLarge() }
          : { bytes: Buffer.concat(chunks), filename },
      );
    const pace = setInterval(() => {
      if (arrived - checked < MIN_BYTES)
        finish({ status: 408, message: "The picture came too slowly and was not taken. Try again." });
      checked = arrived;
    }, PERIOD_MS);
    req.on("data", (chunk: Buffer) => (arrived += chunk.length));
    req.once("close", () => finish({ status: 400, message: "The upload was interrupted. Try again." }));
    if (!/^multipart\/form-data/i.test(req.headers["content-type"] ?? "")) {
      req.on("data", take).once("end", done);
      return;
    }
    try {
      const parser = busboy({
        headers: req.headers,
        limits: { fileSize: MAX_UPLOAD_BYTES + 1, files: 1, fields: 10, parts: 11 },
      });
      parser.on("file", (field, stream, info) => {
        if (field !== "file") return void stream.resume();
        filename = info.filename ?? "";
        stream.on("data", take);
      });
      parser.once("close", () =>
        chunks.length > 0 || size > 0
          ? done()
          : finish({ status: 400, message: 'Send the picture in the multipart field "file".' }),
      );
      parser.once("error", () => finish({ status: 400, message: "The multipart body is malformed." }));
      req.pipe(parser);
    } catch {
      finish({ status: 400, message: "The multipart header has no usable boundary." });
    }
  });
}
