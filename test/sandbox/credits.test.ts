import { describe, expect, it } from "vitest";
import { IMAGE_CREDITS_PER_IMAGE, VIDEO_1080P_CREDITS_PER_SECOND } from "../../src/models.js";
import { expectError, expectOk, useSandbox } from "./support.js";

describe("credit arithmetic per model (spec 8)", () => {
  const cases: [model: string, duration: number, resolution: string | undefined, expected: number][] = [
    ["vendor-video-1-5-pro", 5, undefined, 25],
    ["vendor-video-1-5-pro", 1, undefined, 5],
    ["vendor-video-1-5-pro", 20, undefined, 100],
    ["vendor-video-2-0", 5, undefined, 37.5],
    ["vendor-video-2-0", 3, "480p", 22.5],
    ["vendor-video-2-0", 3, "720p", 22.5],
    ["vendor-video-2-0", 3, "1080p", 3 * VIDEO_1080P_CREDITS_PER_SECOND],
    ["vendor-video-2-0", 10, "1080p", 100],
    ["vendor-video-2-0-fast", 5, undefined, 25],
    ["vendor-video-2-0-fast", 7, undefined, 35],
    ["vendor-video-2-0", 1.5, undefined, 11.25],
  ];
  for (const [model, duration, resolution, expected] of cases) {
    it(`${model} ${duration} s${resolution ? ` ${resolution}` : ""} costs ${expected}`, async () => {
      const { api, sandbox } = await useSandbox();
      const answer = await api("/generate", {
        json: { prompt: "p", model, duration, ...(resolution ? { resolution } : {}) },
      });
      expectOk(answer);
      expect(answer.data.credits_used).toBe(expected);
      expect(answer.data.credits_remaining).toBe(10_000 - expected);
      expect(sandbox.accounts[0]?.credits).toBe(10_000 - expected);
      expect((await api("/credits")).data.credits).toBe(10_000 - expected);
    });
  }

  it(`an image costs ${IMAGE_CREDITS_PER_IMAGE}, whatever its resolution`, async () => {
    const { api } = await useSandbox();
    for (const resolution of ["1k", "2k", "4k"]) {
      const answer = await api("/generate-image", { json: { prompt: "p", resolution } });
      expect(answer.data.credits_used).toBe(IMAGE_CREDITS_PER_IMAGE);
    }
    expect((await api("/credits")).data.credits).toBe(10_000 - 3 * IMAGE_CREDITS_PER_IMAGE);
  });

  it("adds fractional charges without drift", async () => {
    const { api } = await useSandbox();
    for (let i = 0; i < 10; i++)
      await api("/generate", { json: { prompt: "p", model: "vendor-video-2-0", duration: 0.1 } });
    expect((await api("/credits")).data.credits).toBe(10_000 - 7.5);
  });
});

describe("insufficient credits", () => {
  it("sells a video that costs exactly the balance, and refuses one that costs a cent more", async () => {
    const { api, sandbox } = await useSandbox();
    const paid = sandbox.accounts[0]!;
    paid.credits = 25;
    const exact = await api("/generate", { json: { prompt: "p", duration: 5 } });
    expectOk(exact);
    expect(exact.data.credits_remaining).toBe(0);

    paid.credits = 24.99;
    const short = await api("/generate", { json: { prompt: "p", duration: 5 } });
    expect(expectError(short, 403, "insufficient_credits").message).toMatch(/25/);
    expect(paid.credits).toBe(24.99);
    expect((await api("/videos")).data.total).toBe(1);
  });

  it("refuses an image to the poor account (3 credits) and charges nothing", async () => {
    const { api, sandbox } = await useSandbox();
    expectError(
      await api("/generate-image", { key: sandbox.keys.poor, json: { prompt: "p" } }),
      403,
      "insufficient_credits",
    );
    expectError(
      await api("/generate", { key: sandbox.keys.poor, json: { prompt: "p", duration: 1 } }),
      403,
      "insufficient_credits",
    );
    expect((await api("/credits", { key: sandbox.keys.poor })).data.credits).toBe(3);
    expect((await api("/videos", { key: sandbox.keys.poor })).data.total).toBe(0);
  });

  it("sells an image at exactly 5 credits", async () => {
    const { api, sandbox } = await useSandbox();
    sandbox.accounts[2]!.credits = IMAGE_CREDITS_PER_IMAGE;
    const answer = await api("/generate-image", { key: sandbox.keys.poor, json: { prompt: "p" } });
    expectOk(answer);
    expect(answer.data.credits_remaining).toBe(0);
    expectError(
      await api("/generate-image", { key: sandbox.keys.poor, json: { prompt: "p" } }),
      403,
      "insufficient_credits",
    );
  });

  it("checks paid access before credits", async () => {
    const { api, sandbox } = await useSandbox();
    sandbox.accounts[1]!.credits = 0;
    expectError(
      await api("/generate", { key: sandbox.keys.free, json: { prompt: "p", model: "vendor-video-2-0" } }),
      403,
      "paid_access_required",
    );
    expectError(
      await api("/generate", { key: sandbox.keys.free, json: { prompt: "p" } }),
      403,
      "insufficient_credits",
    );
  });
});

