/**
 * A 2026-07-28 client written by hand, as the revision describes it: every request carries its revision,
 * client info and capabilities in `_meta`, and over HTTP the `MCP-Protocol-Version`, `Mcp-Method` and
 * `Mcp-Name` headers. Raw on purpose: the SDK's own v2 client does not take task results (`resultType:
 * "task"`), and tests must see the wire as it is.
 */
import type { RawSession } from "../e2e/raw-stdio.js";

export const REVISION = "2026-07-28";
export const TASKS = "io.modelcontextprotocol/tasks";

export interface ModernOptions {
  /** Declare the tasks extension on this request. */
  tasks?: boolean;
  progressToken?: string | number;
  logLevel?: string;
  /** Extra headers, or headers to leave out (value undefined). */
  headers?: Record<string, string | undefined>;
}

export interface ModernAnswer {
  status: number;
  /** Every JSON-RPC message of the answer: notifications first, then the response. */
  messages: Array<Record<string, unknown>>;
  result: Record<string, unknown> | undefined;
  error: { code: number; message: string; data?: unknown } | undefined;
  /** The notifications that rode the request's own stream. */
  notifications: Array<{ method: string; params: Record<string, unknown> }>;
}

export function envelope(options: ModernOptions = {}): Record<string, unknown> {
  return {
    "io.modelcontextprotocol/protocolVersion": REVISION,
    "io.modelcontextprotocol/clientInfo": { name: "hand-written-2026", version: "1.0.0" },
    "io.modelcontextprotocol/clientCapabilities": options.tasks ? { extensions: { [TASKS]: {} } } : {},
    ...(options.logLevel !== undefined && { "io.modelcontextprotocol/logLevel": options.logLevel }),
    ...(options.progressToken !== undefined && { progressToken: options.progressToken }),
  };
}

let nextId = 1;

/** The `Mcp-Name` a method carries: the tool's name, the resource's uri, the task's id. */
function nameOf(method: string, params: Record<string, unknown>): string | undefined {
  if (method === "tools/call") return String(params["name"]);
  if (method === "resources/read") return String(params["uri"]);
  if (method.startsWith("tasks/")) return String(params["taskId"]);
  return undefined;
}

/** One 2026-07-28 request over HTTP, with `bearer` as the Authorization. */
export async function modernHttp(
  url: string,
  bearer: string,
  method: string,
  params: Record<string, unknown> = {},
  options: ModernOptions = {},
): Promise<ModernAnswer> {
  const name = nameOf(method, params);
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    authorization: `Bearer ${bearer}`,
    "mcp-protocol-version": REVISION,
    "mcp-method": method,
    ...(name !== undefined && { "mcp-name": name }),
  };
  for (const [key, value] of Object.entries(options.headers ?? {})) {
    if (value === undefined) delete headers[key];
    else headers[key] = value;
  }
  const body = { jsonrpc: "2.0", id: nextId++, method, params: { ...params, _meta: envelope(options) } };
  const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
  return answerOf(response.status, await response.text());
}

/** One 2026-07-28 request over a raw stdio session. */
export async function modernStdio(
  session: RawSession,
  method: string,
  params: Record<string, unknown> = {},
  options: ModernOptions = {},
): Promise<ModernAnswer> {
  const before = session.messages.length;
  const response = await session.request(method, { ...params, _meta: envelope(options) });
  const notifications = session.messages
    .slice(before)
    .filter((message) => message["id"] === undefined && typeof message["method"] === "string");
  return {
    status: 0,
    messages: [...notifications, response],
    result: response["result"] as Record<string, unknown> | undefined,
    error: response["error"] as ModernAnswer["error"],
    notifications: notifications as ModernAnswer["notifications"],
  };
}

function answerOf(status: number, text: string): ModernAnswer {
  const trimmed = text.trim();
  const messages: Array<Record<string, unknown>> = [];
  if (trimmed.startsWith("{")) messages.push(JSON.parse(trimmed) as Record<string, unknown>);
  else {
    for (const line of trimmed.split("\n")) {
      if (line.startsWith("data:") && line.slice(5).trim() !== "") {
        messages.push(JSON.parse(line.slice(5)) as Record<string, unknown>);
      }
    }
  }
  const response = messages.find((message) => "result" in message || "error" in message);
  return {
    status,
    messages,
    result: response?.["result"] as Record<string, unknown> | undefined,
    error: response?.["error"] as ModernAnswer["error"],
    notifications: messages.filter(
      (message) => !("result" in message) && !("error" in message),
    ) as ModernAnswer["notifications"],
  };
}

/** Reads a task until `done`, at the poll interval it names (bounded). */
export async function pollTask(
  read: () => Promise<ModernAnswer>,
  done: (task: Record<string, unknown>) => boolean,
  limitMs = 60_000,
): Promise<Record<string, unknown>> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const answer = await read();
    const task = answer.result ?? {};
    if (done(task) || Date.now() > deadline) return task;
    const interval = typeof task["pollIntervalMs"] === "number" ? task["pollIntervalMs"] : 200;
    await new Promise((resolve) => setTimeout(resolve, Math.min(interval, 500)));
  }
}
