/** The scripted model behind Codex (test/e2e/clients/codex.test.ts, skill.test.ts): the Responses API's wire. */

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
