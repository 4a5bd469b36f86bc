/**
 * Logs go to stderr (stdout is the protocol channel) and, once a client is connected, to it as MCP log
 * notifications. Every line passes the redaction point.
 */
import { redact } from "./redact.js";

export type LogLevel = "debug" | "info" | "warning" | "error";
const ORDER: Record<LogLevel, number> = { debug: 0, info: 1, warning: 2, error: 3 };

export type LogSink = (level: LogLevel, message: string, data: Record<string, unknown> | undefined) => void;

export class Logger {
  private sinks: LogSink[] = [];

  constructor(
    private readonly stderrLevel: LogLevel = "info",
    private readonly write: (line: string) => void = (line) => process.stderr.write(line),
  ) {}

  /** Adds a destination (the MCP client's log notifications); returns a function that removes it. */
  addSink(sink: LogSink): () => void {
    this.sinks.push(sink);
    return () => {
      this.sinks = this.sinks.filter((existing) => existing !== sink);
    };
  }

  log(level: LogLevel, message: string, data?: Record<string, unknown>): void {
    const safeMessage = redact(message);
    const safeData =
      data === undefined ? undefined : (JSON.parse(redact(JSON.stringify(data))) as Record<string, unknown>);
    if (ORDER[level] >= ORDER[this.stderrLevel]) {
      const suffix = safeData === undefined ? "" : ` ${JSON.stringify(safeData)}`;
      this.write(`[generation-mcp] ${level}: ${safeMessage}${suffix}\n`);
    }
    for (const sink of this.sinks) {
      try {
        sink(level, safeMessage, safeData);
      } catch {
        // A client that went away must not break logging for the rest.
      }
    }
  }

  debug(message: string, data?: Record<string, unknown>): void {
    this.log("debug", message, data);
  }
  info(message: string, data?: Record<string, unknown>): void {
    this.log("info", message, data);
  }
  warning(message: string, data?: Record<string, unknown>): void {
    this.log("warning", message, data);
  }
  error(message: string, data?: Record<string, unknown>): void {
    this.log("error", message, data);
  }
}
