/**
 * The stdio transport (the SDK's, behind our line limit) takes whatever arrives on stdin without losing the
 * session: a line over the limit is skipped (answered when it is a request), a malformed line is skipped, and
 * a failed write on stdout closes the transport instead of crashing the process. Real streams, small limits;
 * the 10 MiB limit itself is exercised against the built bin in test/e2e/large-messages.test.ts.
 */
import { PassThrough, Writable } from "node:stream";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import type { LogLevel } from "../../src/logger.js";
import { MAX_MESSAGE_BYTES } from "../../src/config/index.js";
import { stdioTransport } from "../../src/transports/stdio.js";

interface Rig {
  transport: ReturnType<typeof stdioTransport>;
  stdin: PassThrough;
  received: JSONRPCMessage[];
  /** Every line the transport wrote on stdout, parsed. */
  sent: () => Array<Record<string, unknown>>;
  logs: Array<{ level: LogLevel; message: string; data: Record<string, unknown> | undefined }>;
  errors: Error[];
  closed: () => boolean;
}

const rigs: Rig[] = [];
afterEach(async () => {
  for (const rig of rigs.splice(0)) await rig.transport.close();
});

async function rig(options: { maxMessageBytes?: number; stdout?: Writable } = {}): Promise<Rig> {
  const stdin = new PassThrough();
  let out = "";
  const stdout =
    options.stdout ??
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        out += chunk.toString("utf8");
        done();
      },
    });
  const logs: Rig["logs"] = [];
  const transport = stdioTransport({
    stdin,
    stdout,
    ...(options.maxMessageBytes !== undefined && { maxMessageBytes: options.maxMessageBytes }),
    logger: { log: (level, message, data) => logs.push({ level, message, data }) },
  });
  const received: JSONRPCMessage[] = [];
  const errors: Error[] = [];
  let closed = false;
  transport.onmessage = (message) => received.push(message);
  transport.onerror = (error) => errors.push(error);
  transport.onclose = () => {
    closed = true;
  };
  await transport.start();
  const made: Rig = {
    transport,
    stdin,
    received,
    sent: () =>
      out
        .split("\n")
        .filter((line) => line !== "")
        .map((line) => JSON.parse(line) as Record<string, unknown>),
    logs,
    errors,
    closed: () => closed,
  };
  rigs.push(made);
  return made;
}

/** Writes to stdin and lets the stream deliver it. */
async function feed(stdin: PassThrough, ...chunks: Array<string | Buffer>): Promise<void> {
  for (const chunk of chunks) stdin.write(chunk);
  await new Promise((resolve) => setImmediate(resolve));
}

const ping = (id: number) => JSON.stringify({ jsonrpc: "2.0", id, method: "ping" });

