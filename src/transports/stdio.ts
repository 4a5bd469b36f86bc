/**
 * MCP over stdio, in either era (the SDK's `serveStdio` decides per connection), on the SDK's
 * StdioServerTransport behind one adapter (`limitLines`): the SDK closes the session, saying nothing, on a
 * message over its buffer; here a longer line is skipped as it streams in (memory stays bounded), logged, and
 * answered with an error when it shows a request id. Upstream change that would remove the adapter: an
 * option of StdioServerTransport to skip and report an over-long line instead of closing.
 */
import { Transform, type Readable, type Writable } from "node:stream";
import { ProtocolErrorCode } from "@modelcontextprotocol/server";
import { StdioServerTransport, serveStdio as sdkServeStdio } from "@modelcontextprotocol/server/stdio";
import { MAX_MESSAGE_BYTES } from "../config/index.js";
import type { LogLevel, Logger } from "../logger.js";
import { createMcpServer } from "../mcp/server.js";
import { LEGACY_REVISIONS, MODERN } from "../mcp/revisions.js";
import type { KeyParts, Session } from "../mcp/session.js";
import type { UploadDesk } from "../uploads/desk.js";

/** Soon enough to take up a stopped process's tasks, late enough that the opening exchange never waits. */
const RUNTIME_AFTER_MS = 250;
/** How much of the start and the end of a skipped line is kept to find its method and id. */
const EDGE_BYTES = 1024;
const NEWLINE = 0x0a;

export interface StdioTransportOptions {
  stdin?: Readable;
  stdout?: Writable;
  maxMessageBytes?: number;
  logger?: { log(level: LogLevel, message: string, data?: Record<string, unknown>): void };
}

export function stdioTransport(options: StdioTransportOptions = {}): StdioServerTransport {
  const limit = options.maxMessageBytes ?? MAX_MESSAGE_BYTES;
  const lines = limitLines(
    limit,
    (size, head, tail) => {
      const { method, id } = describeLine(head.toString("utf8"), tail.toString("utf8"));
      const what = [method, id === undefined ? undefined : `id ${JSON.stringify(id)}`]
        .filter(Boolean)
        .join(" ");
      options.logger?.log(
        "warning",
        `skipped a ${size}-byte message on stdin${what ? ` (${what})` : ""}: over the ${limit}-byte limit per message`,
        { bytes: size, limit, ...(method && { method }), ...(id !== undefined && { id }) },
      );
      // Only a request gets an answer: an oversized response or notification has nobody waiting for one.
      if (id === undefined || method === undefined) return;
      const hint =
        method === "tools/call"
          ? " To upload an image, save it to a file and pass its path to upload_image (path) instead of data_base64."
          : "";
      const mib = limit / (1024 * 1024);
      const shown = Number.isInteger(mib) ? `${limit}-byte (${mib} MiB)` : `${limit}-byte`;
      const message = `The message (${size} bytes) exceeded the ${shown} limit per message on stdio and was not read.${hint}`;
      const error = { code: ProtocolErrorCode.InvalidRequest, message, data: { bytes: size, limit } };
      void transport.send({ jsonrpc: "2.0", id, error }).catch(() => undefined);
    },
    (size) =>
      options.logger?.log("warning", `skipped a malformed message on stdin (${size} bytes): not JSON`),
  );
  // A complete line within the limit never makes the SDK's buffer overflow.
  const transport = new StdioServerTransport((options.stdin ?? process.stdin).pipe(lines), options.stdout, {
    maxBufferSize: limit + 2,
  });
  return transport;
}

/** stdin as whole lines of at most `limit` bytes; a longer one goes to `oversized`, never buffered whole. */
function limitLines(
  limit: number,
  oversized: (size: number, head: Buffer, tail: Buffer) => void,
  malformed: (size: number) => void,
): Transform {
  let pieces: Buffer[] = [];
  let size = 0;
  let skipped: { head: Buffer; tail: Buffer } | undefined;
  const take = (piece: Buffer) => {
    size += piece.length;
    if (skipped !== undefined) skipped.tail = keepTail(skipped.tail, piece);
    else if (size <= limit) pieces.push(piece);
    else {
      const all = [...pieces, piece];
      skipped = {
        head: Buffer.concat(all, Math.min(size, EDGE_BYTES)),
        tail: all.reduce(keepTail, Buffer.alloc(0)),
      };
      pieces = [];
    }
  };
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      for (let from = 0; from < chunk.length;) {
        const newline = chunk.indexOf(NEWLINE, from);
        take(chunk.subarray(from, newline === -1 ? chunk.length : newline));
        if (newline === -1) break;
        from = newline + 1;
        const line = Buffer.concat(pieces);
        const first = line.find((byte) => byte > 0x20);
        if (skipped !== undefined) oversized(size, skipped.head, skipped.tail);
        else if (first === 0x7b || first === 0x5b) this.push(Buffer.concat([line, Buffer.of(NEWLINE)]));
        else if (first !== undefined) malformed(size);
        pieces = [];
        size = 0;
        skipped = undefined;
      }
      done();
    },
  });
}

