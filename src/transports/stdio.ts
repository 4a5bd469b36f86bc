/**
 * MCP over stdio, one JSON-RPC message per line, with a limit per message that fails loudly. The SDK's
 * StdioServerTransport buffers at most 10 MiB and then errors and closes, ending the session with nothing
 * said. Here a longer line is skipped as it streams in (only a small head and tail are kept, so memory
 * stays bounded whatever its size), logged on stderr as one line, and answered with a JSON-RPC error when
 * its head or tail shows a request id; the session goes on. A malformed line is logged and skipped, as
 * the SDK does. A failed write on stdout (EPIPE once the client went away) closes the transport instead
 * of crashing the process.
 */
import process from "node:process";
import type { Readable, Writable } from "node:stream";
import {
  ProtocolErrorCode,
  parseJSONRPCMessage,
  type JSONRPCMessage,
  type Transport,
} from "@modelcontextprotocol/server";
import { MAX_MESSAGE_BYTES } from "../config/index.js";
import type { LogLevel } from "../logger.js";

export { MAX_MESSAGE_BYTES };

/** How much of the start and the end of a skipped line is kept to find its method and id. */
const EDGE_BYTES = 1024;
const NEWLINE = 0x0a;

export interface StdioTransportOptions {
  stdin?: Readable;
  stdout?: Writable;
  maxMessageBytes?: number;
  /** Where skipped lines are reported (the server's logger, which writes stderr). */
  logger?: { log(level: LogLevel, message: string, data?: Record<string, unknown>): void };
}

export class StdioTransport implements Transport {
  onclose?: (() => void) | undefined;
  /** Resolves once the transport has closed (stdin ended, stdout broke, or close() was called). */
  readonly finished: Promise<void>;
  private markFinished: () => void = () => {};
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: ((message: JSONRPCMessage) => void) | undefined;

  private readonly stdin: Readable;
  private readonly stdout: Writable;
  private readonly maxBytes: number;
  private readonly logger: StdioTransportOptions["logger"];
  private started = false;
  private closed = false;
  /** The current line's pieces while it is within the limit. */
  private pieces: Buffer[] = [];
  private size = 0;
  /** Set once the current line went over the limit: its head and latest tail, nothing else. */
  private skipped: { head: Buffer; tail: Buffer } | undefined;

  constructor(options: StdioTransportOptions = {}) {
    this.stdin = options.stdin ?? process.stdin;
    this.stdout = options.stdout ?? process.stdout;
    this.maxBytes = options.maxMessageBytes ?? MAX_MESSAGE_BYTES;
    this.logger = options.logger;
    this.finished = new Promise((resolve) => (this.markFinished = resolve));
  }

