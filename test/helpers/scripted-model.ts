/**
 * The scripted models behind the agent CLIs (test/e2e/clients/codex.test.ts, skill.test.ts for Codex's
 * Responses API; claude-code.test.ts for Claude Code's Messages API): a server on 127.0.0.1 that answers each
 * request from its whole body, and the Responses API's event stream.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** Serves `answer` on a free loopback port; `origin` is `http://127.0.0.1:<port>`. */
export async function serveModel(
  answer: (req: IncomingMessage, body: string, res: ServerResponse) => void,
): Promise<{ origin: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => answer(req, body, res));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** One Responses API answer: a single output item, as a complete event stream. */
export function responseStream(id: string, item: Record<string, unknown>): string {
  const events = [
    { type: "response.created", response: { id } },
    { type: "response.output_item.done", item },
    {
      type: "response.completed",
      response: { id, usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } },
    },
  ];
  return events.map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`).join("");
}
