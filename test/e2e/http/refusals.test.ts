/**
 * What stands between the network and the tools in `--http` mode, tried against the built server as an
 * attacker or a careless client would: authentication (401 before any MCP processing; a wrong key is the
 * service's `unauthorized`), Host and Origin checks against DNS rebinding (403), CORS only when configured,
 * body limits (413) and media type (415), methods a stateless server does not serve (405), a start refused
 * off loopback without an allow-list, a flood of 200 concurrent requests (answers or 429, never a crash),
 * and no stack trace in any answer.
 */
import { spawn } from "node:child_process";
import { request as httpRequest } from "node:http";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectHttp, INITIALIZE, post, startHttpBin, type HttpServerProcess } from "../../helpers/http.js";
import { CLI } from "../../helpers/stdio.js";

const PAID = "sk-sandbox-paid";
const STACK = /\n\s+at .+[(:]\d+:\d+|\.[cm]?[jt]s:\d+:\d+/;
const CALL_CREDITS = (id: number) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name: "get_credits", arguments: {} },
  });

let dir: string;
let server: HttpServerProcess;
const bodies: string[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "generation-mcp-http-refusals-"));
  server = await startHttpBin(["--sandbox"], { HOME: dir, GENERATION_STATE_DIR: path.join(dir, "state") });
});
afterAll(async () => {
  const code = await server?.stop();
  expect(code).toBe(0);
  // Nothing anyone sent produced a stack trace, in an answer or in the log.
  for (const body of bodies) expect(body).not.toMatch(STACK);
  expect(server.stderr()).not.toMatch(STACK);
  await rm(dir, { recursive: true, force: true });
});

/** A POST that keeps its body for the final no-stack-trace check. */
async function send(body: string | Uint8Array, headers: Record<string, string> = {}, url = server.url) {
  const answer = await post(url, body, headers);
  bodies.push(answer.text);
  return answer;
}