  async start(): Promise<void> {
    if (this.started) throw new Error("StdioTransport already started");
    this.started = true;
    this.stdin.on("data", this.onData);
    this.stdin.on("error", this.onStdinError);
    // Stays attached after close: a write still in flight may fail later, and an 'error' event nobody
    // listens to would crash the process.
    this.stdout.on("error", this.onStdoutError);
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) return Promise.reject(new Error("stdio transport is closed"));
    return new Promise((resolve, reject) => {
      this.stdout.write(`${JSON.stringify(message)}\n`, (error) => {
        if (error) {
          this.onStdoutError(error);
          reject(error);
        } else resolve();
      });
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stdin.off("data", this.onData);
    this.stdin.off("error", this.onStdinError);
    if (this.stdin.listenerCount("data") === 0) this.stdin.pause();
    this.pieces = [];
    this.skipped = undefined;
    this.onclose?.();
    this.markFinished();
  }

  private readonly onData = (chunk: Buffer | string): void => {
    const data = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
    let from = 0;
    while (from < data.length && !this.closed) {
      const newline = data.indexOf(NEWLINE, from);
      const to = newline === -1 ? data.length : newline;
      this.take(data.subarray(from, to));
      if (newline === -1) break;
      this.endLine();
      from = newline + 1;
    }
  };

  private take(piece: Buffer): void {
    if (piece.length === 0) return;
    this.size += piece.length;
    if (this.skipped !== undefined) {
      this.skipped.tail = keepTail(this.skipped.tail, piece);
    } else if (this.size > this.maxBytes) {
      const pieces = [...this.pieces, piece];
      const head = Buffer.concat(pieces.slice(0, firstCovering(pieces, EDGE_BYTES)));
      this.skipped = {
        head: Buffer.from(head.subarray(0, EDGE_BYTES)),
        tail: pieces.reduce(keepTail, Buffer.alloc(0)),
      };
      this.pieces = [];
    } else {
      this.pieces.push(piece);
    }
  }

  private endLine(): void {
    const { skipped, size } = this;
    const line = skipped === undefined ? Buffer.concat(this.pieces) : undefined;
    this.pieces = [];
    this.size = 0;
    this.skipped = undefined;
    if (skipped !== undefined) this.refuseOversized(size, skipped.head, skipped.tail);
    else if (line !== undefined) this.deliver(line);
  }

  private deliver(line: Buffer): void {
    const text = line.toString("utf8").replace(/\r$/, "");
    if (text.trim() === "") return;
    let message: JSONRPCMessage;
    try {
      message = parseJSONRPCMessage(JSON.parse(text));
    } catch (error) {
      const reason = error instanceof SyntaxError ? error.message : "not a JSON-RPC 2.0 message";
      this.logger?.log("warning", `skipped a malformed message on stdin (${line.length} bytes): ${reason}`);
      this.onerror?.(new Error(`malformed message on stdin: ${reason}`));
      return;
    }
    try {
      this.onmessage?.(message);
    } catch (error) {
      this.onerror?.(error instanceof Error ? error : new Error(String(error)));
    }
  }

  private refuseOversized(size: number, head: Buffer, tail: Buffer): void {
    const { method, id } = describeLine(head.toString("utf8"), tail.toString("utf8"));
    const what = [method, id === undefined ? undefined : `id ${JSON.stringify(id)}`]
      .filter(Boolean)
      .join(" ");
    this.logger?.log(
      "warning",
      `skipped a ${size}-byte message on stdin${what ? ` (${what})` : ""}: over the ${this.maxBytes}-byte limit per message`,
      { bytes: size, limit: this.maxBytes, ...(method && { method }), ...(id !== undefined && { id }) },
    );
    // Only a request gets an answer: an oversized response or notification has nobody waiting for one.
    if (id === undefined || method === undefined) return;
    const hint =
      method === "tools/call"
        ? " To upload an image, save it to a file and pass its path to upload_image (path) instead of data_base64."
        : "";
    void this.send({
      jsonrpc: "2.0",
      id,
      error: {
        code: ProtocolErrorCode.InvalidRequest,
        message:
          `The message (${size} bytes) exceeded the ${describeLimit(this.maxBytes)} limit per message on stdio ` +
          `and was not read.${hint}`,
        data: { bytes: size, limit: this.maxBytes },
      },
    }).catch(() => undefined);
  }

  private readonly onStdinError = (error: Error): void => {
    this.onerror?.(error);
  };

  private readonly onStdoutError = (error: Error): void => {
    if (this.closed) return;
    this.onerror?.(error);
    void this.close();
  };
}

function describeLimit(bytes: number): string {
  const mib = bytes / (1024 * 1024);
  return Number.isInteger(mib) ? `${bytes}-byte (${mib} MiB)` : `${bytes}-byte`;
}

/** How many of the first pieces it takes to hold `bytes` bytes (all of them if they hold fewer). */
function firstCovering(pieces: readonly Buffer[], bytes: number): number {
  let held = 0;
  for (let count = 0; count < pieces.length; count++) {
    held += pieces[count]?.length ?? 0;
    if (held >= bytes) return count + 1;
  }
  return pieces.length;
}

function keepTail(tail: Buffer, piece: Buffer): Buffer {
  if (piece.length >= EDGE_BYTES) return Buffer.from(piece.subarray(piece.length - EDGE_BYTES));
  const joined = Buffer.concat([tail, piece]);
  return joined.length > EDGE_BYTES ? Buffer.from(joined.subarray(joined.length - EDGE_BYTES)) : joined;
}

const SCALAR = String.raw`(-?\d{1,16}|"(?:[^"\\]|\\.){0,200}")`;
// Top-level members with a scalar value at the start of the line (before the first object or array
// value), and at its end (after the last one): where an id and a method sit in practice.
const HEAD = new RegExp(String.raw`^\s*\{((?:\s*"[a-z]{1,10}"\s*:\s*${SCALAR}\s*,)*)`);
const TAIL = new RegExp(String.raw`((?:,\s*"[a-z]{1,10}"\s*:\s*${SCALAR}\s*)+)\}\s*$`);
const MEMBER = new RegExp(String.raw`"([a-z]{1,10})"\s*:\s*${SCALAR}`, "g");

/** The request's method and id, when the kept head or tail of a skipped line shows them. */
function describeLine(head: string, tail: string): { method?: string; id?: string | number } {
  const found: { method?: string; id?: string | number } = {};
  const members = `${HEAD.exec(head)?.[1] ?? ""} ${TAIL.exec(tail.replace(/\r$/, ""))?.[1] ?? ""}`;
  for (const [, key, raw] of members.matchAll(MEMBER)) {
    const value = parseScalar(raw ?? "");
    if (
      key === "id" &&
      found.id === undefined &&
      (typeof value === "string" || Number.isSafeInteger(value))
    ) {
      found.id = value as string | number;
    }
    if (key === "method" && found.method === undefined && typeof value === "string") found.method = value;
  }
  return found;
}

function parseScalar(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return undefined;
  }
}
