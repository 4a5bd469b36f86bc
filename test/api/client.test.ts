/**
 * The API client against a scripted HTTP server on 127.0.0.1: what goes on the wire (auth, ids, idempotency
 * keys, multipart), which failures are retried (reads only), and how odd answers become typed errors.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { Agent } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { GenerationClient, encodePathSegment } from "../../src/api/client.js";
import { GenerationError } from "../../src/api/errors.js";
import { UnlimitedBudget } from "../generations/fake-api.js";

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: Buffer;
}

type Reply = (request: Seen, response: ServerResponse) => void;

let server: Server | undefined;
afterEach(async () => {
  const running = server;
  server = undefined;
  if (running === undefined) return;
  running.closeAllConnections();
  await new Promise((resolve) => running.close(resolve));
});

async function serve(replies: Reply[]): Promise<{ client: GenerationClient; seen: Seen[] }> {
  const seen: Seen[] = [];
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const entry = {
        method: request.method ?? "",
        url: request.url ?? "",
        headers: request.headers,
        body: Buffer.concat(chunks),
      };
      seen.push(entry);
      const reply = replies[Math.min(seen.length - 1, replies.length - 1)];
      reply?.(entry, response);
    });
  });
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const client = new GenerationClient({
    baseUrl: `http://127.0.0.1:${port}/api/v1`,
    apiKey: "sk-test-secret-123",
    budget: new UnlimitedBudget(),
    timeoutMs: 1000,
    maxRetries: 2,
    sleep: async () => {},
  });
  return { client, seen };
}

const json =
  (status: number, body: unknown, headers: Record<string, string> = {}): Reply =>
  (_request, response) => {
    response.writeHead(status, { "content-type": "application/json", ...headers });
    response.end(JSON.stringify(body));
  };
const withHeaders =
  (reply: Reply, headers: Record<string, string>): Reply =>
  (request, response) => {
    for (const [name, value] of Object.entries(headers)) response.setHeader(name, value);
    reply(request, response);
  };
const ok = (data: unknown) => json(200, { data, error: null });
const fail = (status: number, code: string, message = code) =>
  json(status, { data: null, error: { code, message } });

async function failure(promise: Promise<unknown>): Promise<GenerationError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(GenerationError);
  return error as GenerationError;
}

describe("requests on the wire", () => {
  it("sends the Bearer key, JSON body and an Idempotency-Key on a start", async () => {
    const { client, seen } = await serve([ok({ video_id: "v1", status: "queued" })]);
    const started = await client.generateVideo({ prompt: "p" }, { idempotencyKey: "key-1" });
    expect(started).toMatchObject({ video_id: "v1", status: "queued" });
    expect(seen[0]).toMatchObject({ method: "POST", url: "/api/v1/generate" });
    expect(seen[0]?.headers["authorization"]).toBe("Bearer sk-test-secret-123");
    expect(seen[0]?.headers["idempotency-key"]).toBe("key-1");
    expect(JSON.parse(String(seen[0]?.body))).toEqual({ prompt: "p" });
  });

  it.each([
    ["../x", "/api/v1/videos/..%2Fx"],
    ["a?b=1", "/api/v1/videos/a%3Fb%3D1"],
    ["%2F", "/api/v1/videos/%252F"],
    ["..", "/api/v1/videos/%2E%2E"],
    ["id with space", "/api/v1/videos/id%20with%20space"],
  ])("encodes the id %j as one path segment", async (id, path) => {
    const { client, seen } = await serve([ok({ status: "queued" })]);
    await client.getVideo(id);
    expect(seen[0]?.url).toBe(path);
    expect(encodePathSegment(id)).toBe(path.slice("/api/v1/videos/".length));
  });

  it("streams an upload as multipart field `image` with its content type", async () => {
    const { client, seen } = await serve([ok({ url: "http://cdn.test/u.png" })]);
    const bytes = Buffer.from("89504e470d0a1a0a0000", "hex");
    const result = await client.upload({
      filename: "cat.png",
      contentType: "image/png",
      size: bytes.length,
      open: () => Readable.from([bytes]),
    });
    expect(result.url).toBe("http://cdn.test/u.png");
    expect(seen[0]?.headers["content-type"]).toMatch(/^multipart\/form-data; boundary=/);
    expect(Number(seen[0]?.headers["content-length"])).toBe(seen[0]?.body.length);
    const body = String(seen[0]?.body);
    expect(body).toContain('name="image"; filename="cat.png"');
    expect(body).toContain("Content-Type: image/png");
  });
});

describe("retries", () => {
  it("retries a read after 5xx and connection errors, then succeeds", async () => {
    const { client, seen } = await serve([
      fail(502, "upstream_error"),
      (_request, response) => response.socket?.destroy(),
      ok({ credits: 10 }),
    ]);
    expect(await client.getCredits()).toEqual({ credits: 10 });
    expect(seen).toHaveLength(3);
  });

  it("never retries a start, and marks an ambiguous failure as possibly charged", async () => {
    const { client, seen } = await serve([fail(500, "internal_error"), ok({ video_id: "v2" })]);
    const error = await failure(client.generateVideo({ prompt: "p" }));
    expect(error.code).toBe("internal_error");
    expect(error.maybeProcessed).toBe(true);
    expect(seen).toHaveLength(1);
  });

  it("a dropped connection on a start is ambiguous; a refused one is not", async () => {
    const { client } = await serve([(_request, response) => response.socket?.destroy()]);
    const dropped = await failure(client.generateVideo({ prompt: "p" }));
    expect(dropped.code).toBe("network_error");
    expect(dropped.maybeProcessed).toBe(true);
    const refused = new GenerationClient({
      baseUrl: "http://127.0.0.1:9/api/v1",
      apiKey: "k",
      budget: new UnlimitedBudget(),
      maxRetries: 0,
    });
    const notSent = await failure(refused.generateVideo({ prompt: "p" }));
    expect(notSent.code).toBe("network_error");
    expect(notSent.maybeProcessed).toBe(false);
  });

  it("does not disguise a bug as a network error", async () => {
    const broken = new GenerationClient({
      baseUrl: "http://127.0.0.1:9/api/v1",
      apiKey: "k",
      budget: new UnlimitedBudget(),
      maxRetries: 0,
      // A real dispatcher whose request throws what a bug would.
      dispatcher: Object.assign(new Agent(), {
        request: () => Promise.reject(new TypeError("x is not a constructor")),
      }),
    });
    await expect(broken.getCredits()).rejects.toThrow(TypeError);
  });

  it("answers a 429 at once when its reset is further away than a tool call can wait", async () => {
    const { client, seen } = await serve(
      [fail(429, "rate_limit_exceeded"), ok({ credits: 1 })].map((reply, index) =>
        index === 0 ? withHeaders(reply, { "retry-after": "3600" }) : reply,
      ),
    );
    const error = await failure(client.getCredits());
    expect(error.code).toBe("rate_limit_exceeded");
    expect(error.nextStep).toMatch(/Nothing was charged/);
    expect(seen).toHaveLength(1);
  });

  it("does not retry permanent errors", async () => {
    const { client, seen } = await serve([fail(401, "unauthorized"), ok({})]);
    expect((await failure(client.getCredits())).code).toBe("unauthorized");
    expect(seen).toHaveLength(1);
  });

  it("does not follow redirects on API calls", async () => {
    const { client, seen } = await serve([
      (_request, response) => {
        response.writeHead(302, { location: "http://example.invalid/steal" });
        response.end();
      },
    ]);
    const error = await failure(client.getCredits());
    expect(error.code).toBe("internal_error");
    expect(seen.length).toBeGreaterThanOrEqual(1);
  });
});

describe("odd answers become typed errors", () => {
  it.each([
    [
      "an HTML page",
      (_q: Seen, r: ServerResponse) => {
        r.writeHead(200, { "content-type": "text/html" });
        r.end("<html><body>Oops</body></html>");
      },
      /HTML page/,
    ],
    [
      "an empty body",
      (_q: Seen, r: ServerResponse) => {
        r.writeHead(200);
        r.end();
      },
      /empty body/,
    ],
    [
      "malformed JSON",
      (_q: Seen, r: ServerResponse) => {
        r.writeHead(200, { "content-type": "application/json" });
        r.end('{"data": ');
      },
      /not JSON/,
    ],
    ["no data field", json(200, { ok: true }), /envelope/],
  ] as [string, Reply, RegExp][])("%s", async (_title, reply, pattern) => {
    const { client } = await serve([reply]);
    const error = await failure(client.getCredits());
    expect(error.code).toBe("internal_error");
    expect(error.message).toMatch(pattern);
    expect(error.message).not.toMatch(/<html|Oops/);
  });

  it("caps the size of an answer", async () => {
    const { client } = await serve([
      (_request, response) => {
        response.writeHead(200, { "content-type": "application/json" });
        response.end(`{"data": "${"x".repeat(5 * 1024 * 1024)}"}`);
      },
    ]);
    expect((await failure(client.getCredits())).message).toMatch(/exceeded/);
  });

  it("keeps the service's request id and cleans its message", async () => {
    const { client } = await serve([
      json(
        400,
        { data: null, error: { code: "validation_error", message: "bad\u0007 field\n\nprompt" } },
        { "x-request-id": "req-9" },
      ),
    ]);
    const error = await failure(client.getCredits());
    expect(error.code).toBe("validation_error");
    expect(error.requestId).toBe("req-9");
    // Relayed as the service's words, in quotes: data, never instructions of ours.
    expect(error.message).toBe('The service answered HTTP 400: "bad field prompt"');
  });
});
