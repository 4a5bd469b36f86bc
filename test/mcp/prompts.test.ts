/**
 * The prompts for the common jobs through the built bin and the SDK's own clients, in both protocol eras:
 * 2025-11-25 (initialize; over stdio and over HTTP) and 2026-07-28 (stateless, over HTTP and stdio). Each is
 * listed with its arguments, and its steps walk through cost (dry_run), confirmation and the frame sheet.
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox, type SandboxHandle } from "../../src/sandbox/index.js";
import { tempRoot } from "../helpers/http-calls.js";
import { startHttpAgainst, type HttpServerProcess } from "../helpers/http.js";
import { CLI } from "../helpers/stdio.js";

let sandbox: SandboxHandle;
let root: Awaited<ReturnType<typeof tempRoot>>;
let server: HttpServerProcess;

beforeAll(async () => {
  [sandbox, root] = await Promise.all([startSandbox(), tempRoot("prompts-")]);
  server = await startHttpAgainst(sandbox, root.dir, 100);
});
afterAll(async () => {
  await server?.stop();
  await sandbox?.close();
  await root?.remove();
});

type Mode = "legacy" | { pin: "2026-07-28" };

const overHttp = (mode: Mode) => async () => {
  const client = new Client({ name: "prompts", version: "1.0.0" }, { versionNegotiation: { mode } });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(server.url), {
      requestInit: { headers: { authorization: `Bearer ${sandbox.keys.paid}` } },
    }),
  );
  return client;
};
const overStdio = (mode: Mode) => async () => {
  const client = new Client({ name: "prompts", version: "1.0.0" }, { versionNegotiation: { mode } });
  const env = { PATH: process.env["PATH"] ?? "", HOME: root.dir, GENERATION_STATE_DIR: `${root.dir}/state` };
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: [CLI, "--sandbox"], env, stderr: "ignore" }),
  );
  return client;
};

const eras: Array<[string, () => Promise<Client>, string]> = [
  ["2025-11-25 over stdio", overStdio("legacy"), "2025-11-25"],
  ["2025-11-25 over HTTP", overHttp("legacy"), "2025-11-25"],
  ["2026-07-28 over HTTP", overHttp({ pin: "2026-07-28" }), "2026-07-28"],
  ["2026-07-28 over stdio", overStdio({ pin: "2026-07-28" }), "2026-07-28"],
];

describe.each(eras)("prompts, %s", (_name, connect, version) => {
  it("are advertised and listed with their arguments; each one's steps go cost, yes, wait, frame sheet", async () => {
    const client = await connect();
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe(version);
      expect(client.getServerCapabilities()?.prompts).toEqual({});
      const { prompts } = await client.listPrompts();
      expect(prompts.map((prompt) => prompt.name)).toEqual(["animate_picture", "storyboard", "product_shot"]);
      expect(prompts[0]?.arguments).toContainEqual(
        expect.objectContaining({ name: "image", required: true }),
      );
      const animate = await client.getPrompt({
        name: "animate_picture",
        arguments: { image: "/photos/harbour.jpg", motion: "the boats rock gently" },
      });
      const [message] = animate.messages;
      expect(message?.role).toBe("user");
      const text = message?.content.type === "text" ? message.content.text : "";
      expect(text).toContain('"/photos/harbour.jpg" so that: the boats rock gently');
      const order = ["get_credits", "dry_run: true", "confirm the cost", "get_status", "sheet of frames"];
      const at = order.map((step) => text.indexOf(step));
      expect(
        at.every((index) => index >= 0),
        text,
      ).toBe(true);
      expect([...at].sort((a, b) => a - b)).toEqual(at);
      const storyboard = await client.getPrompt({ name: "storyboard", arguments: { story: "a kite's day" } });
      expect(JSON.stringify(storyboard.messages)).toContain("a storyboard of 3 short shots");
      await expect(client.getPrompt({ name: "storyboard", arguments: {} })).rejects.toThrow(
        /needs the argument "story"/,
      );
      await expect(client.getPrompt({ name: "nope" })).rejects.toThrow(/Unknown prompt "nope"/);
    } finally {
      await client.close();
    }
  });
});
