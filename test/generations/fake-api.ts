/**
 * An in-memory stand-in for the REST client: a fixed-window rate limiter like the service's, videos whose
 * status advances with the clock, scripted failures, and counters for every call.
 */
import { AbortedError, GenerationError, RateLimitError } from "../../src/api/errors.js";
import { toImageResult } from "../../src/api/shapes.js";
import type { HeaderBag } from "../../src/api/rate-budget.js";
import type { RateBudget } from "../../src/api/rate-budget.js";
import type {
  GenerateImageBody,
  GenerateVideoBody,
  GenerationApi,
  ImageResult,
  JsonObject,
  RequestOptions,
  StartedVideo,
  VideoPage,
  VideoStatus,
} from "../../src/api/types.js";

/** A budget that never makes anyone wait. */
export class UnlimitedBudget implements RateBudget {
  async acquire(): Promise<void> {}
  observe(): void {}
  retryDelayMs(): number {
    return 1000;
  }
}

export interface FakeVideo {
  id: string;
  prompt: string;
  model: string;
  created_at: string;
  /** Epoch ms at which the video completes. */
  doneAt: number;
}

type Failure = Error | ((id: string) => Error | undefined);

export class FakeApi implements Pick<
  GenerationApi,
  "getVideo" | "generateVideo" | "generateImage" | "listVideos"
> {
  readonly videos = new Map<string, FakeVideo>();
  readonly getCalls: { id: string; at: number; priority: string | undefined }[] = [];
  readonly generateCalls: {
    body: GenerateVideoBody | GenerateImageBody;
    options: RequestOptions | undefined;
  }[] = [];
  readonly listCalls: number[] = [];
  rateLimited = 0;
  /** Arrival time of every request the service saw. */
  readonly served: number[] = [];
  /** Failures thrown by the next calls of each kind, in order. */
  readonly getFailures: Failure[] = [];
  readonly generateFailures: Error[] = [];
  readonly listFailures: Error[] = [];
  /** Extra items the history returns (for reconciliation). */
  readonly historyExtra: JsonObject[] = [];
  private windowStart = Number.NEGATIVE_INFINITY;
  private used = 0;
  private nextId = 1;

  constructor(
    private readonly options: {
      budget?: RateBudget;
      limit?: number;
      latencyMs?: number;
      /** How long a new video takes to complete. */
      renderMs?: number;
    } = {},
  ) {}

  get budget(): RateBudget {
    return this.options.budget ?? new UnlimitedBudget();
  }

  addVideo(id: string, renderMs = this.options.renderMs ?? 60_000, prompt = "a cat"): FakeVideo {
    const video = {
      id,
      prompt,
      model: "vendor-video-1-5-pro",
      created_at: new Date(Date.now()).toISOString(),
      doneAt: Date.now() + renderMs,
    };
    this.videos.set(id, video);
    return video;
  }

  getCount(id: string): number {
    return this.getCalls.filter((call) => call.id === id).length;
  }

  async getVideo(videoId: string, options?: RequestOptions): Promise<VideoStatus> {
    await this.enter(options, () =>
      this.getCalls.push({ id: videoId, at: Date.now(), priority: options?.priority }),
    );
    const failure = this.getFailures.shift();
    const error = typeof failure === "function" ? failure(videoId) : failure;
    if (error) throw error;
    const video = this.videos.get(videoId);
    if (!video) throw new GenerationError("not_found", `No video ${videoId}.`, { status: 404 });
    const status = Date.now() >= video.doneAt ? "completed" : "processing";
    return {
      video_id: videoId,
      status,
      video_url: status === "completed" ? `https://cdn.example/${videoId}.mp4` : undefined,
      error: undefined,
      raw: { video_id: videoId, status },
    };
  }

  async generateVideo(body: GenerateVideoBody, options?: RequestOptions): Promise<StartedVideo> {
    await this.enter(options);
    this.generateCalls.push({ body, options });
    const failure = this.generateFailures.shift();
    const id = `vid_${this.nextId++}`;
    const video = this.addVideo(id, undefined, body.prompt);
    video.model = body.model ?? "vendor-video-1-5-pro";
    if (failure) {
      // A failure that "may have been processed" still created the task, like a reset after the service acted.
      const acted =
        failure instanceof GenerationError &&
        (failure.maybeProcessed || ["upstream_error", "internal_error", "timeout"].includes(failure.code));
      if (!acted) this.videos.delete(id);
      throw failure;
    }
    return { video_id: id, status: "queued" };
  }

  async generateImage(body: GenerateImageBody, options?: RequestOptions): Promise<ImageResult> {
    await this.enter(options);
    this.generateCalls.push({ body, options });
    const failure = this.generateFailures.shift();
    if (failure) throw failure;
    const id = `img_${this.nextId++}`;
    const urls = [`https://cdn.example/${id}.png`];
    return toImageResult({ image_id: id, image_urls: urls });
  }

  async listVideos(query: { page?: number; limit?: number }, options?: RequestOptions): Promise<VideoPage> {
    await this.enter(options);
    this.listCalls.push(Date.now());
    const failure = this.listFailures.shift();
    if (failure) throw failure;
    const items: JsonObject[] = [...this.videos.values()]
      .map((video) => ({
        video_id: video.id,
        prompt: video.prompt,
        model: video.model,
        created_at: video.created_at,
        status: "processing",
      }))
      .reverse();
    return {
      items: [...this.historyExtra, ...items],
      page: query.page ?? 1,
      limit: query.limit ?? 20,
      totals: {},
    };
  }

  /** Budget, then the service's fixed window (opened by the first request, like the sandbox). */
  private async enter(options: RequestOptions | undefined, onArrive?: () => void): Promise<void> {
    const budget = this.budget;
    await budget.acquire(options?.priority ?? "foreground", options?.signal);
    const limit = this.options.limit ?? 60;
    const now = Date.now();
    if (now >= this.windowStart + 60_000) {
      this.windowStart = now;
      this.used = 0;
    }
    onArrive?.();
    this.served.push(now);
    const allowed = this.used < limit;
    if (allowed) this.used += 1;
    const end = this.windowStart + 60_000;
    const headers: HeaderBag = {
      "x-ratelimit-limit": String(limit),
      "x-ratelimit-remaining": String(Math.max(0, limit - this.used)),
      "x-ratelimit-reset": String(Math.ceil(end / 1000)),
    };
    if (!allowed) {
      headers["retry-after"] = String(Math.max(1, Math.ceil((end - now) / 1000)));
      budget.observe(429, headers);
      this.rateLimited += 1;
      throw new RateLimitError("Too many requests.", { retryAtMs: end });
    }
    // Headers come back after the latency, as with a real answer.
    try {
      await this.latency(options?.signal);
    } catch (error) {
      budget.observe(0, {});
      throw error;
    }
    budget.observe(200, headers);
  }

  private latency(signal: AbortSignal | undefined): Promise<void> {
    const ms = this.options.latencyMs ?? 0;
    if (ms === 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, ms);
      signal?.addEventListener(
        "abort",
        () => {
          clearTimeout(timer);
          reject(new AbortedError());
        },
        { once: true },
      );
    });
  }
}