describe("paid access", () => {
  for (const model of ["vendor-video-2-0", "vendor-video-2-0-fast"]) {
    it(`refuses ${model} to the free account with 403 paid_access_required`, async () => {
      const { api, sandbox } = await useSandbox();
      expectError(
        await api("/generate", { key: sandbox.keys.free, json: { prompt: "p", model } }),
        403,
        "paid_access_required",
      );
      expect(sandbox.accounts[1]?.credits).toBe(100);
    });
  }

  it("refuses the image endpoint to the free account", async () => {
    const { api, sandbox } = await useSandbox();
    expectError(
      await api("/generate-image", { key: sandbox.keys.free, json: { prompt: "p" } }),
      403,
      "paid_access_required",
    );
  });

  it("sells the lite model to the free account", async () => {
    const { api, sandbox } = await useSandbox();
    const answer = await api("/generate", { key: sandbox.keys.free, json: { prompt: "p" } });
    expectOk(answer);
    expect(answer.data.credits_remaining).toBe(75);
  });
});

describe("GET /credits", () => {
  it("reports balance, paid access and subscription for each default account", async () => {
    const { api, sandbox } = await useSandbox();
    expect((await api("/credits")).data).toEqual({
      credits: 10_000,
      paid_access: true,
      subscription_status: "active",
      plan: "pro",
    });
    expect((await api("/credits", { key: sandbox.keys.free })).data).toEqual({
      credits: 100,
      paid_access: false,
      subscription_status: "none",
      plan: null,
    });
    expect((await api("/credits", { key: sandbox.keys.poor })).data).toMatchObject({
      credits: 3,
      paid_access: true,
    });
  });

  it("uses the accounts given as options", async () => {
    const { api, sandbox } = await useSandbox({
      accounts: [{ key: "k-team", name: "team", credits: 42.5, paidAccess: true, subscription: "team" }],
    });
    expect(sandbox.keys.paid).toBe("k-team");
    expect((await api("/credits", { key: "k-team" })).data).toEqual({
      credits: 42.5,
      paid_access: true,
      subscription_status: "active",
      plan: "team",
    });
    expectError(await api("/credits", { key: "sk-sandbox-paid" }), 401, "unauthorized");
  });
});

describe("refund on failure", () => {
  it("charges at start and refunds a failed task in full", async () => {
    const { api, sandbox, advance } = await useSandbox();
    sandbox.faults.failNextTask("provider melted");
    const started = await api("/generate", { json: { prompt: "p", model: "vendor-video-2-0", duration: 4 } });
    expect(started.data.credits_used).toBe(30);
    expect((await api("/credits")).data.credits).toBe(9_970);
    advance(5_000);
    const status = await api(`/videos/${started.data.video_id}`);
    expect(status.data).toMatchObject({ status: "failed", credits_refunded: 30 });
    expect((await api("/credits")).data.credits).toBe(10_000);
    // Reading again does not refund twice.
    await api(`/videos/${started.data.video_id}`);
    expect(sandbox.accounts[0]?.credits).toBe(10_000);
  });

  it("does not refund a completed task", async () => {
    const { api, advance } = await useSandbox();
    const started = await api("/generate", { json: { prompt: "p" } });
    advance(5_000);
    expect((await api(`/videos/${started.data.video_id}`)).data.status).toBe("completed");
    expect((await api("/credits")).data.credits).toBe(9_975);
  });
});
