/**
 * Limits of our own protocol channel (not the service's: those live in models.ts). Both the transports that
 * enforce them and the tools that must advertise what fits read them here.
 */

/** The largest JSON-RPC message one transport message may carry: 10 MiB, like the MCP SDK's stdio default. */
export const MAX_MESSAGE_BYTES = 10 * 1024 * 1024;

/** The default body limit of Streamable HTTP: below 5 MB, so a shared server refuses large bodies early. */
export const DEFAULT_HTTP_MAX_BODY_BYTES = 4 * 1024 * 1024;

/** The longest an MCP task (either protocol era) may live; a client's requested ttl is bounded by it. */
export const MAX_TASK_TTL_MS = 24 * 60 * 60 * 1000;
/**
 * The shortest: a task must outlive the round trips a client needs to read its result. A smaller ttl asked
 * for is raised to this (and the task's `ttl` says so).
 */
export const MIN_TASK_TTL_MS = 60 * 1000;
