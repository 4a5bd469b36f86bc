/** The typed client of the generation service: one method per endpoint, the envelope unwrapped. */
import type { Dispatcher } from "undici";
import { GenerationError } from "./errors.js";
import { HttpTransport } from "./http.js";
import { MultipartUpload } from "./multipart.js";
import {
  isObject,
  toImageResult,
  toStartedVideo,
  toUploadResult,
  toVideoPage,
  toVideoStatus,
} from "./normalize.js";
import type { RateBudget } from "./rate-budget.js";
import type { Redactor } from "../redact.js";
import type {
  GenerateImageBody,
  GenerateVideoBody,
  GenerationApi,
  ImageResult,
  JsonObject,
  RequestOptions,
  StartedVideo,
  UploadResult,
  UploadSource,
  VideoPage,
  VideoStatus,
} from "./types.js";

export interface ClientOptions {
  baseUrl: string;
  apiKey: string;
  budget: RateBudget;
  userAgent?: string;
  timeoutMs?: number;
  uploadTimeoutMs?: number;
  maxRetries?: number;
  dispatcher?: Dispatcher;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /**
   * Told when an answer carried something unusable that was replaced or dropped (a hostile status, a
   * completed task without a usable URL). The text holds field paths only, never the service's values.
   */
  onWarning?: (message: string, data: { video_id?: string }) => void;
  /** Masks the key in every answer as it arrives (see HttpOptions.redactor). */
  redactor?: Redactor;
  /**
   * The key is the operator's (stdio, gateway) and trusted as it is. False for a caller's own key over
   * HTTP: until the service has accepted it, `keyState` is "unknown" and `ensureAccepted` asks.
   */
  trustedKey?: boolean;
}

/** What the service has said of the key: nothing yet, accepted (a 2xx answer), or refused (401 before any). */
export type KeyState = "unknown" | "accepted" | "refused";

/** Warnings already reported, so a task polled every few seconds is not reported at every poll. */
const WARNED_MEMORY = 200;

export class GenerationClient implements GenerationApi {
  private readonly http: HttpTransport;
  private readonly uploadTimeoutMs: number;
  private readonly onWarning: ClientOptions["onWarning"];
  private readonly warned = new Set<string>();
  private state: KeyState;
  private refusal: GenerationError | undefined;
  private asking: Promise<void> | undefined;

  constructor(options: ClientOptions) {
    this.state = options.trustedKey === false ? "unknown" : "accepted";
    this.http = new HttpTransport({
      baseUrl: options.baseUrl,
      apiKey: options.apiKey,
      budget: options.budget,
      userAgent: options.userAgent ?? "generation-mcp",
      ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
      ...(options.maxRetries !== undefined && { maxRetries: options.maxRetries }),
      ...(options.dispatcher !== undefined && { dispatcher: options.dispatcher }),
      ...(options.sleep !== undefined && { sleep: options.sleep }),
      ...(options.redactor !== undefined && { redactor: options.redactor }),
      onStatus: (status) => {
        if (this.state !== "unknown") return;
        if (status >= 200 && status < 300) this.state = "accepted";
        else if (status === 401) this.state = "refused";
      },
    });
    this.uploadTimeoutMs = options.uploadTimeoutMs ?? 120_000;
    this.onWarning = options.onWarning;
  }

  /** POST /generate. Sent once: a failure that may have charged is reported, never retried here. */
  async generateVideo(body: GenerateVideoBody, options: RequestOptions = {}): Promise<StartedVideo> {
    const { data } = await this.http.call("POST", "generate", { json: body, retry: false, ...options });
    return this.warn(toStartedVideo(data));
  }

  /** POST /generate-image. Sent once, like generateVideo. */
  async generateImage(body: GenerateImageBody, options: RequestOptions = {}): Promise<ImageResult> {
    const { data } = await this.http.call("POST", "generate-image", { json: body, retry: false, ...options });
    return toImageResult(data, body.images ?? []);
  }

  async listVideos(
    query: { page?: number; limit?: number },
    options: RequestOptions = {},
  ): Promise<VideoPage> {
    const page = query.page ?? 1;
    const limit = query.limit ?? 20;
    const { data } = await this.http.call("GET", "videos", {
      query: { page, limit },
      retry: true,
      ...options,
    });
    return toVideoPage(data, page, limit);
  }

  async getVideo(videoId: string, options: RequestOptions = {}): Promise<VideoStatus> {
    // Background polls are not retried here: the poll engine backs off and keeps the budget fair itself.
    const { data } = await this.http.call("GET", `videos/${encodePathSegment(videoId)}`, {
      retry: options.priority !== "background",
      idRoute: true,
      ...options,
    });
    return this.warn(toVideoStatus(data, videoId));
  }

  /**
   * POST /upload as multipart field `image`, streamed; uploads spend no credits, so they may be retried.
   * Every attempt reads the source afresh from byte 0, after the previous attempt's streams settled; the
   * call returns only once every stream it made has settled, so the caller may close the source then.
   * An error thrown by the source itself (e.g. the file changed) is what the call rejects with.
   */
  async upload(source: UploadSource, options: RequestOptions = {}): Promise<UploadResult> {
    const multipart = new MultipartUpload("image", source);
    try {
      const { data } = await this.http.call("POST", "upload", {
        stream: () => multipart.attempt(),
        retry: true,
        timeoutMs: this.uploadTimeoutMs,
        ...options,
      });
      return toUploadResult(data);
    } catch (error) {
      // The HTTP layer may have wrapped it (a broken connection, a mismatched length): the cause wins.
      throw multipart.sourceError?.error ?? error;
    } finally {
      await multipart.settle();
    }
  }

  async getCredits(options: RequestOptions = {}): Promise<JsonObject> {
    const { data } = await this.http.call("GET", "credits", { retry: true, ...options });
    return isObject(data) ? data : { credits: data };
  }

  /** What the service has said of the key so far. */
  get keyState(): KeyState {
    return this.state;
  }

  /**
   * Resolves once the service has accepted the key, asking it (GET /credits, free) when nothing has shown it
   * yet; rejects with the service's refusal. Called before anything is written for a caller's own key.
   */
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
      this.onWarning?.(warning, { video_id: result.video_id });
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
