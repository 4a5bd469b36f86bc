/**
 * Upload links under attack, against the built bin over `--http` and a sandbox whose request log tells what
 * reached the service: a guessed, a replayed, an expired and another caller's link; a 50 MB body (declared
 * and streamed); a polyglot; a slow drip; 1,000 link requests from one caller; an HTML file named .png.
 * Nothing reaches the service for any of them, the server stays up and answers a good picture afterwards,
 * and its live heap returns to where it was.
 */
import { randomBytes } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { request } from "node:http";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { PNG_BYTES, pngOfSize } from "../files/fixtures.js";
import { tempRoot } from "../helpers/http-calls.js";
import { startHttpAgainst, type HttpServerProcess } from "../helpers/http.js";
import { heapSnapshotEnv, liveHeapMiB, report, resultOf, rpc } from "../helpers/red-team.js";

const MB = 1024 * 1024;
const HTML = Buffer.from("<!doctype html><html><body><script>alert(document.domain)</script></body></html>");

let sandbox: SandboxHandle;
let root: Awaited<ReturnType<typeof tempRoot>>;
let server: HttpServerProcess;
let heapBefore: number;
const snapshots = () => path.join(root.dir, "heap");

beforeAll(async () => {
  [sandbox, root] = await Promise.all([startSandbox(), tempRoot("upload-hostile-")]);
  await mkdir(snapshots());
  server = await startHttpAgainst(sandbox, root.dir, 100, heapSnapshotEnv(path.join(root.dir, "heap")));
  // Warm: the upload route, the page and the checks are loaded once before the baseline.
  const warm = await link(sandbox.keys.paid);
  await put(warm.url, PNG_BYTES);
  heapBefore = await liveHeapMiB(server.child.pid ?? 0, snapshots());
});
afterAll(async () => {
  await server?.stop();
  await sandbox?.close();
  await root?.remove();
});

const serviceRequests = () => sandbox.requests.length;

async function tool(key: string, args: Record<string, unknown>) {
  const answer = await rpc(server.url, key, "tools/call", { name: "upload_image", arguments: args });
  const result = resultOf(answer) as {
    isError?: boolean;
    structuredContent?: Record<string, string>;
    content: Array<{ text: string }>;
  };
  return { ...result, text: result.content.map((item) => item.text).join("\n") };
}

async function link(key: string): Promise<{ id: string; url: string }> {
  const answer = await tool(key, { from_user: true });
  expect(answer.isError, answer.text).toBeFalsy();
  return {
    id: String(answer.structuredContent?.["upload_id"]),
    url: String(answer.structuredContent?.["upload_url"]),
  };
}

async function put(url: string, body: Uint8Array, headers: Record<string, string> = {}) {
  const response = await fetch(url, { method: "PUT", body, headers });
  return { status: response.status, body: (await response.json()) as Record<string, string> };
}

