/**
 * Every call answers inside the client's patience: its wait window (timeout_seconds, else
 * GENERATION_WAIT_TIMEOUT_S) counts from the moment the call arrived, and every request it makes (upload,
 * start, reads, their retries and rate-budget waits) must be over by its deadline, whatever the service does.
 */
import type { ServerDeps, ToolContext } from "./define-tool.js";

/** Requests get at least this long, so a wait window of 0 still leaves room to start a task or read. */
const MIN_REQUEST_WINDOW_MS = 20_000;
/** A call that only reads (credits, history, one status) has no reason to take longer than this. */
const READ_WINDOW_MS = 30_000;
/** A download after the wait gets at least this long. */
const MIN_DOWNLOAD_MS = 10_000;

/** The call's wait window in milliseconds. */
export function waitWindowMs(deps: ServerDeps, timeoutSeconds?: number): number {
  return (timeoutSeconds ?? deps.config.waitTimeoutS) * 1000;
}

/** Epoch ms by which every request of this call must be over. */
export function requestDeadline(context: ToolContext, windowMs: number): number {
  return context.startedAt + Math.max(windowMs, MIN_REQUEST_WINDOW_MS);
}

/** Epoch ms by which a call that only reads must be over: well inside any client's patience. */
export function readDeadline(context: ToolContext, deps: ServerDeps): number {
  return requestDeadline(context, Math.min(waitWindowMs(deps), READ_WINDOW_MS));
}

/** Milliseconds a download may take now, bounded by the call's deadline but never unreasonably short. */
export function downloadTimeoutMs(context: ToolContext, windowMs: number, now = Date.now()): number {
  return Math.max(MIN_DOWNLOAD_MS, requestDeadline(context, windowMs) - now);
}
