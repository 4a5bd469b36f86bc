/**
 * Real third-party MCP clients against the built bin (dist/bundle/cli.js) in sandbox mode: the MCP
 * Inspector's CLI and LangChain's @langchain/mcp-adapters, each over stdio and over Streamable HTTP, and
 * mcp-remote (a stdio <-> HTTP bridge) driven over stdio by the project's own SDK Client, and the Vercel AI
 * SDK's @ai-sdk/mcp, which opens with server/discover and speaks 2026-07-28, over HTTP and stdio. Through each: the
 * tool list, get_credits, a generate_video waited for until completed (with the sheet of its frames), and generate_image's preview as an
 * MCP image item. And the official tasks client, @modelcontextprotocol/ext-tasks, which runs a
 * generate_video as a 2026-07-28 task to its inline result. Every server is a fresh `--sandbox` process;
 * nothing leaves 127.0.0.1.
 *
 * The clients live in their own package (test/interop/package.json), which `npm run test:clients` installs
 * on first use; without it every test here fails and says so. The Inspector declares
 * Node >= 22.19: it runs on the Node that runs the tests when that is new enough, else on the package's
 * Node 22 binary. Whatever the clients would keep in the home folder goes to a temporary one.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { describeTools } from "../../../src/mcp/tool-list.js";
import { startHttpBin, type HttpServerProcess } from "../../helpers/http.js";
import { CLI } from "../../helpers/stdio.js";

const run = promisify(execFile);
const MODULES = path.resolve(import.meta.dirname, "../../interop/node_modules");
const INSPECTOR = path.join(MODULES, "@modelcontextprotocol/inspector/clients/launcher/build/index.js");
const LANGCHAIN = path.join(MODULES, "@langchain/mcp-adapters/dist/index.js");
const MCP_REMOTE = path.join(MODULES, "mcp-remote/dist/proxy.js");
const AI_SDK = path.join(MODULES, "@ai-sdk/mcp/dist/index.js");
const AI_SDK_STDIO = path.join(MODULES, "@ai-sdk/mcp/dist/mcp-stdio/index.js");
const EXT_TASKS = path.join(MODULES, "@modelcontextprotocol/ext-tasks/dist/client/index.js");
/** The SDK v2 client ext-tasks itself imports: the one copy an application with both would have. */
const SDK_V2_CLIENT = path.join(MODULES, "@modelcontextprotocol/client/dist/index.mjs");
const NODE22 = path.join(MODULES, "node22/bin/node");
const KEY = "sk-sandbox-paid";
const TOOL_NAMES = describeTools().map((tool) => tool.name);
/** A sandbox video completes after ~12 s of demo timings; polled every 250 ms, plus client start-up. */
const CLIENT_LIMIT_MS = 80_000;

/** Fails the calling test, naming the command that installs what is missing. */
function installed(file: string): string {
  if (!existsSync(file)) {
    throw new Error(
      `${path.relative(process.cwd(), file)} is missing: run \`npm run test:clients\`, which installs ` +
        "test/interop (the third-party MCP clients and the Node 22/24/26 binaries these tests use) first.",
    );
  }
  return file;
}

/** The Inspector declares Node >= 22.19. */
function inspectorNode(): string {
  const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
  if (major > 22 || (major === 22 && minor >= 19)) return process.execPath;
  if (existsSync(NODE22)) return NODE22;
  throw new Error(
    `the MCP Inspector needs Node >= 22.19 and this is ${process.version}; test/interop's Node 22 binary ` +
      `(${path.relative(process.cwd(), NODE22)}) is missing: run \`npm ci --prefix test/interop\` without ` +
      "--omit=optional (the binary is there on linux-x64 only; elsewhere run these tests on Node 22.19 or later).",
  );
}

let home = "";
let serial = 0;
/** A prompt no earlier call used, so the duplicate guard never answers `reused`. */
const freshPrompt = (who: string) => `interop ${who} ${process.pid}-${Date.now()}-${++serial}: a paper boat`;
/** Sandbox flags for one server: quick polls, its own state folder. */
const serverFlags = (name: string) => [
  "--sandbox",
  "--poll-interval-ms",
  "250",
  "--state-dir",
  path.join(home, "state", name),
];
const servers: HttpServerProcess[] = [];
/** A fresh `--http --sandbox` server for one client. */
async function httpServer(name: string): Promise<string> {
  const server = await startHttpBin(serverFlags(name), { HOME: home });
  servers.push(server);
  return server.url;
}

