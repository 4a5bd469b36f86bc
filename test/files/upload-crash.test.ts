/**
 * Uploads of real-sized files (1 MiB, 8 MiB) against a hostile service on 127.0.0.1 that answers before
 * reading the body, resets the connection, or stalls while the file changes on disk. Every case must end
 * in an ordinary tool result with the right code, and the server must keep serving: the next get_credits
 * works. An unhandled 'error' event in the in-process server fails this run (vitest reports it); the last
 * block runs the built bin over stdio to prove the process itself survives.
 */
import { mkdtemp, open, rm, truncate, appendFile, writeFile } from "node:fs/promises";
import { createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness, type ToolCall } from "../helpers/harness.js";
import { connectStdio } from "../helpers/stdio.js";
import { jpegOfSize, pngOfSize } from "./fixtures.js";

const MiB = 1024 * 1024;
const API_KEY = "hostile-test-key-0123456789";

/** What the hostile service does with one upload request, once its head has arrived. */
type Behavior =
  | { answer: { status: number; type: string; body: string } }
  | { resetAfter: number } // reads this many body bytes, then resets (0: at once)
  | "hold" // reads nothing until release(), then reads the whole body and answers 200
  | "read-all"; // reads the whole body, then answers 200

interface Upload {
  /** Body bytes received so far. */
  received: number;
  /** The first 4 KiB of the body, to compare attempts. */
  start: Buffer;
  /** The whole body, for "read-all" and "hold" requests that completed. */
  body?: Buffer;
  /** Resolves when the connection of this request has closed. */
  closed: Promise<void>;
}

interface Hostile {
  baseUrl: string;
  /** Behaviours for the next upload requests, in order; the last one repeats. */
  script: Behavior[];
  uploads: Upload[];
  /** Resolves when a "hold" request has paused (the client is then blocked writing its body). */
  held(): Promise<void>;
  release(): void;
  close(): Promise<void>;
}

const UPLOADED_URL = "https://cdn.hostile.test/u/1.png";
const json = (value: unknown) => JSON.stringify(value);
const envelope = (data: unknown, error: unknown = null) => json({ data, error });

