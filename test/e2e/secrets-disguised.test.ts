/**
 * The API key never leaves in disguise. The built bin over stdio against a sandbox with a long random key;
 * the service echoes the key mangled (an escape sequence with and without ESC, a zero-width space, a line
 * break, a tab, a soft hyphen, bidi controls, another case, cut in two, JSON escapes) in error messages, a
 * task's failure reason and list fields. Every message on stdout and all of stderr are read the way an
 * attacker would (escapes decoded, invisible characters dropped, case folded) and must show no piece of
 * the key as long as the redaction rule promises to mask.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { readable } from "../helpers/readable.js";
import { connectStdio, type StdioSession } from "../helpers/stdio.js";

const alnum = (length: number) =>
  randomBytes(length * 2)
    .toString("base64")
    .replace(/[^A-Za-z0-9]/g, "")
    .slice(0, length);
const KEY = `sk-live-${alnum(44)}`;
const A = KEY.slice(0, 26);
const B = KEY.slice(26);

/** Each way the service mangles the key in a message. */
const DISGUISES: Array<[string, string]> = [
  ["ANSI escape", `${A}\u001b[31m${B}`],
  ["ANSI escape without ESC", `${A}[31m${B}`],
  ["zero-width space", `${A}\u200b${B}`],
  ["newline", `${A}\n${B}`],
  ["tab", `${A}\t${B}`],
  ["soft hyphen", `${A}\u00ad${B}`],
  ["bidi controls", `\u202e${A}\u202c\u2067${B}\u2069`],
  ["lower case", KEY.toLowerCase()],
  ["upper case", KEY.toUpperCase()],
  ["cut in two with text between", `first ${A} then some words, second ${B}`],
  ["JSON-escaped newline in JSON text", JSON.stringify({ detail: `${A}\n${B}` })],
  ["JSON-escaped zero-width space", `{"detail":"${A}\\u200b${B}"}`],
];

let sandbox: SandboxHandle;
let session: StdioSession;
let root: string;

beforeAll(async () => {
  sandbox = await startSandbox({
    timings: { queuedMs: 20, processingMs: 80 },
    accounts: [{ key: KEY, name: "paid", credits: 10_000, paidAccess: true, subscription: "pro" }],
  });
  root = await mkdtemp(path.join(tmpdir(), "generation-mcp-disguise-"));
  session = await connectStdio([], {
    HOME: root,
    GENERATION_API_KEY: KEY,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_POLL_INTERVAL_MS: "100",
    GENERATION_STATE_DIR: path.join(root, "state"),
  });
  await session.client.setLoggingLevel("debug");
}, 30_000);

afterAll(async () => {
  await session?.close();
  await sandbox?.close();
  await rm(root, { recursive: true, force: true });
});

const call = async (name: string, args: Record<string, unknown>) =>
  (await session.client.callTool({ name, arguments: args }, undefined, {
    timeout: 30_000,
  })) as CallToolResult;
const textOf = (result: CallToolResult) =>
  result.content.map((part) => (part.type === "text" ? part.text : "")).join("\n");

/** Every string in a JSON value (keys too), so escapes of the serialized form cannot hide anything. */
function stringsOf(value: unknown, out: string[] = []): string[] {
  if (typeof value === "string") out.push(value);
  else if (Array.isArray(value)) for (const item of value) stringsOf(item, out);
  else if (typeof value === "object" && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      out.push(key);
      stringsOf(item, out);
    }
  }
  return out;
}

function keyPiecesIn(text: string): string[] {
  const plain = readable(text);
  const key = KEY.toLowerCase();
  const piece = Math.max(8, Math.ceil(key.length / 3));
  const found: string[] = [];
  for (let at = 0; at + piece <= key.length; at++) {
    if (plain.includes(key.slice(at, at + piece))) found.push(key.slice(at, at + piece));
  }
  return found;
}

describe("the key echoed in disguise never leaves the server", () => {
  it("through error messages, a failure reason and list fields", async () => {
    const seen: string[] = [];
    const faults = sandbox.faults;
    expect((await call("get_credits", {})).isError).toBeFalsy();

    for (const [name, message] of DISGUISES) {
      faults.failNext("credits", {
        status: 401,
        code: "unauthorized",
        message: `${name}: bad key ${message}`,
      });
      const result = await call("get_credits", {});
      expect(result.isError, name).toBe(true);
      seen.push(textOf(result));
    }
    faults.failNext("videos", {
      status: 400,
      code: "validation_error",
      message: `key=${DISGUISES[3]?.[1]};`,
    });
    seen.push(textOf(await call("list_videos", {})));
    faults.failNext("generate", {
      status: 403,
      code: "insufficient_credits",
      message: `${DISGUISES[0]?.[1]}`,
    });
    seen.push(textOf(await call("generate_video", { prompt: "short of credits", duration: 1 })));
    // A server error on a read is retried (and logged) before it is reported.
    faults.failNext("credits", {
      status: 502,
      code: "upstream_error",
      message: DISGUISES[2]?.[1] ?? "",
      count: 5,
    });
    seen.push(textOf(await call("get_credits", {})));

    // The key cut across two fields of the service's answer: a prompt and an image URL in the history. The
    // task fails with a reason that carries the key with a zero-width space and a colour (armed before the
    // start: a task that completed first could not fail any more).
    faults.failNextTask(`render failed for ${A}\u200b\u001b[1m${B.toUpperCase()}`);
    const started = await call("generate_video", {
      prompt: `about ${A}`,
      image_url: `https://images.example/${B}.png`,
      duration: 1,
      wait: false,
    });
    const id = String(started.structuredContent?.["video_id"]);
    seen.push(textOf(started));
    const list = await call("list_videos", { limit: 5 });
    expect(JSON.stringify(list.structuredContent)).toContain("[redacted]");
    seen.push(textOf(list));

    const failed = await call("get_status", { video_id: id, wait: true });
    expect(failed.structuredContent?.["status"]).toBe("failed");
    seen.push(textOf(failed));

    // The disguises were really masked, not merely missing: the echoing paths show the mask.
    expect(seen.filter((text) => text.includes("[redacted]")).length).toBeGreaterThanOrEqual(
      DISGUISES.length,
    );
    // The sandbox really received the key, so the scans below are meaningful.
    expect(sandbox.requests.some((request) => request.key === KEY)).toBe(true);

    expect(session.messages.some((message) => message.includes("notifications/message"))).toBe(true);
    for (const message of session.messages) {
      expect(keyPiecesIn(message), message).toEqual([]);
      expect(keyPiecesIn(stringsOf(JSON.parse(message)).join("\u0000")), message).toEqual([]);
    }
    expect(keyPiecesIn(session.stderr()), session.stderr()).toEqual([]);
  }, 90_000);
});
