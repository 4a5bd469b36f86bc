import { describe, expect, it } from "vitest";
import { expectError, expectOk, useSandbox } from "./support.js";

async function startMany(
  api: Awaited<ReturnType<typeof useSandbox>>["api"],
  advance: (ms: number) => void,
  count: number,
): Promise<void> {
  for (let i = 1; i <= count; i++) {
    expectOk(await api("/generate", { json: { prompt: `video ${i}`, duration: 1 } }));
    advance(10);
  }
}

describe("GET /videos", () => {
  it("lists newest first with totals, 20 per page by default", async () => {
    const { api, advance } = await useSandbox();
    await startMany(api, advance, 23);
    const first = await api("/videos");
    expect(first.data).toMatchObject({ page: 1, limit: 20, total: 23, total_pages: 2 });
    expect(first.data.items).toHaveLength(20);
    expect(first.data.items[0]).toMatchObject({ video_id: "vid_23", prompt: "video 23" });
    expect(first.data.items[19].video_id).toBe("vid_4");
    const second = await api("/videos?page=2");
    expect(second.data.items.map((item: { video_id: string }) => item.video_id)).toEqual([
      "vid_3",
      "vid_2",
      "vid_1",
    ]);
    const beyond = await api("/videos?page=3");
    expect(beyond.data).toMatchObject({ items: [], page: 3, total: 23, total_pages: 2 });
  });

  it("orders tasks started at the same instant by start order", async () => {
    const { api } = await useSandbox();
    for (let i = 0; i < 3; i++) await api("/generate", { json: { prompt: "same time" } });
    expect((await api("/videos")).data.items.map((item: { video_id: string }) => item.video_id)).toEqual([
      "vid_3",
      "vid_2",
      "vid_1",
    ]);
  });

  it("accepts limit 1 and 50 and refuses 0 and 51", async () => {
    const { api, advance } = await useSandbox();
    await startMany(api, advance, 51);
    const one = await api("/videos?limit=1");
    expect(one.data).toMatchObject({ limit: 1, total: 51, total_pages: 51 });
    expect(one.data.items).toHaveLength(1);
    const fifty = await api("/videos?limit=50");
    expect(fifty.data.items).toHaveLength(50);
    expect(fifty.data.total_pages).toBe(2);
    for (const limit of ["0", "51", "-1", "1.5", "ten", "", "1e1"]) {
      const error = expectError(await api(`/videos?limit=${limit}`), 400, "validation_error");
      expect(error.message.startsWith("limit:")).toBe(true);
    }
  });

  it("accepts page 1 and refuses page 0 and other non-integers", async () => {
    const { api } = await useSandbox();
    expectOk(await api("/videos?page=1"));
    for (const page of ["0", "-3", "x", "2.0", "99999999999999999"]) {
      const error = expectError(await api(`/videos?page=${page}`), 400, "validation_error");
      expect(error.message.startsWith("page:")).toBe(true);
    }
    expect(expectError(await api("/videos?page=1&page=2"), 400, "validation_error").message).toMatch(
      /^page: given more than once/,
    );
  });

  it("lists only the calling key's tasks", async () => {
    const { api, sandbox } = await useSandbox();
    await api("/generate", { json: { prompt: "paid" } });
    await api("/generate", { key: sandbox.keys.free, json: { prompt: "free" } });
    const paid = await api("/videos");
    expect(paid.data.total).toBe(1);
    expect(paid.data.items[0].prompt).toBe("paid");
    const free = await api("/videos", { key: sandbox.keys.free });
    expect(free.data.items.map((item: { prompt: string }) => item.prompt)).toEqual(["free"]);
    expect((await api("/videos", { key: sandbox.keys.poor })).data).toEqual({
      items: [],
      page: 1,
      limit: 20,
      total: 0,
      total_pages: 0,
    });
  });

  it("gives items the same record as the status call", async () => {
    const { api, advance } = await useSandbox();
    await api("/generate", { json: { prompt: "p", model: "vendor-video-2-0", resolution: "1080p" } });
    advance(10_000);
    const item = (await api("/videos")).data.items[0];
    expect(item).toEqual((await api("/videos/vid_1")).data);
    expect(item).toMatchObject({ status: "completed", resolution: "1080p", credits_used: 50 });
  });

  it("answers a bare array with the array shape", async () => {
    const { api, sandbox } = await useSandbox({ shapes: { listShape: "array" } });
    await api("/generate", { json: { prompt: "p" } });
    const answer = await api("/videos?limit=1");
    expect(Array.isArray(answer.data)).toBe(true);
    expect(answer.data[0].video_id).toBe("vid_1");
    sandbox.shapes.listShape = "object";
    expect((await api("/videos")).data.total).toBe(1);
  });

  it("ignores unknown query parameters", async () => {
    const { api } = await useSandbox();
    expectOk(await api("/videos?sort=asc&status=completed"));
  });
});
