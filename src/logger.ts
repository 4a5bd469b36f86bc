/**
 * Logs go to stderr (stdout is the protocol's) and to sinks (MCP log notifications), each message redacted
 * once; a stderr line stays one line, so text from the service or a client cannot forge log lines.
 */
import { PROCESS_REDACTOR, type Redactor } from "./redact.js";

export type LogLevel = "debug" | "info" | "warning" | "error";
const ORDER: Record<LogLevel, number> = { debug: 0, info: 1, warning: 2, error: 3 };

type LogLine = (message: string, data?: Record<string, unknown>) => void;
export type LogSink = (level: LogLevel, message: string, data: Record<string, unknown> | undefined) => void;

export class Logger {
  private sinks: LogSink[] = [];

  constructor(
    private readonly stderrLevel: LogLevel = "info",
    private readonly write: (line: string) => void = (line) => process.stderr.write(line),
    private readonly redactor: Redactor = PROCESS_REDACTOR,
    private readonly parent?: Logger,
  ) {}

  /** The same log through `redactor` (a runtime's, which also masks its caller's key: redact.ts). */
  scoped(redactor: Redactor): Logger {
    return new Logger(this.stderrLevel, this.write, redactor, this);
  }

  /** The same log whose own lines also go to `sink`; the lines of the rest of the process do not. */
  withSink(sink: LogSink): Logger {
    const child = new Logger(this.stderrLevel, this.write, this.redactor, this);
    child.sinks.push(sink);
    return child;
  }

  /** Adds a destination for every line of the process; returns a function that removes it. */
  addSink(sink: LogSink): () => void {
    if (this.parent !== undefined) return this.parent.addSink(sink);
    this.sinks.push(sink);
    return () => void (this.sinks = this.sinks.filter((existing) => existing !== sink));
  }

  log(level: LogLevel, message: string, data?: Record<string, unknown>): void {
    const text = this.redactor.text(message);
    const safe = data === undefined ? undefined : this.redactor.value(data);
    if (ORDER[level] >= ORDER[this.stderrLevel]) {
      const suffix = safe === undefined ? "" : ` ${oneLine(JSON.stringify(safe) ?? "")}`;
      this.write(`[generation-mcp] ${level}: ${oneLine(text)}${suffix}\n`);
    }
    this.notify(level, text, safe);
  }

  /** This logger's sinks and those above it get the line as it was masked once. */
  private notify(level: LogLevel, message: string, data: Record<string, unknown> | undefined): void {
    for (const sink of this.sinks) {
      try {
        sink(level, message, data);
      } catch {
        // A client that went away must not break logging for the rest.
      }
    }
    this.parent?.notify(level, message, data);
  }

  readonly debug: LogLine = (message, data) => this.log("debug", message, data);
  readonly info: LogLine = (message, data) => this.log("info", message, data);
  readonly warning: LogLine = (message, data) => this.log("warning", message, data);
  readonly error: LogLine = (message, data) => this.log("error", message, data);
}

// Controls, line separators and bidi controls; JSON.stringify escapes only C0, so this runs on data too.
// eslint-disable-next-line no-control-regex
const LINE_BREAKERS = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;
const SHORT_ESCAPES: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

function oneLine(text: string): string {
  return text.replace(
    LINE_BREAKERS,
    (char) => SHORT_ESCAPES[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}