beforeAll(async () => {
  home = await mkdtemp(path.join(tmpdir(), "generation-mcp-interop-"));
});

afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  if (home !== "") await rm(home, { recursive: true, force: true });
});

interface Structured {
  structuredContent?: Record<string, unknown>;
}
interface ContentItem {
  type: string;
  mimeType?: string;
  data?: string;
}

/** What every client must have brought back. */
function expectVideoCompleted(structured: unknown) {
  expect(structured).toMatchObject({
    status: "completed",
    video_url: expect.stringMatching(/^http:\/\/127\./),
  });
  expect((structured as { reused?: boolean }).reused).not.toBe(true);
}
/** The sheet of the video's frames (issue 27): a JPEG item, and what it shows in structuredContent.frames. */
function expectFrameSheet(result: Structured & { content?: ContentItem[] }) {
  expect(result.structuredContent?.["frames"]).toMatchObject({ frames: expect.any(Number) });
  const sheet = result.content?.find((item) => item.type === "image");
  expect(sheet?.mimeType).toBe("image/jpeg");
  expectPreview(sheet?.mimeType, sheet?.data);
}
function expectCredits(structured: unknown) {
  expect(structured).toMatchObject({ credits: expect.any(Number), paid_access: true });
}
/** The preview: base64 bytes that really are an image of the type named. */
function expectPreview(mimeType: string | undefined, data: string | undefined) {
  expect(mimeType).toMatch(/^image\/(jpeg|png|webp)$/);
  const bytes = Buffer.from(data ?? "", "base64");
  const magic = bytes.subarray(0, 4).toString("hex");
  const expected = { "image/jpeg": /^ffd8ff/, "image/png": /^89504e47/, "image/webp": /^52494646/ };
  expect(magic).toMatch(expected[mimeType as keyof typeof expected]);
  expect(bytes.length).toBeGreaterThan(100);
}

