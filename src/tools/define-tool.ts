/**
 * A tool is a plain object: zod input and output schemas, honest annotations, a handler returning structured
 * output and a text mirror of it; below, the schema fields several tools share, and the calls' deadlines.
 */
import type { ToolAnnotations } from "@modelcontextprotocol/server";
import * as z from "zod";
import type { AdviceMode } from "../advice.js";
import { isHttpUrl } from "../api/shapes.js";
import type { GenerationApi, RequestOptions } from "../api/types.js";
import type { Config } from "../config/index.js";
import type { Logger } from "../logger.js";
import { MAX_PROMPT_LENGTH, parseAspectRatio } from "../models.js";
import type { Redactor } from "../redact.js";
import type { DailySpend } from "../spend/daily.js";
import type { OwnershipStore } from "../state/records.js";
import type { PollEngine } from "../generations/poll-engine.js";
import type { TaskStarter } from "../generations/starter.js";
import type { CallerUploads } from "../uploads/desk.js";

export interface ServerDeps {
  api: GenerationApi;
  poller: PollEngine;
  starter: TaskStarter;
  /** Who started which task (with `scope`, a caller sees only its own). */
  ownership: OwnershipStore;
  config: Config;
  logger: Logger;
  /** Masks the caller's key and the process's secrets in whatever the call emits (redact.ts). */
  redactor: Redactor;
  /** How this call's user changes a setting: what next steps name (advice.ts). */
  advice: AdviceMode;
  /** The folders local files may be read from, including the client's MCP roots when it offers them. */
  allowedDirs(): Promise<string[]>;
  /** Hosts a media download may reach on a private address: the configured service's own (the sandbox). */
  mediaAllowHosts: readonly string[];
  /** Aborts when the server is shutting down: every call then answers at once with what it has. */
  stopping: AbortSignal;
  /** Registers a running call, so a shutdown can wait for its answer to go out. */
  track?(call: Promise<unknown>): void;
  /** Whether `download: true` may write here: always over stdio, over HTTP only with GENERATION_OUTPUT_DIR. */
  downloads: boolean;
  /** The caller, when one service key serves several (the HTTP gateway): never handed another's task. */
  scope?: string | undefined;
  /** Who is calling (Caller.id): what spend limits count per. */
  callerId: string;
  /** The daily limit (GENERATION_DAILY_CREDITS), shared with the task starter; undefined: none. */
  daily?: DailySpend | undefined;
  /** Upload links for this caller (`upload_image` with `from_user`). */
  uploads: CallerUploads;
}

/** What the deps of one connection (stdio) or request (HTTP) are made from. */
export interface DepsHooks {
  /** The client's MCP roots as file URIs; empty when the client offers none. Cached until they change. */
  clientRoots(): Promise<string[]>;
  scope?: string | undefined;
  /** Caller.id; when absent (a task taken up again after a restart starts nothing), the runtime's own. */
  callerId?: string | undefined;
}

export type DepsFactory = (hooks: DepsHooks) => ServerDeps;

/** What a tool needs to take a video task up again after a restart (or from a replica that died). */
export interface ResumeInfo {
  videoId: string;
  /** Tool-specific values saved at start (e.g. download, estimated_credits); never a secret. */
  saved: Record<string, unknown>;
  /** How long the resumed wait may last: what is left of the task's ttl. */
  windowMs: number;
}

export interface ToolContext {
  /** Aborts when the client cancels the call or the server is shutting down. */
  signal: AbortSignal;
  /** Sends an MCP progress notification when the client asked for them; strictly increasing. */
  progress(message: string): Promise<void>;
  logger: Logger;
  /** Epoch ms at which the call arrived: its wait window and deadlines count from here. */
  startedAt: number;
  /**
   * Asks the client to open a link for the person, answering by `deadline`; `deferred`: the question is this
   * call's answer, and the client calls again with the person's answer in `linkAnswer`.
   */
  openLink(link: { id: string; url: string; message: string }, deadline: number): Promise<LinkAnswer>;
  /** In a call that brings back the answer to a deferred `openLink`: which link, and what was answered. */
  linkAnswer: { id: string; answer: "accepted" | "declined" } | undefined;
}

export type LinkAnswer = "accepted" | "declined" | "unavailable" | "deferred";

export interface ToolDefinition<Input extends z.ZodType = z.ZodType, Output extends z.ZodType = z.ZodType> {
  name: string;
  title: string;
  description: string;
  input: Input;
  output: Output;
  annotations: ToolAnnotations;
  handler(args: z.output<Input>, deps: ServerDeps, context: ToolContext): Promise<z.input<Output>>;
  summarize(result: z.output<Output>): string;
  /** Its results are shown by the MCP Apps viewer (`_meta.ui.resourceUri`, see src/ui/viewer.ts). */
  viewer?: boolean;
  /** Present when the tool may run as an MCP task (in either protocol era); see src/mcp/tasks/. */
  task?: {
    /** The arguments of the background run, whose wait may last the task's whole ttl. */
    prepare?(args: z.output<Input>, ttlMs: number): z.output<Input>;
    /** Values kept with the task record, for a resumption after a restart (no secrets). */
    save?(args: z.output<Input>): Record<string, unknown>;
    /** Takes a started task up again after a restart, from its video_id; the result a plain call gives. */
    resume?(info: ResumeInfo, deps: ServerDeps, context: ToolContext): Promise<z.input<Output>>;
  };
}

