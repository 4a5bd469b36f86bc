/** The typed client of the generation service: one method per endpoint, each answer read by shapes.ts. */
import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { GenerationError } from "./errors.js";
import { HttpTransport, type HttpOptions } from "./http.js";
import {
  isObject,
  toImageResult,
  toStartedVideo,
  toUploadResult,
  toVideoPage,
  toVideoStatus,
} from "./shapes.js";
import type {
  GenerateImageBody,
  GenerateVideoBody,
  GenerationApi,
  ImageResult,
  JsonObject,
  RequestOptions,
  StartedVideo,
  UploadSource,
  VideoStatus,
} from "./types.js";

export interface ClientOptions extends Omit<HttpOptions, "onStatus"> {
  /** Told what an answer carried that was unusable and replaced or dropped: field paths, never values. */
  onWarning?: (message: string, data: { video_id?: string }) => void;
  /** False for a caller's own key over HTTP: `keyState` is "unknown" until the service accepts it. */
  trustedKey?: boolean;
}

/** What the service has said of the key: nothing yet, accepted (a 2xx answer), or refused (401 before any). */
export type KeyState = "unknown" | "accepted" | "refused";

/** Warnings already reported, so a task polled every few seconds is not reported at every poll. */
const WARNED_MEMORY = 200;

export class GenerationClient implements GenerationApi {
  private readonly http: HttpTransport;
  private readonly warned = new Set<string>();
  private state: KeyState;
  private refusal: GenerationError | undefined;
  private asking: Promise<void> | undefined;

  constructor(private readonly options: ClientOptions) {
    this.state = options.trustedKey === false ? "unknown" : "accepted";
    this.http = new HttpTransport({
      ...options,
      onStatus: (status) => {
        if (this.state !== "unknown") return;
        if (status >= 200 && status < 300) this.state = "accepted";
        else if (status === 401) this.state = "refused";
      },
    });
  }

  /** POST /generate. Sent once: a failure that may have charged is reported, never retried here. */
  async generateVideo(body: GenerateVideoBody, options: RequestOptions = {}): Promise<StartedVideo> {
    return this.warn(
      toStartedVideo(await this.http.call("POST", "generate", { json: body, retry: false, ...options })),
    );
  }

  /** POST /generate-image. Sent once, like generateVideo. */
  async generateImage(body: GenerateImageBody, options: RequestOptions = {}): Promise<ImageResult> {
    const data = await this.http.call("POST", "generate-image", { json: body, retry: false, ...options });
    return toImageResult(data, body.images ?? []);
  }

  async listVideos({ page, limit }: { page: number; limit: number }, options: RequestOptions = {}) {
    const query = { page: String(page), limit: String(limit) };
    const data = await this.http.call("GET", "videos", { query, retry: true, ...options });
    return toVideoPage(data, page, limit);
  }

  async getVideo(videoId: string, options: RequestOptions = {}): Promise<VideoStatus> {
    // Background polls are not retried here: the poll engine backs off and keeps the budget fair itself.
    const data = await this.http.call("GET", `videos/${encodePathSegment(videoId)}`, {
      retry: options.priority !== "background",
      idRoute: true,
      ...options,
    });
    return this.warn(toVideoStatus(data, videoId));
  }

  /**
   * POST /upload as multipart field `image`, streamed with its exact length; free, so retried, each attempt
   * reading the source afresh. An error of the source itself (the file changed) ends the call.
   */
  async upload(source: UploadSource, options: RequestOptions = {}) {
    const boundary = `----generation-mcp-${randomBytes(12).toString("hex")}`;
    // What browsers do in a multipart header: a quote and line breaks are percent-encoded.
    const filename = source.filename.replace(/["\r\n]/g, (c) => encodeURIComponent(c));
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="${filename}"\r\n` +
        `Content-Type: ${source.contentType.replace(/[\r\n]/g, "")}\r\n\r\n`,
    );
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
    const headers = {
      "content-type": `multipart/form-data; boundary=${boundary}`,
      "content-length": `${head.length + source.size + tail.length}`,
    };
    let failed: { error: unknown } | undefined;
    // Only the source's own failures are recorded: the body's destruction arrives at a `yield` instead.
    const read = async <T>(step: () => T | Promise<T>): Promise<T> => {
      try {
        return await step();
      } catch (error) {
        failed ??= { error };
        throw error;
      }
    };
    async function* parts(): AsyncGenerator<Uint8Array> {
      yield head;
      const chunks = await read(() => source.open()[Symbol.asyncIterator]());
      try {
        for (;;) {
          const step = await read(() => chunks.next());
          if (step.done === true) break;
          yield step.value as Uint8Array;
        }
      } finally {
        await chunks.return?.();
      }
      yield tail;
    }
    const attempt = () => {
      if (failed !== undefined) throw failed.error;
      const body = Readable.from(parts(), { objectMode: false });
      // The HTTP client listens while it sends; an error after it let go must not become an unhandled event.
      body.on("error", () => {});
      return { body, headers };
    };
    try {
      const data = await this.http.call("POST", "upload", {
        stream: attempt,
        retry: true,
        timeoutMs: 120_000,
        ...options,
      });
      return toUploadResult(data);
    } catch (error) {
      // The HTTP layer may have wrapped it (a broken connection, a mismatched length): the cause wins.
      throw failed?.error ?? error;
    }
  }

  async getCredits(options: RequestOptions = {}): Promise<JsonObject> {
    const data = await this.http.call("GET", "credits", { retry: true, ...options });
    return isObject(data) ? data : { credits: data };
  }

  get keyState(): KeyState {
    return this.state;
  }

  /** Resolves once the service has accepted the key (asking GET /credits, free, if need be), else rejects. */
  async ensureAccepted(): Promise<void> {
    if (this.state === "accepted") return;
    if (this.state === "refused" && this.refusal !== undefined) throw this.refusal;
    // Calls that arrive together share one question.
    this.asking ??= this.getCredits({ priority: "foreground" })
      .then(() => undefined)
      .catch((error: unknown) => {
        if (error instanceof GenerationError && error.code === "unauthorized") this.refusal = error;
        throw error;
      })
      .finally(() => (this.asking = undefined));
    return this.asking;
  }

  private warn<T extends { video_id: string; warnings?: string[] }>(result: T): T {
    for (const warning of result.warnings ?? []) {
      const key = `${result.video_id}\n${warning}`;
      if (this.warned.has(key)) continue;
      this.warned.add(key);
      if (this.warned.size > WARNED_MEMORY) this.warned.delete(this.warned.values().next().value ?? "");
      this.options.onWarning?.(warning, { video_id: result.video_id });
    }
    return result;
  }

  close(): Promise<void> {
    return this.http.close();
  }
}

/** Encodes an id as one path segment; dot segments are encoded too so URL parsing cannot climb the path. */
export function encodePathSegment(id: string): string {
  const encoded = encodeURIComponent(id);
  return /^\.+$/.test(encoded) ? encoded.replace(/\./g, "%2E") : encoded;
}