async function startHostile(): Promise<Hostile> {
  const sockets = new Set<Socket>();
  const uploads: Upload[] = [];
  let script: Behavior[] = ["read-all"];
  let uploadCount = 0;
  let heldSignal = deferred();
  let releaseSignal = deferred();

  const respond = (socket: Socket, status: number, type: string, body: string): void => {
    socket.end(
      `HTTP/1.1 ${status} Whatever\r\ncontent-type: ${type}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
        // A generous window, so the client's rate budget does not space the calls out.
        "x-ratelimit-limit: 100000\r\nx-ratelimit-remaining: 99999\r\nx-ratelimit-reset: 60\r\n" +
        `connection: close\r\n\r\n${body}`,
    );
  };

  const readBody = (socket: Socket, upload: Upload, first: Buffer, length: number, done: () => void) => {
    const chunks: Buffer[] = [];
    const take = (chunk: Buffer): void => {
      chunks.push(chunk);
      note(upload, chunk);
      if (upload.received >= length) {
        socket.off("data", take);
        upload.body = Buffer.concat(chunks);
        done();
      }
    };
    socket.on("data", take);
    take(first);
  };

  const onUpload = (socket: Socket, headers: Record<string, string>, first: Buffer): void => {
    const behavior = script[Math.min(uploadCount, script.length - 1)]!;
    uploadCount++;
    const upload: Upload = {
      received: 0,
      start: Buffer.alloc(0),
      closed: new Promise((resolve) => socket.once("close", () => resolve())),
    };
    uploads.push(upload);
    const length = Number(headers["content-length"]);
    const ok = () => respond(socket, 200, "application/json", envelope({ url: UPLOADED_URL }));
    if (behavior === "read-all") {
      readBody(socket, upload, first, length, ok);
    } else if (behavior === "hold") {
      socket.pause();
      heldSignal.resolve();
      void releaseSignal.promise.then(() => {
        readBody(socket, upload, first, length, ok);
        socket.resume();
      });
    } else if ("resetAfter" in behavior) {
      const take = (chunk: Buffer): void => {
        note(upload, chunk);
        if (upload.received >= behavior.resetAfter) {
          socket.off("data", take);
          socket.resetAndDestroy();
        }
      };
      socket.on("data", take);
      take(first);
    } else {
      // Answer at once and never read the rest: the client is still writing when the answer arrives.
      socket.pause();
      respond(socket, behavior.answer.status, behavior.answer.type, behavior.answer.body);
      setTimeout(() => socket.destroy(), 3000).unref();
    }
  };

  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {
      // Resets from the client are part of the game.
    });
    let buffered = Buffer.alloc(0);
    const onHead = (chunk: Buffer): void => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf("\r\n\r\n");
      if (end === -1) return;
      socket.off("data", onHead);
      const [requestLine = "", ...lines] = buffered.subarray(0, end).toString("latin1").split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(":");
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const [method, target] = requestLine.split(" ");
      const rest = buffered.subarray(end + 4);
      if (headers["authorization"] !== `Bearer ${API_KEY}`) {
        respond(socket, 401, "application/json", envelope(null, { code: "unauthorized", message: "no" }));
      } else if (method === "GET" && target === "/api/v1/credits") {
        respond(socket, 200, "application/json", envelope({ credits: 77, paid_access: true }));
      } else if (method === "POST" && target === "/api/v1/upload") {
        onUpload(socket, headers, rest);
      } else {
        respond(socket, 404, "application/json", envelope(null, { code: "not_found", message: target }));
      }
    };
    socket.on("data", onHead);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");

  return {
    baseUrl: `http://127.0.0.1:${address.port}/api/v1`,
    get script() {
      return script;
    },
    set script(value) {
      script = value;
      uploadCount = 0;
      uploads.length = 0;
      heldSignal = deferred();
      releaseSignal = deferred();
    },
    uploads,
    held: () => heldSignal.promise,
    release: () => releaseSignal.resolve(),
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

function note(upload: Upload, chunk: Buffer): void {
  upload.received += chunk.length;
  if (upload.start.length < 4096) {
    upload.start = Buffer.concat([upload.start, chunk]).subarray(0, 4096);
  }
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

const HTML_413 =
  "<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n<center><h1>413 Request Entity Too Large</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";

// 413 maps to validation_error once errors.ts says so (the lead's change); internal_error until then.
const CODE_413 = /^validation_error: /;

const EARLY_ANSWERS: [string, Behavior, RegExp][] = [
  [
    "400 JSON",
    {
      answer: {
        status: 400,
        type: "application/json",
        body: envelope(null, { code: "validation_error", message: "image: not accepted" }),
      },
    },
    /^validation_error: The service answered HTTP 400: "image: not accepted"/,
  ],
  [
    "413 JSON",
    {
      answer: {
        status: 413,
        type: "application/json",
        body: envelope(null, { code: "payload_too_large", message: "Request body too large" }),
      },
    },
    CODE_413,
  ],
  ["413 HTML", { answer: { status: 413, type: "text/html", body: HTML_413 } }, CODE_413],
];

const FILES: [string, number, (size: number) => Buffer][] = [
  ["1 MiB PNG", 1 * MiB, pngOfSize],
  ["8 MiB JPEG", 8 * MiB, jpegOfSize],
];

let hostile: Hostile;
let h: Harness;
const files = new Map<string, { path: string; bytes: Buffer }>();

beforeAll(async () => {
  hostile = await startHostile();
  h = await startHarness({
    config: { baseUrl: hostile.baseUrl, apiKey: API_KEY },
    client: { timeoutMs: 10_000, maxRetries: 1 },
  });
  for (const [name, size, make] of FILES) {
    const bytes = make(size);
    const file = path.join(h.imagesDir, `${name.replace(/ /g, "-")}.${name.endsWith("PNG") ? "png" : "jpg"}`);
    await writeFile(file, bytes);
    files.set(name, { path: file, bytes });
  }
});

afterAll(async () => {
  await h?.close();
  await hostile?.close();
});

/** The next ordinary call works: the server and its connection to the client are alive. */
async function expectAlive(): Promise<void> {
  const credits = await h.call("get_credits");
  expect(credits.result.isError, credits.text).toBeFalsy();
  expect(credits.text).toContain("credits=77");
}

function expectCode(call: ToolCall, code: RegExp): void {
  expect(call.result.isError, call.text).toBe(true);
  expect(call.text).toMatch(code);
  expect(call.text).toMatch(/\nNext step: \S/);
  expect(call.text).not.toMatch(/EBADF|Unhandled|file closed/);
}

describe.each(FILES)("an upload of a %s", (name) => {
  const file = () => files.get(name)!.path;

  it.each(EARLY_ANSWERS)("answered %s before the body was read", async (_label, behavior, code) => {
    hostile.script = [behavior];
    expectCode(await h.call("upload_image", { path: file() }), code);
    await expectAlive();
    expectCode(await h.call("generate_video", { prompt: "p", image_path: file() }), code);
    await expectAlive();
    expectCode(await h.call("generate_image", { prompt: "p", image_paths: [file()] }), code);
    await expectAlive();
  });

  it("answered 200 before the body was read: success with the service's url", async () => {
    hostile.script = [
      { answer: { status: 200, type: "application/json", body: envelope({ url: UPLOADED_URL }) } },
    ];
    const call = await h.call("upload_image", { path: file() });
    expect(call.result.isError, call.text).toBeFalsy();
    expect(call.structured).toEqual({ url: UPLOADED_URL });
    await expectAlive();
  });

  it("reset at once: network_error after one retry", async () => {
    hostile.script = [{ resetAfter: 0 }];
    expectCode(await h.call("upload_image", { path: file() }), /^network_error: /);
    expect(hostile.uploads).toHaveLength(2);
    await expectAlive();
    expectCode(await h.call("generate_video", { prompt: "p", image_path: file() }), /^network_error: /);
    await expectAlive();
  });

  it("reset after part of the body: network_error; each attempt starts the file from byte 0", async () => {
    hostile.script = [{ resetAfter: 300_000 }];
    expectCode(await h.call("generate_image", { prompt: "p", image_paths: [file()] }), /^network_error: /);
    expect(hostile.uploads).toHaveLength(2);
    const head = files.get(name)!.bytes.subarray(0, 2048);
    expect(hostile.uploads[0]!.received).toBeGreaterThanOrEqual(300_000);
    for (const upload of hostile.uploads) {
      // The part's headers, then the file from its first byte.
      const at = upload.start.indexOf(head);
      expect(at).toBeGreaterThan(0);
      expect(upload.start.subarray(0, at).toString("latin1")).toMatch(
        /^--\S+\r\nContent-Disposition: form-data; name="image"; filename="[^"]+"\r\nContent-Type: image\/(png|jpeg)\r\n\r\n$/,
      );
    }
    await expectAlive();
  });

  it("reset once, then read in full: the retry sends the whole file from byte 0", async () => {
    const { bytes } = files.get(name)!;
    hostile.script = [{ resetAfter: 200_000 }, "read-all"];
    const call = await h.call("upload_image", { path: file() });
    expect(call.result.isError, call.text).toBeFalsy();
    expect(call.structured).toEqual({ url: UPLOADED_URL });
    const body = hostile.uploads[1]!.body!;
    const at = body.indexOf(bytes.subarray(0, 64));
    expect(at).toBeGreaterThan(0);
    expect(body.subarray(at, at + bytes.length).equals(bytes)).toBe(true);
    expect(body.subarray(at + bytes.length).toString("latin1")).toMatch(/^\r\n--[^\r\n]+--\r\n$/);
    await expectAlive();
  });
});

describe("a file that changes while it is uploaded", () => {
  const size = 8 * MiB;

  // The service stalls after the head, so the client is blocked mid-file (far more than the socket
  // buffers hold is still unread) when the file changes; then it reads on.
  async function changeWhileHeld(change: (file: string) => Promise<void>): Promise<ToolCall> {
    const file = path.join(h.imagesDir, `moving-${Math.random().toString(36).slice(2)}.png`);
    await writeFile(file, pngOfSize(size));
    hostile.script = ["hold"];
    const pending = h.call("upload_image", { path: file });
    await hostile.held();
    // Generous: lets the client fill the socket buffers and block on its next write.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await change(file);
    hostile.release();
    return pending;
  }

  const expectChanged = async (call: ToolCall) => {
    expectCode(
      call,
      /^validation_error: path: ".*moving-[a-z0-9]+\.png" changed while it was being checked or read/,
    );
    expect(call.text).toMatch(/Next step: Wait until the program writing the file has finished saving it/);
    // Not retried: the service saw one attempt.
    expect(hostile.uploads).toHaveLength(1);
    await expectAlive();
  };

  it("appended to", async () => {
    await expectChanged(await changeWhileHeld((file) => appendFile(file, Buffer.alloc(4096, 1))));
  });

  it("rewritten in place (same size, different bytes near the end)", async () => {
    await expectChanged(
      await changeWhileHeld(async (file) => {
        const handle = await open(file, "r+");
        try {
          await handle.write(Buffer.alloc(MiB, 0x33), 0, MiB, size - 2 * MiB);
        } finally {
          await handle.close();
        }
      }),
    );
  });

  it("truncated", async () => {
    await expectChanged(await changeWhileHeld((file) => truncate(file, 2 * MiB)));
  });

  it("cancelled by the client mid-upload: the request stops and the server keeps serving", async () => {
    const file = path.join(h.imagesDir, "cancelled.png");
    await writeFile(file, pngOfSize(size));
    hostile.script = ["hold"];
    const controller = new AbortController();
    const pending = h.call("upload_image", { path: file }, { signal: controller.signal });
    await hostile.held();
    controller.abort();
    await expect(pending).rejects.toThrow();
    await hostile.uploads[0]!.closed;
    hostile.release();
    await expectAlive();
  });

  it("left alone: the held upload completes with every byte", async () => {
    const call = await changeWhileHeld(async () => {});
    expect(call.result.isError, call.text).toBeFalsy();
    expect(hostile.uploads[0]!.body!.length).toBeGreaterThan(size);
  });
});

// Needs `npm run build` (npm test runs it first), like test/e2e.
describe("the built bin over stdio", () => {
  it("survives early answers and resets of an 8 MiB upload, and keeps serving", async () => {
    const root = await mkdtemp(path.join(tmpdir(), "generation-mcp-upload-crash-"));
    const imagesDir = path.join(root, "images");
    await import("node:fs/promises").then((fs) => fs.mkdir(imagesDir));
    const file = path.join(imagesDir, "big.jpg");
    await writeFile(file, jpegOfSize(8 * MiB));
    const session = await connectStdio([], {
      HOME: root,
      GENERATION_API_KEY: API_KEY,
      GENERATION_BASE_URL: hostile.baseUrl,
      GENERATION_ALLOWED_DIRS: imagesDir,
      GENERATION_OUTPUT_DIR: path.join(root, "out"),
      GENERATION_STATE_DIR: path.join(root, "state"),
    });
    let closed = false;
    session.client.onclose = () => {
      closed = true;
    };
    const call = async (name: string, args: Record<string, unknown>) => {
      const result = (await session.client.callTool({ name, arguments: args })) as CallToolResult;
      return result.content.map((part) => (part.type === "text" ? part.text : "")).join("");
    };
    try {
      for (const [behavior, code] of [
        [EARLY_ANSWERS[2]![1], CODE_413],
        [EARLY_ANSWERS[0]![1], /^validation_error: /],
        [{ resetAfter: 0 }, /^network_error: /],
        [{ resetAfter: 500_000 }, /^network_error: /],
      ] as [Behavior, RegExp][]) {
        hostile.script = [behavior];
        expect(await call("upload_image", { path: file })).toMatch(code);
        expect(await call("get_credits", {})).toContain("credits=77");
      }
      hostile.script = [
        { answer: { status: 200, type: "application/json", body: envelope({ url: UPLOADED_URL }) } },
      ];
      expect(await call("upload_image", { path: file })).toContain(UPLOADED_URL);
      expect(await call("get_credits", {})).toContain("credits=77");
      expect(closed).toBe(false);
      expect(session.stderr()).not.toMatch(/Unhandled 'error' event|EBADF|file closed/);
    } finally {
      await session.close();
      await rm(root, { recursive: true, force: true });
    }
  }, 90_000);
});