// All of them at once: most of their time is the sandbox's 12 s video.
describe.concurrent("third-party MCP clients against the built bin", () => {
  describe("MCP Inspector CLI (@modelcontextprotocol/inspector --cli)", () => {
    /** One Inspector run: `--format json` prints `{"result": ...}` on stdout; exit 0 unless isError. */
    async function inspect<T>(target: string[], method: string[]): Promise<T> {
      const args = [installed(INSPECTOR), "--cli", "--format", "json", ...target, ...method];
      const node = inspectorNode();
      try {
        const { stdout } = await run(node, args, {
          cwd: home,
          env: { PATH: process.env["PATH"] ?? "", HOME: home },
          timeout: CLIENT_LIMIT_MS,
          maxBuffer: 64 * 1024 * 1024,
        });
        return (JSON.parse(stdout) as { result: T }).result;
      } catch (error) {
        const { stdout = "", stderr = "" } = error as { stdout?: string; stderr?: string };
        throw new Error(
          `inspector ${method.join(" ")} failed: ${String(error)}\n${stderr}\n${stdout.slice(0, 2000)}`,
          { cause: error },
        );
      }
    }
    const call = (name: string, args: Record<string, unknown> = {}) => [
      "--method",
      "tools/call",
      "--tool-name",
      name,
      "--tool-args-json",
      JSON.stringify(args),
    ];

    /** Four Inspector runs at once: over stdio each starts its own server, over HTTP they share one. */
    async function everything(target: (name: string) => string[], who: string) {
      const [list, credits, video, image] = await Promise.all([
        inspect<{ tools: { name: string }[] }>(target("list"), ["--method", "tools/list"]),
        inspect<Structured>(target("credits"), call("get_credits")),
        inspect<Structured & { content: ContentItem[] }>(
          target("video"),
          call("generate_video", { prompt: freshPrompt(who), duration: 2, wait: true }),
        ),
        inspect<{ content: ContentItem[] }>(
          target("image"),
          call("generate_image", { prompt: freshPrompt(who) }),
        ),
      ]);
      expect(list.tools.map((tool) => tool.name)).toEqual(TOOL_NAMES);
      expectCredits(credits.structuredContent);
      expectVideoCompleted(video.structuredContent);
      expectFrameSheet(video);
      const preview = image.content.find((item) => item.type === "image");
      expectPreview(preview?.mimeType, preview?.data);
    }

    it(
      "over stdio: tools, get_credits, a completed video, an image preview",
      { timeout: 90_000 },
      async () => {
        await everything(
          (name) => [process.execPath, CLI, ...serverFlags(`inspector-${name}`)],
          "inspector-stdio",
        );
      },
    );

    it("over Streamable HTTP with a Bearer header: the same", { timeout: 90_000 }, async () => {
      installed(INSPECTOR);
      const url = await httpServer("inspector-http");
      const target = [url, "--transport", "http", "--header", `Authorization: Bearer ${KEY}`];
      await everything(() => target, "inspector-http");
    });
  });

  describe("LangChain (@langchain/mcp-adapters MultiServerMCPClient)", () => {
    interface ToolMessage {
      content: unknown;
      artifact?: { type: string; data?: Record<string, unknown> }[];
    }
    interface LangChainTool {
      name: string;
      invoke(call: { type: "tool_call"; id: string; name: string; args: object }): Promise<ToolMessage>;
    }
    interface LangChainClient {
      getTools(): Promise<LangChainTool[]>;
      close(): Promise<void>;
    }
    type LangChainModule = { MultiServerMCPClient: new (config: object) => LangChainClient };

    async function everything(connection: object, who: string) {
      const { MultiServerMCPClient } = (await import(
        /* @vite-ignore */ pathToFileURL(installed(LANGCHAIN)).href
      )) as LangChainModule;
      const client = new MultiServerMCPClient({
        mcpServers: { generation: connection },
        throwOnLoadError: true,
        onConnectionError: "throw",
        prefixToolNameWithServerName: false,
        useStandardContentBlocks: true,
      });
      try {
        const tools = await client.getTools();
        expect(tools.map((tool) => tool.name)).toEqual(TOOL_NAMES);
        const invoke = (name: string, args: object) =>
          tools
            .find((tool) => tool.name === name)!
            .invoke({ type: "tool_call", id: `${who}-${name}`, name, args });
        const structured = (message: ToolMessage) =>
          message.artifact?.find((item) => item.type === "mcp_structured_content")?.data;

        const [credits, video, image] = await Promise.all([
          invoke("get_credits", {}),
          invoke("generate_video", { prompt: freshPrompt(who), duration: 2, wait: true }),
          invoke("generate_image", { prompt: freshPrompt(who) }),
        ]);
        expectCredits(structured(credits));
        expectVideoCompleted(structured(video));
        // LangChain's standard content blocks: the MCP image item becomes a base64 image block.
        const blocks = image.content as {
          type: string;
          source_type?: string;
          mime_type?: string;
          data?: string;
        }[];
        const preview = blocks.find((block) => block.type === "image");
        expect(preview?.source_type).toBe("base64");
        expectPreview(preview?.mime_type, preview?.data);
      } finally {
        await client.close();
      }
    }

    it(
      "over stdio: tools, get_credits, a completed video, an image preview",
      { timeout: 90_000 },
      async () => {
        const connection = {
          transport: "stdio",
          command: process.execPath,
          args: [CLI, ...serverFlags("langchain-stdio")],
          env: { PATH: process.env["PATH"] ?? "", HOME: home },
          stderr: "ignore",
          restart: { enabled: false },
        };
        await everything(connection, "langchain-stdio");
      },
    );

    it("over Streamable HTTP with a Bearer header: the same", { timeout: 90_000 }, async () => {
      installed(LANGCHAIN);
      const url = await httpServer("langchain-http");
      const connection = { url, headers: { Authorization: `Bearer ${KEY}` }, automaticSSEFallback: false };
      await everything(connection, "langchain-http");
    });
  });

  describe("mcp-remote (stdio <-> Streamable HTTP bridge)", () => {
    it(
      "the SDK's Client over stdio, through mcp-remote, to the server over HTTP: the same",
      { timeout: 90_000 },
      async () => {
        installed(MCP_REMOTE);
        const url = await httpServer("mcp-remote");
        const transport = new StdioClientTransport({
          command: process.execPath,
          args: [
            MCP_REMOTE,
            url,
            "--header",
            `Authorization: Bearer ${KEY}`,
            "--transport",
            "http-only",
            "--silent",
          ],
          // Otherwise it keeps its (unused) OAuth state in ~/.mcp-auth.
          env: {
            PATH: process.env["PATH"] ?? "",
            HOME: home,
            MCP_REMOTE_CONFIG_DIR: path.join(home, "mcp-auth"),
          },
          stderr: "pipe",
        });
        let stderr = "";
        transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
        const client = new Client({ name: "interop-mcp-remote", version: "1.0.0" });
        try {
          await client.connect(transport);
          const { tools } = await client.listTools();
          expect(tools.map((tool) => tool.name)).toEqual(TOOL_NAMES);
          const limit = { timeout: CLIENT_LIMIT_MS };
          const [credits, video, image] = await Promise.all([
            client.callTool({ name: "get_credits", arguments: {} }),
            client.callTool(
              {
                name: "generate_video",
                arguments: { prompt: freshPrompt("mcp-remote"), duration: 2, wait: true },
              },
              undefined,
              limit,
            ),
            client.callTool(
              { name: "generate_image", arguments: { prompt: freshPrompt("mcp-remote") } },
              undefined,
              limit,
            ),
          ]);
          expectCredits(credits.structuredContent);
          expectVideoCompleted(video.structuredContent);
          expectFrameSheet(video as Structured & { content: ContentItem[] });
          const preview = (image.content as ContentItem[]).find((item) => item.type === "image");
          expectPreview(preview?.mimeType, preview?.data);
        } catch (error) {
          throw new Error(`${String(error)}\nmcp-remote stderr:\n${stderr}`, { cause: error });
        } finally {
          await client.close();
        }
      },
    );
  });

  describe("Vercel AI SDK (@ai-sdk/mcp createMCPClient), which speaks 2026-07-28", () => {
    interface AiSdkClient {
      tools(): Promise<Record<string, unknown>>;
      callTool(call: { name: string; arguments?: object }): Promise<Structured & { content: ContentItem[] }>;
      close(): Promise<void>;
    }
    type AiSdkModule = { createMCPClient(config: object): Promise<AiSdkClient> };
    type StdioModule = { Experimental_StdioMCPTransport: new (config: object) => object };

    async function everything(transport: object, who: string) {
      const { createMCPClient } = (await import(
        /* @vite-ignore */ pathToFileURL(installed(AI_SDK)).href
      )) as AiSdkModule;
      const client = await createMCPClient({ transport, clientName: `interop-${who}` });
      try {
        expect(Object.keys(await client.tools())).toEqual(TOOL_NAMES);
        const [credits, video, image] = await Promise.all([
          client.callTool({ name: "get_credits", arguments: {} }),
          client.callTool({
            name: "generate_video",
            arguments: { prompt: freshPrompt(who), duration: 2, wait: true },
          }),
          client.callTool({ name: "generate_image", arguments: { prompt: freshPrompt(who) } }),
        ]);
        expectCredits(credits.structuredContent);
        expectVideoCompleted(video.structuredContent);
        expectFrameSheet(video);
        const preview = image.content.find((item) => item.type === "image");
        expectPreview(preview?.mimeType, preview?.data);
      } finally {
        await client.close();
      }
    }

    it(
      "over Streamable HTTP: server/discover, then every request on 2026-07-28; tools, a video, a preview",
      { timeout: 90_000 },
      async () => {
        const url = await httpServer("ai-sdk-http");
        const sent: { rpc: unknown; version: string | null; header: string | null }[] = [];
        const recording = async (input: string | URL | Request, init?: RequestInit) => {
          const headers = new Headers(init?.headers);
          const body = typeof init?.body === "string" ? (JSON.parse(init.body) as { method?: unknown }) : {};
          sent.push({
            rpc: body.method,
            version: headers.get("mcp-protocol-version"),
            header: headers.get("mcp-method"),
          });
          return fetch(input, init);
        };
        await everything(
          { type: "http", url, headers: { Authorization: `Bearer ${KEY}` }, fetch: recording },
          "ai-sdk-http",
        );
        // The client opened with discovery and stayed on the revision: no initialize, no fallback.
        expect(sent[0]).toEqual({ rpc: "server/discover", version: "2026-07-28", header: "server/discover" });
        expect(sent.map((entry) => entry.rpc)).not.toContain("initialize");
        for (const entry of sent) expect(entry.version).toBe("2026-07-28");
        expect(sent.filter((entry) => entry.rpc === "tools/call")).toHaveLength(3);
      },
    );

    it("over stdio: the same", { timeout: 90_000 }, async () => {
      const { Experimental_StdioMCPTransport } = (await import(
        /* @vite-ignore */ pathToFileURL(installed(AI_SDK_STDIO)).href
      )) as StdioModule;
      const transport = new Experimental_StdioMCPTransport({
        command: process.execPath,
        args: [CLI, ...serverFlags("ai-sdk-stdio")],
        env: { PATH: process.env["PATH"] ?? "", HOME: home },
      });
      await everything(transport, "ai-sdk-stdio");
    });
  });

  describe("the official tasks client (@modelcontextprotocol/ext-tasks), 2026-07-28 tasks", () => {
    type JsonRpcResponse =
      | { kind: "result"; result: unknown }
      | { kind: "error"; error: { code: number; message: string; data?: unknown } };
    interface Rpc {
      method: string;
      params?: { name?: string; taskId?: string };
    }
    interface ToolExecution {
      kind: "immediate" | "task";
      settle(): Promise<{ outcome: { status: string } }>;
    }
    interface ExtTasksModule {
      createTaskSessionFromClient(
        client: object,
        options: object,
      ): {
        callTool(name: string, args: object, options?: object): Promise<ToolExecution>;
        close(): Promise<void>;
      };
      resultFromTaskOutcome(outcome: object): Structured & { resultType?: string };
    }
    interface SdkV2Client {
      connect(transport: object): Promise<void>;
      getProtocolEra(): string;
      close(): Promise<void>;
    }
    interface SdkV2Module {
      Client: new (info: object, options: object) => SdkV2Client;
      StreamableHTTPClientTransport: new (url: URL, options: object) => object;
    }

    /**
     * The package's README: for a 2026-07-28 server, the host hands it a raw request path (the SDK's codecs
     * refuse `resultType: "task"`). Over stateless Streamable HTTP that is one POST per request, with the
     * revision's headers; the answer is JSON or an SSE stream whose last message is the response.
     */
    function rawDispatch(url: string, sent: string[]) {
      let id = 0;
      return async (request: Rpc, options?: { signal?: AbortSignal }): Promise<JsonRpcResponse> => {
        sent.push(request.method);
        const name = request.method === "tools/call" ? request.params?.name : request.params?.taskId;
        const response = await fetch(url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            authorization: `Bearer ${KEY}`,
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": request.method,
            ...(name !== undefined && { "mcp-name": name }),
          },
          body: JSON.stringify({ jsonrpc: "2.0", id: ++id, ...request }),
          ...(options?.signal !== undefined && { signal: options.signal }),
        });
        const text = (await response.text()).trim();
        const messages = text.startsWith("{")
          ? [text]
          : text.split("\n").flatMap((line) => (line.startsWith("data:") ? [line.slice(5)] : []));
        const answer = JSON.parse(messages.at(-1) ?? "{}") as {
          result?: unknown;
          error?: { code: number; message: string; data?: unknown };
        };
        return answer.error !== undefined
          ? { kind: "error", error: answer.error }
          : { kind: "result", result: answer.result };
      };
    }

    it(
      "over Streamable HTTP: generate_video becomes a task, polled with tasks/get to its inline result",
      { timeout: 90_000 },
      async () => {
        const [tasks, sdk] = await Promise.all([
          import(/* @vite-ignore */ pathToFileURL(installed(EXT_TASKS)).href) as Promise<ExtTasksModule>,
          import(/* @vite-ignore */ pathToFileURL(installed(SDK_V2_CLIENT)).href) as Promise<SdkV2Module>,
        ]);
        const url = await httpServer("ext-tasks");
        const clientInfo = { name: "interop-ext-tasks", version: "1.0.0" };
        const client = new sdk.Client(clientInfo, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
        await client.connect(
          new sdk.StreamableHTTPClientTransport(new URL(url), {
            requestInit: { headers: { authorization: `Bearer ${KEY}` } },
          }),
        );
        const sent: string[] = [];
        const session = tasks.createTaskSessionFromClient(client, {
          endpointId: "generation-mcp-interop",
          rawDispatch: rawDispatch(url, sent),
          v2RequestFraming: { protocolVersion: "2026-07-28", clientInfo, clientCapabilities: {} },
        });
        try {
          expect(client.getProtocolEra()).toBe("modern");
          const execution = await session.callTool("generate_video", {
            prompt: freshPrompt("ext-tasks"),
            duration: 2,
          });
          expect(execution.kind).toBe("task");
          const { outcome } = await execution.settle();
          const result = tasks.resultFromTaskOutcome(outcome);
          expect(result.resultType).toBe("complete");
          expectVideoCompleted(result.structuredContent);
          expect(result.structuredContent).toMatchObject({ video_id: expect.any(String) });
          expect(sent[0]).toBe("tools/call");
          expect(sent.filter((method) => method === "tasks/get").length).toBeGreaterThan(0);
        } finally {
          await session.close();
          await client.close();
        }
      },
    );
  });
});
