/**
 * The request handlers, registered through `handlerOn`, and what a client sees of their failures: an error it
 * caused (-32602, with a bounded message), a service error with its own code, or for anything unexpected
 * -32603 "Internal error." with details in the log only.
 */
import {
  ProtocolError,
  ProtocolErrorCode,
  type Result,
  type Server,
  type ServerContext,
  type StandardSchemaV1,
} from "@modelcontextprotocol/server";
import type { Logger } from "../logger.js";
import { DISGUISE, type TaskStatus } from "../state/records.js";

/** A task id as an error may quote it: bounded, without the characters that could disguise it. */
function shownId(taskId: string): string {
  return JSON.stringify(taskId.length > 64 ? `${taskId.slice(0, 64)}…` : taskId).replace(DISGUISE, "");
}

/** The task does not exist for this caller, or its ttl has passed. */
export class TaskNotFoundError extends ProtocolError {
  constructor(taskId: string) {
    super(ProtocolErrorCode.InvalidParams, `Task not found: ${shownId(taskId)}`);
  }
}

export class TaskEndedError extends ProtocolError {
  constructor(taskId: string, status: TaskStatus) {
    super(ProtocolErrorCode.InvalidParams, `Cannot cancel task ${shownId(taskId)}: it is already ${status}.`);
  }
}

/** A request handler whose unexpected failures reach the client as -32603 without details. */
export function guarded<P, R>(
  method: string,
  logger: Logger,
  handler: (params: P, ctx: ServerContext) => Promise<R>,
): (params: P, ctx: ServerContext) => Promise<R> {
  return async (params, ctx) => {
    try {
      return await handler(params, ctx);
    } catch (error) {
      // A protocol error, or a service error with its code and a message written for the client.
      if (error instanceof ProtocolError || (error instanceof Error && "code" in error)) throw error;
      logger.error(`${method} failed unexpectedly`, {
        error: String(error instanceof Error ? error.stack : error),
      });
      throw new ProtocolError(ProtocolErrorCode.InternalError, "Internal error.");
    }
  };
}

export type Register = ReturnType<typeof handlerOn>;

export function handlerOn(server: Server, logger: Logger) {
  return <P extends StandardSchemaV1>(
    method: string,
    schemas: { params: P },
    handler: (params: StandardSchemaV1.InferOutput<P>, ctx: ServerContext) => Promise<Result>,
  ) => server.setRequestHandler(method, schemas, guarded(method, logger, handler));
}
