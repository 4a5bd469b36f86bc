export type TaskLogLevel = "debug" | "info" | "warning" | "error";

/**
 * Where the waiting machinery reports. Shaped like `Logger.log` of src/logger.ts, so the server can pass
 * `(level, message, data) => logger.log(level, message, data)`.
 */
export type TaskLogger = (level: TaskLogLevel, message: string, data?: Record<string, unknown>) => void;

export const silentLogger: TaskLogger = () => {};
