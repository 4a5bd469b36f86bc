import { connect } from "node:net";
import { tinyPng } from "./support.js";

/** What a client that keeps sending a large upload saw, byte for byte. */
export interface RawOutcome {
  /** Everything received, undecoded. */
  received: Buffer;
  status: number | undefined;
  headers: Record<string, string>;
  body: string;
  /** Body bytes handed to the socket before it failed or closed. */
  bodyBytesWritten: number;
  bodyBytesTotal: number;
  /** The socket's error code (ECONNRESET, EPIPE...), if it failed. */
  errorCode: string | undefined;
}

export const MiB = 1024 * 1024;

/**
 * POSTs a multipart upload of `fileBytes` to /api/v1/upload over a bare TCP socket, writing as fast as the
 * socket takes it and never stopping on its own before the end: the server decides when it stops. Resolves
 * once the socket is closed, whatever happened.
 *
 * It is a careful client: a socket whose write fails is destroyed at once, unread answer included, so
 * after each "drain" it lets the event loop poll for input before writing again. An answer that arrived
 * before the server's reset is then always read, which is what the tests check; a client that writes
 * first may lose it, which is the point of the earlyAnswer fault.
 */
export function rawUpload(
  baseUrl: string,
  key: string,
  fileBytes: number,
  options: { timeoutMs?: number } = {},
): Promise<RawOutcome> {
  const url = new URL(baseUrl);
  const boundary = "----sandbox-raw-client";
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="big.png"\r\nContent-Type: image/png\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const png = tinyPng();
  const bodyBytesTotal = head.length + fileBytes + tail.length;
  const requestHead =
    `POST ${url.pathname}/upload HTTP/1.1\r\nHost: ${url.host}\r\n` +
    `Authorization: Bearer ${key}\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\n` +
    `Content-Length: ${bodyBytesTotal}\r\n\r\n`;

  return new Promise((resolve, reject) => {
    // Half-open: the server's FIN does not stop our writes, as it would not stop a real upload in progress.
    const socket = connect({ port: Number(url.port), host: url.hostname, allowHalfOpen: true });
    const chunks: Buffer[] = [];
    let written = 0;
    let errorCode: string | undefined;
    let failed = false;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error("raw upload: the connection was still open after the time limit"));
    }, options.timeoutMs ?? 15_000);
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", (error: NodeJS.ErrnoException) => {
      failed = true;
      errorCode ??= error.code ?? error.message;
    });
    socket.on("close", () => {
      clearTimeout(timer);
      const received = Buffer.concat(chunks);
      resolve({ ...parseAnswer(received), received, bodyBytesWritten: written, bodyBytesTotal, errorCode });
    });

    const block = Buffer.alloc(64 * 1024);
    let fileLeft = fileBytes;
    const pump = (): void => {
      while (!failed && !socket.destroyed && socket.writable) {
        let piece: Buffer;
        if (written === 0) {
          piece = Buffer.concat([head, png.subarray(0, Math.min(png.length, fileLeft))]);
          fileLeft -= piece.length - head.length;
        } else if (fileLeft > 0) {
          piece = fileLeft >= block.length ? block : block.subarray(0, fileLeft);
          fileLeft -= piece.length;
        } else {
          socket.end(tail);
          written += tail.length;
          return;
        }
        written += piece.length;
        if (!socket.write(piece)) {
          // Two hops: the next write comes after one more poll phase, which reads any answer first.
          socket.once("drain", () => setImmediate(() => setImmediate(pump)));
          return;
        }
      }
    };
    socket.once("connect", () => {
      socket.write(requestHead);
      pump();
    });
  });
}

function parseAnswer(received: Buffer): Pick<RawOutcome, "status" | "headers" | "body"> {
  const text = received.toString("utf8");
  const end = text.indexOf("\r\n\r\n");
  if (end === -1) return { status: undefined, headers: {}, body: "" };
  const [statusLine = "", ...lines] = text.slice(0, end).split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(" ")[1]), headers, body: text.slice(end + 4) };
}
