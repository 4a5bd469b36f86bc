import { describe, expect, it } from "vitest";
import { T0, expectError, expectOk, useSandbox } from "./support.js";

describe("video task lifecycle", () => {
  it("walks queued -> processing -> completed on the clock, with times and a video_url", async () => {
    const { api, advance, sandbox } = await useSandbox({ timings: { queuedMs: 1000, processingMs: 4000 } });
    const started = await api("/generate", { json: { prompt: "a red fox", duration: 4 } });
    expectOk(started);
    expect(started.data).toEqual({
      video_id: "vid_1",
      status: "queued",
      model: "vendor-video-1-5-pro",
      credits_used: 20,
      credits_remaining: 9_980,
    });

    const queued = await api("/videos/vid_1");
    expect(queued.data).toEqual({
      video_id: "vid_1",
      status: "queued",
      model: "vendor-video-1-5-pro",
      prompt: "a red fox",
      generation_type: "text_to_video",
      aspect_ratio: "16:9",
      duration: 4,
      credits_used: 20,
      created_at: new Date(T0).toISOString(),
      updated_at: new Date(T0).toISOString(),
    });

    advance(999);
    expect((await api("/videos/vid_1")).data.status).toBe("queued");
    advance(1);
    const processing = await api("/videos/vid_1");
    expect(processing.data.status).toBe("processing");
    expect(processing.data.updated_at).toBe(new Date(T0 + 1000).toISOString());
    expect(processing.data).not.toHaveProperty("video_url");

    advance(3999);
    expect((await api("/videos/vid_1")).data.status).toBe("processing");
    advance(1);
    const done = await api("/videos/vid_1");
    expect(done.data).toMatchObject({
      status: "completed",
      video_url: `${sandbox.origin}/media/videos/vid_1.mp4`,
    });
    expect(done.data.updated_at).toBe(new Date(T0 + 5000).toISOString());
    expect(done.data).not.toHaveProperty("error");
  });

  it("walks custom in-progress statuses evenly over the processing time", async () => {
    const { api, advance, sandbox } = await useSandbox({
      timings: { queuedMs: 100, processingMs: 900 },
      shapes: { inProgressStatuses: ["pending", "in_queue", "rendering", "encoding"] },
    });
    const started = await api("/generate", { json: { prompt: "p" } });
    expect(started.data.status).toBe("pending");
    const seen: string[] = [];
    for (let t = 0; t <= 1000; t += 50) {
      seen.push((await api("/videos/vid_1")).data.status);
      advance(50);
    }
    expect([...new Set(seen)]).toEqual(["pending", "in_queue", "rendering", "encoding", "completed"]);
    sandbox.shapes.inProgressStatuses = ["working"];
    await api("/generate", { json: { prompt: "p" } });
    expect((await api("/videos/vid_2")).data.status).toBe("working");
  });

  it("ends a task marked by failNextTask as failed with an error object", async () => {
    const { api, advance, sandbox } = await useSandbox();
    sandbox.faults.failNextTask("content policy");
    await api("/generate", { json: { prompt: "p" } });
    await api("/generate", { json: { prompt: "p" } });
    expect((await api("/videos/vid_1")).data.status).toBe("queued");
    advance(5000);
    const failed = await api("/videos/vid_1");
    expect(failed.data).toMatchObject({
      status: "failed",
      error: { code: "generation_failed", message: "content policy" },
    });
    expect(failed.data).not.toHaveProperty("video_url");
    expect((await api("/videos/vid_2")).data.status).toBe("completed");
  });

  it("fails a running task at once with failTask, and refuses to fail a final or unknown one", async () => {
    const { api, advance, sandbox } = await useSandbox();
    await api("/generate", { json: { prompt: "p" } });
    advance(1500);
    expect(sandbox.faults.failTask("vid_1", "GPU on fire")).toBe(true);
    const failed = await api("/videos/vid_1");
    expect(failed.data).toMatchObject({
      status: "failed",
      error: { message: "GPU on fire" },
      credits_refunded: 25,
    });
    expect(failed.data.updated_at).toBe(new Date(T0 + 1500).toISOString());
    expect(sandbox.faults.failTask("vid_1")).toBe(false);
    expect(sandbox.faults.failTask("vid_404")).toBe(false);
    await api("/generate", { json: { prompt: "p" } });
    advance(5000);
    expect(sandbox.faults.failTask("vid_2")).toBe(false);
    expect((await api("/videos/vid_2")).data.status).toBe("completed");
  });

  it("answers 502 upstream_error for a running task while the provider is down, then recovers", async () => {
    const { api, advance, sandbox } = await useSandbox();
    await api("/generate", { json: { prompt: "done before" } });
    advance(5000);
    expect((await api("/videos/vid_1")).data.status).toBe("completed");
    await api("/generate", { json: { prompt: "running" } });

    sandbox.faults.providerOutage(true);
    expectError(await api("/videos/vid_2"), 502, "upstream_error");
    advance(10_000);
    // Still 502: the service has not learned that the task ended upstream.
    expectError(await api("/videos/vid_2"), 502, "upstream_error");
    // A final record is served from the service's own store.
    expect((await api("/videos/vid_1")).data.status).toBe("completed");
    // The list shows what the service knows: the last in-progress status.
    const list = await api("/videos");
    expect(list.data.items.map((item: { status: string }) => item.status)).toEqual([
      "processing",
      "completed",
    ]);
    // Unknown ids are still the service's own answer.
    expectError(await api("/videos/vid_404"), 404, "not_found");

    sandbox.faults.providerOutage(false);
    expect((await api("/videos/vid_2")).data.status).toBe("completed");
  });

  it("answers an unknown video_id with 404 not_found, or 400 when the shape says so", async () => {
    const { api, sandbox } = await useSandbox();
    expectError(await api("/videos/vid_404"), 404, "not_found");
    sandbox.shapes.notFoundStatus = 400;
    expect(expectError(await api("/videos/vid_404"), 400, "validation_error").message).toMatch(/^video_id:/);
  });

  it("hides another key's task as if it did not exist", async () => {
    const { api, sandbox } = await useSandbox();
    await api("/generate", { json: { prompt: "mine" } });
    expectError(await api("/videos/vid_1", { key: sandbox.keys.free }), 404, "not_found");
    expectError(await api("/videos/vid_1", { key: sandbox.keys.poor }), 404, "not_found");
  });

  it("decodes percent-encoded ids and refuses broken encoding", async () => {
    const { api } = await useSandbox({ idGenerator: () => "id with/slash" });
    const started = await api("/generate", { json: { prompt: "p" } });
    expect(started.data.video_id).toBe("id with/slash");
    expectOk(await api(`/videos/${encodeURIComponent("id with/slash")}`));
    expectError(await api("/videos/%E0%A4%A"), 400, "validation_error");
  });

  it("completes on a real clock with short timings", async () => {
    const { api } = await useSandbox({ clock: Date.now, timings: { queuedMs: 20, processingMs: 40 } });
    const started = await api("/generate", { json: { prompt: "p" } });
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect((await api(`/videos/${started.data.video_id}`)).data.status).toBe("completed");
  });
});