describe("StdioTransport reading", () => {
  it("uses the SDK's 10 MiB limit by default", () => {
    expect(MAX_MESSAGE_BYTES).toBe(10 * 1024 * 1024);
  });

  it("delivers messages split across chunks, several per chunk, with CRLF and blank lines", async () => {
    const r = await rig();
    const two = `${ping(1)}\n${ping(2)}\r\n\n`;
    await feed(r.stdin, two.slice(0, 10), two.slice(10, 40), two.slice(40));
    await feed(r.stdin, Buffer.from(`${ping(3)}\n`));
    expect(r.received.map((message) => ("id" in message ? message.id : undefined))).toEqual([1, 2, 3]);
    expect(r.logs).toEqual([]);
  });

  it("accepts a line of exactly the limit and skips one byte more", async () => {
    const exact = JSON.stringify({ jsonrpc: "2.0", method: "notifications/x", params: { pad: "" } });
    const limit = 200;
    const padded = (extra: number) =>
      exact.replace('"pad":""', `"pad":"${"a".repeat(limit - exact.length + extra)}"`);
    const r = await rig({ maxMessageBytes: limit });
    expect(padded(0)).toHaveLength(limit);
    await feed(r.stdin, `${padded(0)}\n${padded(1)}\n`);
    expect(r.received).toHaveLength(1);
    expect(r.logs).toHaveLength(1);
    expect(r.logs[0]?.message).toContain(`${limit + 1}-byte message`);
  });

  it("answers an oversized request with a JSON-RPC error for its id (id before params) and goes on", async () => {
    const r = await rig({ maxMessageBytes: 4096 });
    const huge = JSON.stringify({
      jsonrpc: "2.0",
      id: 7,
      method: "tools/call",
      params: { name: "upload_image", arguments: { data_base64: "A".repeat(50_000), filename: "a.png" } },
    });
    await feed(r.stdin, huge.slice(0, 1000), huge.slice(1000, 30_000), `${huge.slice(30_000)}\n${ping(8)}\n`);
    expect(r.sent()).toHaveLength(1);
    const [answer] = r.sent();
    expect(answer).toMatchObject({ jsonrpc: "2.0", id: 7, error: { code: -32600 } });
    const message = String((answer?.["error"] as { message: string }).message);
    expect(message).toContain(`${huge.length} bytes`);
    expect(message).toContain("exceeded the 4096-byte");
    expect(message).toMatch(/path.*upload_image|upload_image.*path/);
    expect(message).toContain("data_base64");
    expect(r.logs).toHaveLength(1);
    expect(r.logs[0]).toMatchObject({
      level: "warning",
      data: { bytes: huge.length, limit: 4096, method: "tools/call", id: 7 },
    });
    expect(r.received).toEqual([JSON.parse(ping(8))]);
    expect(r.closed()).toBe(false);
  });

  it("finds the id at the end of the line, where the SDK's client puts it", async () => {
    const r = await rig({ maxMessageBytes: 4096 });
    const huge = JSON.stringify({
      method: "tools/call",
      params: { name: "upload_image", arguments: { data_base64: "B".repeat(20_000) }, _meta: { id: 99 } },
      jsonrpc: "2.0",
      id: "req-42",
    });
    await feed(r.stdin, `${huge}\n`);
    expect(r.sent()).toEqual([expect.objectContaining({ id: "req-42", error: expect.any(Object) })]);
    expect(r.logs[0]?.message).toMatch(/tools\/call id "req-42"/);
  });

  it.each([
    ["a notification", { jsonrpc: "2.0", method: "notifications/message", params: { pad: "" } }],
    ["a response", { jsonrpc: "2.0", id: 3, result: { pad: "" } }],
    ["an id only inside params", { jsonrpc: "2.0", method: "x/y", params: { pad: "", id: 5 } }],
  ])("does not answer %s that is too long, but logs it", async (_name, shape) => {
    const r = await rig({ maxMessageBytes: 1024 });
    const huge = JSON.stringify(shape).replace('"pad":""', `"pad":"${"c".repeat(5000)}"`);
    await feed(r.stdin, `${huge}\n${ping(1)}\n`);
    expect(r.sent()).toEqual([]);
    expect(r.logs).toHaveLength(1);
    expect(r.logs[0]?.message).toMatch(/^skipped a \d+-byte message on stdin.*over the 1024-byte limit/);
    expect(r.received).toHaveLength(1);
  });

  it("skips a line many times the limit, streamed in chunks, and still answers it", async () => {
    const r = await rig({ maxMessageBytes: 1024 });
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const head = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"x":"';
    const tail = '"}}';
    await feed(r.stdin, head);
    for (let i = 0; i < 64; i++) await feed(r.stdin, chunk);
    await feed(r.stdin, `${tail}\n`);
    expect(r.sent()).toEqual([expect.objectContaining({ id: 1 })]);
    expect(r.logs[0]?.data).toMatchObject({ bytes: head.length + 64 * chunk.length + tail.length });
  });

  it("logs and skips a malformed line, then goes on", async () => {
    const r = await rig();
    await feed(r.stdin, "this is not json\n", '{"jsonrpc":"1.0","id":1}\n', `${ping(2)}\n`);
    expect(r.received).toEqual([JSON.parse(ping(2))]);
    expect(r.logs.map((entry) => entry.message)).toEqual([
      expect.stringMatching(/^skipped a malformed message on stdin \(16 bytes\): .*JSON/),
    ]);
    // JSON but not JSON-RPC: the SDK skips it and reports its schema issues (serveStdio logs them).
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toHaveProperty("issues");
    expect(r.closed()).toBe(false);
  });
});

describe("StdioTransport writing", () => {
  it("writes one JSON line per message", async () => {
    const r = await rig();
    await r.transport.send({ jsonrpc: "2.0", id: 1, result: { text: "two\nlines" } });
    expect(r.sent()).toEqual([{ jsonrpc: "2.0", id: 1, result: { text: "two\nlines" } }]);
  });

  it("closes instead of crashing when stdout fails (EPIPE), and refuses later sends", async () => {
    const broken = new Writable({
      write(_chunk, _encoding, done) {
        done(Object.assign(new Error("write EPIPE"), { code: "EPIPE" }));
      },
    });
    const r = await rig({ stdout: broken });
    await expect(r.transport.send({ jsonrpc: "2.0", id: 1, result: {} })).rejects.toThrow(/EPIPE/);
    await new Promise((resolve) => setImmediate(resolve));
    expect(r.closed()).toBe(true);
    expect(r.errors.some((error) => /EPIPE/.test(error.message))).toBe(true);
    await expect(r.transport.send({ jsonrpc: "2.0", id: 2, result: {} })).rejects.toThrow(/closed/);
    // stdin is no longer read.
    await feed(r.stdin, `${ping(3)}\n`);
    expect(r.received).toEqual([]);
  });
});