export function defineTool<Input extends z.ZodType, Output extends z.ZodType>(
  definition: ToolDefinition<Input, Output>,
): ToolDefinition<Input, Output> {
  return definition;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export const fields = {
  prompt: (what: string) =>
    z
      .string()
      .trim()
      .min(1, "must not be empty")
      .max(MAX_PROMPT_LENGTH, `must be at most ${MAX_PROMPT_LENGTH} characters`)
      .describe(`Text description of the ${what} (1-${MAX_PROMPT_LENGTH} characters).`),
  httpUrl: (description: string) =>
    z.string().max(4096).refine(isHttpUrl, "must be an http(s) URL").describe(description),
  localPath: (description: string) => z.string().min(1, "must not be empty").max(4096).describe(description),
  aspectRatio: (fallback: string) =>
    z
      .string()
      .refine(
        (value) => parseAspectRatio(value) !== undefined,
        "must be W:H with whole numbers 1-64, e.g. 16:9",
      )
      .describe(`Width:height of the output, e.g. 16:9, 9:16, 1:1 (default ${fallback}).`),
  download: (returned: string) =>
    z
      .boolean()
      .describe(
        `Also save the finished file into GENERATION_OUTPUT_DIR and return ${returned} (default false).`,
      ),
  dryRun: z
    .boolean()
    .describe("Only validate and estimate the cost in credits; nothing is started and nothing is charged."),
  allowDuplicate: z
    .boolean()
    .describe(
      "Default false: an identical request (same parameters and image bytes) made in the last 10 minutes returns " +
        "that earlier task with reused: true instead of spending credits again. true starts a new task.",
    ),
  timeout: z
    .number()
    .min(0)
    .max(3600)
    .describe(
      "Seconds to wait for the result in this call (0-3600; default GENERATION_WAIT_TIMEOUT_S, 45). Many clients " +
        "cut a tool call at about 60 s; when the window ends the task keeps running.",
    ),
  videoId: z
    .string()
    .min(1, "must not be empty")
    .max(256, "must be at most 256 characters")
    .refine((value) => value !== "." && value !== "..", "is not a task id")
    // eslint-disable-next-line no-control-regex
    .refine((value) => !/[\u0000-\u001F\u007F]/.test(value), "must not contain control characters")
    // A lone surrogate cannot be percent-encoded into a path segment.
    .refine((value) => !LONE_SURROGATE.test(value), "must be valid Unicode text")
    .describe("The video_id returned by generate_video (or found with list_videos)."),
};

/** Guidance in `structuredContent` too: some clients hand the model only that (Codex CLI, Claude Code). */
export const guidanceFields = {
  next_step: z.string().optional().describe("What to do next, when there is something to do."),
  notes: z
    .array(z.string())
    .optional()
    .describe(
      "What to know besides the fields: whether credits were charged, why no preview could be made, and the like.",
    ),
};

/** Fields of a video result shared by generate_video and get_status. */
export const videoResultFields = {
  video_id: z.string().optional().describe("The task id; keep it to check the task later with get_status."),
  status: z
    .string()
    .optional()
    .describe("completed, failed, or an in-progress value such as queued/processing."),
  video_url: z.string().optional().describe("Where the finished video can be fetched (when completed)."),
  error: z.unknown().optional().describe("Why the task failed (when failed)."),
  local_path: z.string().optional().describe("Where the video was saved (when download was requested)."),
  elapsed_seconds: z.number().optional().describe("How long this call waited."),
  frames: z
    .looseObject({ frames: z.number(), times_s: z.array(z.number()) })
    .optional()
    .describe(
      "When completed and previews are on: what the attached sheet of the video's frames shows (frames, layout, times_s, duration_s, width, height).",
    ),
  ...guidanceFields,
};
export const videoResult = z.object(videoResultFields);

/** Fields of a start's answer shared by generate_video and generate_image. */
export const startFields = {
  dry_run: z.boolean().optional(),
  declined: z
    .boolean()
    .optional()
    .describe("true when the user declined to confirm the cost: nothing was started or charged."),
  request: z
    .record(z.string(), z.unknown())
    .optional()
    .describe("With dry_run: the request that would be sent."),
};

/*
 * Every call answers inside the client's patience: its wait window counts from the moment it arrived, and
 * every request it makes (with retries and rate-budget waits) is over by its deadline, whatever happens.
 * Requests get at least 20 s, so a window of 0 still leaves room to start a task; a read needs at most 30 s.
 */

export function waitWindowMs(deps: ServerDeps, timeoutSeconds?: number): number {
  return (timeoutSeconds ?? deps.config.waitTimeoutS) * 1000;
}

/** Epoch ms by which every request of this call must be over. */
export function requestDeadline(context: ToolContext, windowMs: number): number {
  return context.startedAt + Math.max(windowMs, 20_000);
}

/** The options of a request the user is waiting for, over by `deadline` (default: a read's). */
export function foreground(context: ToolContext, deps: ServerDeps, deadline?: number): RequestOptions {
  deadline ??= requestDeadline(context, Math.min(waitWindowMs(deps), 30_000));
  return { signal: context.signal, priority: "foreground", deadline };
}
