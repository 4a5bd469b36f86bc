/**
 * Upload links across replicas: two `--http` replicas of the built bin on one real redis-server, against one
 * sandbox, each caller bringing its own key (passthrough: a key lives only in the memory of the replica a
 * call of its caller runs on). A link made on A is served by B; the picture sent through B (which holds no
 * key for that caller) is parked in Redis and uploaded by A, where the caller's call waits on it, and B's
 * page shows the hosted URL. Nothing in Redis holds the link's token or the caller's key.
 */
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { pngOfSize } from "../files/fixtures.js";
import { tempRoot } from "../helpers/http-calls.js";
import { startHttpAgainst, type HttpServerProcess } from "../helpers/http.js";
import { redisDump, resultOf, rpc } from "../helpers/red-team.js";
import { startRedis, type RedisProcess } from "../helpers/redis.js";

let redis: RedisProcess;
let sandbox: SandboxHandle;
let root: Awaited<ReturnType<typeof tempRoot>>;
let a: HttpServerProcess;
let b: HttpServerProcess;

beforeAll(async () => {
  [redis, sandbox, root] = await Promise.all([startRedis(), startSandbox(), tempRoot("upload-replicas-")]);
  const env = { GENERATION_REDIS_URL: redis.url };
  [a, b] = await Promise.all([
    startHttpAgainst(sandbox, path.join(root.dir, "a"), 100, env),
    startHttpAgainst(sandbox, path.join(root.dir, "b"), 100, env),
  ]);
});
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await sandbox?.close();
  await redis?.stop();
  await root?.remove();
});

async function uploadImage(replica: HttpServerProcess, key: string, args: Record<string, unknown>) {
  const result = resultOf(
    await rpc(replica.url, key, "tools/call", { name: "upload_image", arguments: args }),
  );
  const content = result?.["content"] as Array<{ text: string }>;
  return {
    isError: result?.["isError"] === true,
    text: content.map((item) => item.text).join("\n"),
    structured: (result?.["structuredContent"] ?? {}) as Record<string, string>,
  };
}

const uploads = () => sandbox.requests.filter((request) => request.route === "upload");

describe("upload links on two replicas", () => {
  it("made on A, sent through B, answered on A; B's page shows the URL; Redis holds no token or key", async () => {
    const key = sandbox.keys.paid;
    const made = await uploadImage(a, key, { from_user: true });
    const link = made.structured["upload_url"] ?? "";
    const id = made.structured["upload_id"] ?? "";
    expect(link.startsWith(`http://127.0.0.1:${a.port}/upload/`)).toBe(true);
    const onB = link.replace(`:${a.port}/`, `:${b.port}/`);
    expect((await fetch(onB)).status).toBe(200);
    // Another caller, on the other replica, finds nothing under that id.
    const stranger = await uploadImage(b, sandbox.keys.free, { upload_id: id, wait: false });
    expect(stranger.text).toMatch(/^not_found:/);

    const before = uploads().length;
    const waiting = uploadImage(a, key, { upload_id: id, wait: true, timeout_seconds: 30 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const sent = await fetch(onB, { method: "PUT", body: pngOfSize(4096) });
    const page = (await sent.json()) as { url?: string };
    const answered = await waiting;
    expect(answered.isError, answered.text).toBe(false);
    expect(answered.structured).toEqual({ url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\//) });
    expect(sent.status).toBe(200);
    expect(page.url).toBe(answered.structured["url"]);
    expect(uploads().length).toBe(before + 1);
    expect(uploads().at(-1)?.key).toBe(key);
    // Used on every replica.
    expect((await fetch(link)).status).toBe(410);

    const token = link.split("/").at(-1) ?? "";
    const dump = [...(await redisDump(redis.url))].join("\n");
    expect(dump).toContain(id);
    expect(dump).not.toContain(token);
    expect(dump).not.toContain(key);
  });

  it("sent through B while no call waits: kept until the caller asks again, on either replica", async () => {
    const key = sandbox.keys.paid;
    const made = await uploadImage(a, key, { from_user: true });
    const onB = (made.structured["upload_url"] ?? "").replace(`:${a.port}/`, `:${b.port}/`);
    const before = uploads().length;
    const sent = await fetch(onB, { method: "PUT", body: pngOfSize(2048) });
    expect(sent.status).toBe(202);
    expect(((await sent.json()) as { message: string }).message).toMatch(/^Received/);
    expect(uploads().length).toBe(before);
    const answered = await uploadImage(b, key, { upload_id: made.structured["upload_id"], wait: true });
    expect(answered.structured["url"]).toEqual(expect.stringMatching(/^http:\/\//));
    expect(uploads().length).toBe(before + 1);
    const again = await uploadImage(a, key, { upload_id: made.structured["upload_id"], wait: false });
    expect(again.structured).toEqual(answered.structured);
  });
});