function keepTail(tail: Buffer, piece: Buffer): Buffer {
  const joined = piece.length >= EDGE_BYTES ? piece : Buffer.concat([tail, piece]);
  return Buffer.from(joined.subarray(Math.max(0, joined.length - EDGE_BYTES)));
}

const SCALAR = String.raw`(-?\d{1,16}|"(?:[^"\\]|\\.){0,200}")`;
// Scalar top-level members at the start and the end of the line: where an id and a method sit in practice.
const HEAD = new RegExp(String.raw`^\s*\{((?:\s*"[a-z]{1,10}"\s*:\s*${SCALAR}\s*,)*)`);
const TAIL = new RegExp(String.raw`((?:,\s*"[a-z]{1,10}"\s*:\s*${SCALAR}\s*)+)\}\s*$`);
const MEMBER = new RegExp(String.raw`"([a-z]{1,10})"\s*:\s*${SCALAR}`, "g");

/** The request's method and id, when the kept head or tail of a skipped line shows them. */
function describeLine(head: string, tail: string): { method?: string; id?: string | number } {
  const found: { method?: string; id?: string | number } = {};
  const members = `${HEAD.exec(head)?.[1] ?? ""} ${TAIL.exec(tail.replace(/\r$/, ""))?.[1] ?? ""}`;
  for (const [, key, raw] of members.matchAll(MEMBER)) {
    let value: unknown;
    try {
      value = JSON.parse(raw ?? "");
    } catch {
      continue;
    }
    if (key === "id" && (typeof value === "string" || Number.isSafeInteger(value))) {
      found.id ??= value as string | number;
    }
    if (key === "method" && typeof value === "string") found.method ??= value;
  }
  return found;
}

export interface StdioRuntime extends KeyParts {
  /** The upload links it makes: served by a loopback listener of this process while one is open. */
  uploads: UploadDesk;
  close(): Promise<void>;
}

export function serveStdio(options: {
  version: string;
  session: Omit<Session, "runtime">;
  /** Makes the runtime (loaded only then: it is not on the start-up path). */
  makeRuntime(): Promise<StdioRuntime>;
  /** The process's log: the runtime's lines (masked by its own scoped logger) reach its sinks too. */
  logger: Logger;
}) {
  const { logger } = options;
  // A runtime that could not be made is not kept: the next call tries again (the folder may be fixed).
  let runtime: Promise<StdioRuntime> | undefined;
  const runtimeOnce = (): Promise<StdioRuntime> => {
    const making = (runtime ??= options.makeRuntime().then(async (made) => {
      const { loopbackLinks } = await import("../uploads/listener.js");
      made.uploads.serveAt(loopbackLinks(made.uploads, logger));
      return made;
    }));
    making.catch(() => {
      if (runtime === making) runtime = undefined;
    });
    return making;
  };
  const early = setTimeout(() => {
    runtimeOnce().catch((error: unknown) =>
      logger.error("Could not get ready to take up earlier tasks.", { error: String(error) }),
    );
  }, RUNTIME_AFTER_MS);
  const session: Session = { ...options.session, runtime: runtimeOnce };
  const transport = stdioTransport({ logger });
  const handle = sdkServeStdio(
    ({ era }) =>
      createMcpServer({
        version: options.version,
        session,
        // A 2025 session's revision is what `initialize` negotiates; until then, the newest.
        revision: era === "modern" ? MODERN : { era: "legacy", version: LEGACY_REVISIONS[0] },
        negotiates: era !== "modern",
        logger,
        ...(era !== "modern" && { sessionLog: logger }),
      }),
    {
      transport,
      onerror: (error) =>
        // What the SDK skipped: a line that is JSON but not a JSON-RPC message (its schema's issues).
        "issues" in error
          ? logger.warning("skipped a malformed message on stdin: not a JSON-RPC 2.0 message")
          : logger.debug("stdio: a message could not be handled", { error: String(error) }),
    },
  );
  // Resolves once the connection has ended (the client closed stdin, or stdout broke).
  const finished = new Promise<void>((resolve) => {
    process.stdin.once("end", resolve);
    process.stdout.once("error", () => resolve());
  });
  return {
    finished,
    /** Lets running calls answer (a started task with its video_id), then closes the runtime and the channel. */
    async close() {
      clearTimeout(early);
      await runtime?.then((made) => made.close()).catch(() => undefined);
      await handle.close();
    },
  };
}