/** A raw request with headers fetch refuses to set (Host). */
function rawRequest(
  port: number,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: "127.0.0.1", port, path: "/mcp", method: "POST", headers, setHost: false },
      (res) => {
        let text = "";
        res.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

describe("authentication", () => {
  it("answers 401 with WWW-Authenticate and a JSON body when the key is missing, empty or malformed", async () => {
    for (const authorization of [undefined, "", "Bearer", "Bearer ", "Basic c2stc2FuZGJveC1wYWlk", PAID]) {
      const headers = authorization === undefined ? {} : { authorization };
      const answer = await send(INITIALIZE, headers);
      expect(answer.status, `authorization: ${String(authorization)}`).toBe(401);
      expect(answer.headers.get("www-authenticate")).toMatch(/^Bearer realm=/);
      expect(answer.headers.get("content-type")).toMatch(/^application\/json/);
      const body = JSON.parse(answer.text) as { error?: { message?: string } };
      expect(body.error?.message).toMatch(/^unauthorized: .*Authorization: Bearer/);
    }
  });

  it("refuses an unauthenticated request before reading it: no MCP processing happens", async () => {
    const answer = await send("this is not JSON at all");
    expect(answer.status).toBe(401);
  });

  it("passes a wrong key to the service, whose refusal comes back as the tool's `unauthorized`", async () => {
    const client = await connectHttp(server.url, "sk-not-a-real-key-0123456789");
    try {
      const result = (await client.callTool({ name: "get_credits", arguments: {} })) as CallToolResult;
      expect(result.isError).toBe(true);
      const text = result.content.map((part) => (part.type === "text" ? part.text : "")).join("\n");
      expect(text).toMatch(/^unauthorized/);
      expect(text).not.toContain("sk-not-a-real-key-0123456789");
      expect(text).toMatch(/key/i);
    } finally {
      await client.close();
    }
  });

  it("serves a good key", async () => {
    const client = await connectHttp(server.url, PAID);
    try {
      const result = (await client.callTool({ name: "get_credits", arguments: {} })) as CallToolResult;
      expect(result.isError ?? false).toBe(false);
      expect(result.structuredContent).toMatchObject({ credits: expect.any(Number) });
    } finally {
      await client.close();
    }
  });
});

describe("DNS rebinding and browsers", () => {
  it("answers 403 to a Host that is not this server's", async () => {
    for (const host of ["evil.example", `evil.example:${server.port}`, "localhost:1", "127.0.0.1"]) {
      const answer = await rawRequest(
        server.port,
        {
          host,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          authorization: `Bearer ${PAID}`,
        },
        INITIALIZE,
      );
      bodies.push(answer.text);
      expect(answer.status, host).toBe(403);
    }
    const good = await rawRequest(
      server.port,
      {
        host: `localhost:${server.port}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        authorization: `Bearer ${PAID}`,
      },
      INITIALIZE,
    );
    expect(good.status).toBe(200);
  });

  it("answers 403 to a foreign Origin, and never sends CORS headers unless configured", async () => {
    const refused = await send(INITIALIZE, {
      origin: "https://evil.example",
      authorization: `Bearer ${PAID}`,
    });
    expect(refused.status).toBe(403);
    expect(refused.headers.get("access-control-allow-origin")).toBeNull();
    const preflight = await fetch(server.url, {
      method: "OPTIONS",
      headers: { origin: "https://app.example", "access-control-request-method": "POST" },
    });
    expect(preflight.status).toBe(403);
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
    // The server's own origin is not a rebinding attack.
    const own = await send(INITIALIZE, {
      origin: `http://localhost:${server.port}`,
      authorization: `Bearer ${PAID}`,
    });
    expect(own.status).toBe(200);
    expect(own.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("answers a listed origin with CORS headers and a preflight", async () => {
    const withCors = await startHttpBin(["--sandbox", "--allowed-origins", "https://app.example"], {
      HOME: dir,
      GENERATION_STATE_DIR: path.join(dir, "state-cors"),
    });
    try {
      const preflight = await fetch(withCors.url, {
        method: "OPTIONS",
        headers: {
          origin: "https://app.example",
          "access-control-request-method": "POST",
          "access-control-request-headers": "authorization, content-type, mcp-protocol-version",
        },
      });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get("access-control-allow-origin")).toBe("https://app.example");
      expect(preflight.headers.get("access-control-allow-headers")).toMatch(/authorization/);
      expect(preflight.headers.get("access-control-allow-methods")).toMatch(/POST/);

      const answer = await send(
        INITIALIZE,
        { origin: "https://app.example", authorization: `Bearer ${PAID}` },
        withCors.url,
      );
      expect(answer.status).toBe(200);
      expect(answer.headers.get("access-control-allow-origin")).toBe("https://app.example");
      // A 401 must be readable by the page too, or it cannot ask for a key.
      const unauthenticated = await send(INITIALIZE, { origin: "https://app.example" }, withCors.url);
      expect(unauthenticated.status).toBe(401);
      expect(unauthenticated.headers.get("access-control-expose-headers")).toMatch(/www-authenticate/);

      const other = await send(
        INITIALIZE,
        { origin: "https://evil.example", authorization: `Bearer ${PAID}` },
        withCors.url,
      );
      expect(other.status).toBe(403);
    } finally {
      expect(await withCors.stop()).toBe(0);
    }
  });

  it("refuses to start on a non-loopback address without an allow-list of hosts", async () => {
    const child = spawn(process.execPath, [CLI, "--http", "--sandbox", "--host", "0.0.0.0", "--port", "0"], {
      env: { PATH: process.env["PATH"] ?? "", HOME: dir },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code).not.toBe(0);
    expect(stderr).toMatch(/GENERATION_HTTP_ALLOWED_HOSTS|--allowed-hosts/);
    expect(stderr).not.toMatch(STACK);
  });
});

describe("requests a server must not take", () => {
  it("refuses a 5 MB body with 413, declared or streamed, and keeps serving", async () => {
    const big = JSON.stringify({
      jsonrpc: "2.0",
      id: 9,
      method: "tools/call",
      params: { name: "upload_image", arguments: { data_base64: "A".repeat(5 * 1024 * 1024) } },
    });
    // Several times: a server that closed the connection while the body still arrived would cost the
    // client its answer (EPIPE instead of 413) on some of them.
    for (let i = 0; i < 5; i++) {
      const declared = await send(big, { authorization: `Bearer ${PAID}` });
      expect(declared.status).toBe(413);
      expect(declared.text).toMatch(/image_url/);
    }

    // No Content-Length: the limit holds while reading.
    const chunks = new ReadableStream<Uint8Array>({
      start(controller) {
        const piece = new TextEncoder().encode("A".repeat(1024 * 1024));
        controller.enqueue(new TextEncoder().encode('{"jsonrpc":"2.0","id":1,"method":"x","params":"'));
        for (let i = 0; i < 5; i++) controller.enqueue(piece);
        controller.close();
      },
    });
    const streamed = await fetch(server.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        authorization: `Bearer ${PAID}`,
      },
      body: chunks,
      duplex: "half",
    } as RequestInit);
    expect(streamed.status).toBe(413);
    bodies.push(await streamed.text());

    const after = await send(CALL_CREDITS(2), { authorization: `Bearer ${PAID}` });
    expect(after.status).toBe(200);
  });

  it("answers 415 to a body that is not JSON-typed, 400 to one that is not JSON, 405 to GET and DELETE", async () => {
    const typed = await send(CALL_CREDITS(1), {
      authorization: `Bearer ${PAID}`,
      "content-type": "text/plain",
    });
    expect(typed.status).toBe(415);
    const garbled = await send("{not json", { authorization: `Bearer ${PAID}` });
    expect(garbled.status).toBe(400);
    expect(JSON.parse(garbled.text)).toMatchObject({ error: { code: -32700 } });
    for (const method of ["GET", "DELETE"]) {
      const answer = await fetch(server.url, {
        method,
        headers: { accept: "text/event-stream", authorization: `Bearer ${PAID}` },
      });
      bodies.push(await answer.text());
      expect(answer.status, method).toBe(405);
      expect(answer.headers.get("allow")).toBe("POST");
    }
    const elsewhere = await send(
      CALL_CREDITS(1),
      { authorization: `Bearer ${PAID}` },
      server.url.replace(/\/mcp$/, "/other"),
    );
    expect(elsewhere.status).toBe(404);
  });

  it("survives 200 concurrent requests: each is answered with a result or 429, and it serves after", async () => {
    const keys = [PAID, "sk-sandbox-free"];
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        send(CALL_CREDITS(i), { authorization: `Bearer ${keys[i % 2] ?? PAID}` }),
      ),
    );
    let served = 0;
    for (const answer of answers) {
      if (answer.status === 429) {
        expect(answer.headers.get("retry-after")).toMatch(/^\d+$/);
        continue;
      }
      expect(answer.status, answer.text).toBe(200);
      const body = JSON.parse(answer.text) as { result?: CallToolResult };
      expect(body.result).toBeDefined();
      served++;
    }
    // The cap limits calls in flight per key; it must not turn a burst away wholesale.
    expect(served).toBeGreaterThanOrEqual(32);

    const health = await fetch(server.url.replace(/\/mcp$/, "/healthz"));
    expect(health.status).toBe(200);
    const ready = await fetch(server.url.replace(/\/mcp$/, "/readyz"));
    expect(ready.status).toBe(200);
    const after = await send(CALL_CREDITS(1000), { authorization: `Bearer ${PAID}` });
    expect(after.status).toBe(200);
  });
});
