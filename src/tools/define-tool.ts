/**
 * A tool is a plain object: name, title, description for the model, zod input and output schemas, honest
 * annotations, a handler returning structured output, and a one-line text mirror of it.
 */
import type { ToolAnnotations } from "@modelcontextprotocol/server";
import type * as z from "zod";
import type { GenerationApi } from "../api/types.js";
import type { Config } from "../config/index.js";
import type { Logger } from "../logger.js";
import type { AdviceMode } from "../advice.js";
import type { Redactor } from "../redact.js";
import type { PollEngine } from "../tasks/poll-engine.js";
import type { Ownership } from "../tasks/ownership.js";
import type { TaskStarter } from "../tasks/starter.js";
import type { DailySpend } from "../spend/daily.js";
import type { ConfirmStates } from "../spend/confirm-state.js";

export interface ServerDeps {
  api: GenerationApi;
  poller: PollEngine;
  starter: TaskStarter;
  /** Who started which task (used when `scope` is set: a caller sees only its own). */
  ownership: Ownership;
  config: Config;
  logger: Logger;
  /** Masks the caller's key and the process's secrets in whatever the call emits (see redact.ts). */
  redactor: Redactor;
  /** How this call's user changes a setting: what next steps name (advice.ts). */
  advice: AdviceMode;
  /** The folders local files may be read from, including the client's MCP roots when it offers them. */
  allowedDirs(): Promise<string[]>;
  /**
   * Hosts a media download may reach even on a loopback or private address: the configured service's own
   * (the sandbox serves its media beside its API on 127.0.0.1). Everything else must be public.
   */
  mediaAllowHosts: readonly string[];
  /**
   * The configured service's origin, where it serves its media: the one origin the MCP Apps viewer may load
   * media from (its CSP). Undefined when the base URL does not parse.
   */
  mediaOrigin?: string | undefined;
  /** Aborts when the server is shutting down: every call then answers at once with what it has. */
  stopping: AbortSignal;
  /** Registers a running call, so a shutdown can wait for its answer to go out. */
  track?(call: Promise<unknown>): void;
  /**
   * Whether `download: true` may write onto this machine. Always over stdio; over HTTP only when the operator
   * set GENERATION_OUTPUT_DIR (a remote caller cannot reach the file, and must not fill the server's disk).
   */
  downloads: boolean;
  /**
   * The caller, when one service key serves several (the HTTP gateway): the duplicate guard then never
   * hands one caller's task to another.
   */
  scope?: string | undefined;
  /** Who is calling (Caller.id): what spend limits count per. */
  callerId: string;
  /** The daily limit (GENERATION_DAILY_CREDITS), shared with the task starter; undefined: none. */
  daily?: DailySpend | undefined;
  /** Mints and checks the `requestState` that ties a cost confirmation to its call (2026-07-28). */
  confirmStates: ConfirmStates;
}

/** What the deps of one connection (stdio) or request (HTTP) are made from. */
export interface DepsHooks {
  /** The client's MCP roots as file URIs; empty when the client offers none. Cached until they change. */
  clientRoots(): Promise<string[]>;
  /** Who is calling, when one service key serves several callers: see ServerDeps.scope. */
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
}

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
    save?(args: z.output<Input> | undefined): Record<string, unknown> | undefined;
    /** Takes a started task up again after a restart, from its video_id; the result a plain call gives. */
    resume?(info: ResumeInfo, deps: ServerDeps, context: ToolContext): Promise<z.input<Output>>;
  };
}

export function defineTool<Input extends z.ZodType, Output extends z.ZodType>(
  definition: ToolDefinition<Input, Output>,
): ToolDefinition<Input, Output> {
  return definition;
}
