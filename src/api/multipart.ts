/**
 * The multipart/form-data body of an upload: one file field, streamed, with an exact Content-Length.
 * Each attempt gets a fresh body that opens a fresh source stream (from byte 0) only once every stream
 * of the attempts before has settled; `settle()` ends and awaits them all. Errors thrown by the source
 * (a file that changed while read) are recorded, so the caller can report that error itself whatever
 * the HTTP layer made of it, and a retry fails at once instead of sending the file again.
 */
import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import type { UploadSource } from "./types.js";

export interface MultipartAttempt {
  body: Readable;
  headers: Record<string, string>;
}

export class MultipartUpload {
  private readonly head: Buffer;
  private readonly tail: Buffer;
  private readonly contentType: string;
  /** Every stream made for this upload (bodies and the sources they opened) until it has closed. */
  private readonly streams = new Map<Readable, { attempt: number; closed: Promise<void> }>();
  private attempts = 0;
  private failure: { error: unknown } | undefined;

  constructor(
    private readonly field: string,
    private readonly source: UploadSource,
  ) {
    const boundary = `----generation-mcp-${randomBytes(12).toString("hex")}`;
    this.contentType = `multipart/form-data; boundary=${boundary}`;
    this.head = Buffer.from(
      `--${boundary}\r\n` +
        `Content-Disposition: form-data; name="${quote(this.field)}"; filename="${quote(source.filename)}"\r\n` +
        `Content-Type: ${source.contentType.replace(/[\r\n]/g, "")}\r\n\r\n`,
      "utf8",
    );
    this.tail = Buffer.from(`\r\n--${boundary}--\r\n`, "utf8");
  }

  /** What the source threw (its first error), if it threw: the real cause of a failed attempt. */
  get sourceError(): { error: unknown } | undefined {
    return this.failure;
  }

  /** A new body for one attempt of the request. */
  attempt(): MultipartAttempt {
    const attempt = ++this.attempts;
    const body = Readable.from(this.generate(attempt), { objectMode: false });
    this.track(body, attempt);
    return {
      body,
      headers: {
        "content-type": this.contentType,
        "content-length": String(this.head.length + this.source.size + this.tail.length),
      },
    };
  }

  /** Destroys every stream still open and resolves once all have closed (no read left pending). */
  async settle(): Promise<void> {
    for (const stream of this.streams.keys()) stream.destroy();
    await this.settledBefore(Infinity);
  }

  private async *generate(attempt: number): AsyncGenerator<Buffer, void, undefined> {
    // Never two readers of the source at once: the earlier attempts' streams must have closed first.
    await this.settledBefore(attempt);
    if (this.failure !== undefined) throw this.failure.error;
    yield this.head;
    let stream: Readable;
    try {
      stream = this.source.open();
    } catch (error) {
      this.failure ??= { error };
      throw error;
    }
    this.track(stream, attempt);
    const chunks = stream[Symbol.asyncIterator]();
    try {
      for (;;) {
        // Only the source's own failures are recorded: an error the body is destroyed with arrives at
        // the `yield` below, not here.
        let step: IteratorResult<unknown>;
        try {
          step = await chunks.next();
        } catch (error) {
          this.failure ??= { error };
          throw error;
        }
        if (step.done === true) break;
        const chunk = step.value;
        yield Buffer.isBuffer(chunk)
          ? chunk
          : typeof chunk === "string"
            ? Buffer.from(chunk)
            : Buffer.from(chunk as Uint8Array);
      }
    } finally {
      // Leaving early (the body was destroyed) destroys the source; its close is awaited by settle().
      await chunks.return?.();
    }
    yield this.tail;
  }

  private track(stream: Readable, attempt: number): void {
    // The HTTP client listens to the body while it sends it, and this generator reads the source: their
    // errors reach the request through those. This listener only keeps an error raised after they let
    // go from becoming an unhandled 'error' event, which would end the process.
    stream.on("error", () => {});
    const closed = stream.closed
      ? Promise.resolve()
      : new Promise<void>((resolve) => stream.once("close", () => resolve()));
    this.streams.set(stream, { attempt, closed });
    void closed.then(() => this.streams.delete(stream));
  }

  // A body closes only after its generator returned, and that generator may have opened a source just
  // before: wait for rounds of streams until none of those attempts is left.
  private async settledBefore(attempt: number): Promise<void> {
    for (;;) {
      const open = [...this.streams.values()].filter((entry) => entry.attempt < attempt);
      if (open.length === 0) return;
      await Promise.all(open.map((entry) => entry.closed));
    }
  }
}

// What browsers do in a multipart header: a quote and line breaks are percent-encoded.
function quote(value: string): string {
  return value.replace(/"/g, "%22").replace(/\r/g, "%0D").replace(/\n/g, "%0A");
}
