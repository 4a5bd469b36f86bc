/**
 * Limits of our own protocol channel (not the service's: those live in models.ts). Both the transports that
 * enforce them and the tools that must advertise what fits read them here.
 */

/** The largest JSON-RPC message one transport message may carry: 10 MiB, like the MCP SDK's stdio default. */
export const MAX_MESSAGE_BYTES = 10 * 1024 * 1024;

/** The default body limit of Streamable HTTP: below 5 MB, so a shared server refuses large bodies early. */
export const DEFAULT_HTTP_MAX_BODY_BYTES = 4 * 1024 * 1024;