/** Sends `total` bytes in chunks of `chunk` every `everyMs`, without a Content-Length; the status, or "closed". */
function stream(url: string, total: number, chunk: number, everyMs: number): Promise<number | "closed"> {
  return new Promise((resolve) => {
    const req = request(url, { method: "PUT", headers: { "content-type": "application/octet-stream" } });
    let sent = 0;
    const timer = setInterval(() => {
      if (sent >= total) {
        clearInterval(timer);
        return void req.end();
      }
      sent += chunk;
      req.write(Buffer.alloc(chunk, 0x41));
    }, everyMs);
    req.on("response", (response) => {
      clearInterval(timer);
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    req.on("error", () => {
      clearInterval(timer);
      resolve("closed");
    });
  });
}

describe.concurrent("hostile input to upload links", () => {
  // In turn, on one server whose live heap is measured at the end.
  describe("on the one server", () => {
    it.sequential("a guessed token opens nothing and takes nothing", async () => {
      const before = serviceRequests();
      for (let guess = 0; guess < 20; guess++) {
        const url = `http://127.0.0.1:${server.port}/upload/${randomBytes(32).toString("base64url")}`;
        expect((await fetch(url)).status).toBe(404);
        expect((await put(url, PNG_BYTES)).status).toBe(404);
      }
      expect(serviceRequests()).toBe(before);
    });

    it.sequential("a replayed link takes one picture only", async () => {
      const { url } = await link(sandbox.keys.paid);
      const before = serviceRequests();
      expect([200, 202]).toContain((await put(url, PNG_BYTES)).status);
      const uploads = serviceRequests();
      expect(uploads).toBeLessThanOrEqual(before + 1);
      const again = await put(url, pngOfSize(200));
      expect(again.status).toBe(410);
      expect(again.body["error"]).toMatch(/has been used/);
      expect((await fetch(url)).status).toBe(410);
      expect(serviceRequests()).toBe(uploads);
    });

    it.sequential("another caller's upload_id is not_found, before and after its picture came", async () => {
      const mine = await link(sandbox.keys.paid);
      const theirs = await tool(sandbox.keys.free, { upload_id: mine.id, wait: false });
      expect(theirs.isError).toBe(true);
      expect(theirs.text).toMatch(/^not_found: upload_id "[A-Za-z0-9_-]{22}" is not an upload link of yours/);
      // The picture arrives while the owner waits (its key is held here then): it goes to the owner's account.
      const waiting = tool(sandbox.keys.paid, { upload_id: mine.id, wait: true, timeout_seconds: 20 });
      await new Promise((resolve) => setTimeout(resolve, 300));
      const sent = await put(mine.url, PNG_BYTES);
      expect(sent.status).toBe(200);
      expect((await waiting).structuredContent).toEqual({ url: sent.body["url"] });
      expect(sandbox.requests.filter((entry) => entry.route === "upload").at(-1)?.key).toBe(
        sandbox.keys.paid,
      );
      const after = await tool(sandbox.keys.free, { upload_id: mine.id, wait: false });
      expect(after.text).toMatch(/^not_found:/);
      expect(JSON.stringify(after)).not.toContain(sent.body["url"]);
    });

    it.sequential(
      "a 50 MB body is refused at the cap, declared or streamed, and the link stays usable",
      async () => {
        const { url } = await link(sandbox.keys.paid);
        const before = serviceRequests();
        const declared = await new Promise<number | "closed">((resolve) => {
          const req = request(url, { method: "PUT", headers: { "content-length": String(50 * MB) } });
          req
            .on("response", (response) => resolve(response.statusCode ?? 0))
            .on("error", () => resolve("closed"));
          req.write(Buffer.alloc(64 * 1024));
        });
        expect(declared).toBe(413);
        const streamed = await stream(url, 50 * MB, MB, 5);
        expect([413, "closed"]).toContain(streamed);
        expect(serviceRequests()).toBe(before);
        expect((await fetch(url)).status).toBe(200);
        report("upload link 50 MB body", { declared: String(declared), streamed: String(streamed) });
      },
    );

    it.sequential(
      "a polyglot and an HTML page named .png are refused by their content, nothing sent",
      async () => {
        const { url } = await link(sandbox.keys.paid);
        const before = serviceRequests();
        const polyglot = await put(url, Buffer.concat([PNG_BYTES, HTML]));
        expect(polyglot.status).toBe(415);
        expect(polyglot.body["error"]).toMatch(/bytes after the end of the PNG image/);
        const form = new FormData();
        form.append("file", new Blob([HTML], { type: "image/png" }), "cat.png");
        const named = await fetch(url, { method: "POST", body: form });
        expect(named.status).toBe(415);
        expect(((await named.json()) as { error: string }).error).toMatch(
          /^The file is not a JPG, PNG or WebP image/,
        );
        const page = await fetch(url, { method: "POST", body: form, headers: { accept: "text/html" } });
        expect(page.status).toBe(415);
        expect(await page.text()).not.toContain("<script>alert");
        expect(serviceRequests()).toBe(before);
        // Refused pictures leave the link open: the person sends the right one.
        expect((await put(url, PNG_BYTES)).status).toBe(200);
      },
    );

    it.sequential("a slow drip is dropped and holds nothing", async () => {
      const { url } = await link(sandbox.keys.paid);
      const before = serviceRequests();
      const started = Date.now();
      const dripped = await stream(url, 1 * MB, 10, 500);
      const seconds = (Date.now() - started) / 1000;
      expect([408, "closed"]).toContain(dripped);
      expect(seconds).toBeLessThan(15);
      expect(serviceRequests()).toBe(before);
      expect((await fetch(new URL("/healthz", server.url))).status).toBe(200);
      report("upload link slow drip", { dropped_after_s: seconds });
    });

    it.sequential(
      "1,000 link requests from one caller: 10 open at most, then a cap per minute; others unaffected",
      async () => {
        const before = serviceRequests();
        const key = "sk-flood-" + randomBytes(8).toString("hex");
        const answers: string[] = [];
        for (let at = 0; at < 1000; at += 10) {
          const batch = await Promise.all(Array.from({ length: 10 }, () => tool(key, { from_user: true })));
          answers.push(
            ...batch.map((answer) => (answer.isError ? (answer.text.split(":")[0] ?? "") : "link")),
          );
        }
        const counts = Object.fromEntries(
          ["link", "validation_error", "rate_limit_exceeded"].map((code) => [
            code,
            answers.filter((answer) => answer === code).length,
          ]),
        );
        expect(counts).toEqual({ link: 10, validation_error: 20, rate_limit_exceeded: 970 });
        const refused = await tool(key, { from_user: true });
        expect(refused.text).toMatch(
          /^rate_limit_exceeded: from_user: more than 30 upload links were asked for within a minute/,
        );
        expect(serviceRequests()).toBe(before);
        await link(sandbox.keys.paid);
        report("upload link flood", counts);
      },
    );

    it.sequential(
      "afterwards: the server is up, a good picture goes through, and the live heap is back near its start",
      async () => {
        expect((await fetch(new URL("/healthz", server.url))).status).toBe(200);
        const { url } = await link(sandbox.keys.paid);
        expect([200, 202]).toContain((await put(url, pngOfSize(2 * MB))).status);
        const heapAfter = await liveHeapMiB(server.child.pid ?? 0, snapshots());
        report("upload link heap", { before_mib: heapBefore, after_mib: heapAfter });
        expect(heapAfter - heapBefore).toBeLessThan(8);
      },
    );
  });

  it("an expired link opens nothing and takes nothing", async () => {
    // A sandbox of its own: this case waits out the link's 5 s beside the others, which count what reached
    // theirs.
    const own = await startSandbox();
    const short = await startHttpAgainst(own, path.join(root.dir, "short"), 100, {
      GENERATION_UPLOAD_LINK_TTL_S: "5",
    });
    try {
      const answer = await rpc(short.url, own.keys.paid, "tools/call", {
        name: "upload_image",
        arguments: { from_user: true },
      });
      const made = resultOf(answer)?.["structuredContent"] as Record<string, string>;
      await new Promise((resolve) => setTimeout(resolve, 5500));
      const before = own.requests.length;
      expect((await fetch(String(made["upload_url"]))).status).toBe(404);
      const response = await fetch(String(made["upload_url"]), { method: "PUT", body: PNG_BYTES });
      expect(response.status).toBe(404);
      const waited = resultOf(
        await rpc(short.url, own.keys.paid, "tools/call", {
          name: "upload_image",
          arguments: { upload_id: made["upload_id"], wait: false },
        }),
      ) as { isError: boolean; content: Array<{ text: string }> };
      expect(waited.isError).toBe(true);
      expect(waited.content[0]?.text).toMatch(/^not_found: upload_id/);
      expect(own.requests.length).toBe(before);
    } finally {
      await short.stop();
      await own.close();
    }
  });
});
