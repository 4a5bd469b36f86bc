import { describe, expect, it } from "vitest";
import { expectError, useSandbox } from "./support.js";

/** Spec section 7, one row at a time, each reached the way a real client would reach it (no fault knobs). */
describe("spec section 7: error statuses and codes", () => {
  it("401 unauthorized: API key missing or invalid", async () => {
    const { api } = await useSandbox();
    expectError(await api("/credits", { key: null }), 401, "unauthorized");
    expectError(await api("/credits", { key: "sk-invalid" }), 401, "unauthorized");
  });

  it("403 insufficient_credits: the account lacks enough credits", async () => {
    const { api, sandbox } = await useSandbox();
    expectError(
      await api("/generate", { key: sandbox.keys.poor, json: { prompt: "p" } }),
      403,
      "insufficient_credits",
    );
  });

  it("403 paid_access_required: the chosen model or endpoint needs paid access", async () => {
    const { api, sandbox } = await useSandbox();
    expectError(
      await api("/generate", { key: sandbox.keys.free, json: { prompt: "p", model: "vendor-video-2-0" } }),
      403,
      "paid_access_required",
    );
    expectError(
      await api("/generate-image", { key: sandbox.keys.free, json: { prompt: "p" } }),
      403,
      "paid_access_required",
    );
  });

  it("400 validation_error: a parameter is missing or invalid", async () => {
    const { api } = await useSandbox();
    expectError(await api("/generate", { json: {} }), 400, "validation_error");
    expectError(await api("/videos?limit=0"), 400, "validation_error");
  });

  it("429 rate_limit_exceeded: too many requests in the window", async () => {
    const { api } = await useSandbox({ rateLimit: { limit: 1, windowMs: 60_000 } });
    await api("/credits");
    expectError(await api("/credits"), 429, "rate_limit_exceeded");
  });

  it("500 internal_error: failure inside the service", async () => {
    const { api } = await useSandbox({
      idGenerator: (kind) => {
        if (kind === "image") throw new Error("storage is gone");
        return `${kind}_1`;
      },
    });
    expectError(await api("/generate-image", { json: { prompt: "p" } }), 500, "internal_error");
  });

  it("502 upstream_error: failure of the upstream generation provider", async () => {
    const { api, sandbox } = await useSandbox();
    const started = await api("/generate", { json: { prompt: "p" } });
    sandbox.faults.providerOutage(true);
    expectError(await api(`/videos/${started.data.video_id}`), 502, "upstream_error");
  });

  it("404 not_found: a video_id that does not exist (our choice; the spec does not show it)", async () => {
    const { api } = await useSandbox();
    expectError(await api("/videos/vid_missing"), 404, "not_found");
  });
});

describe("envelope and headers on every answer", () => {
  const requests: [string, { method?: string; json?: unknown; key?: string | null }][] = [
    ["/generate", { json: { prompt: "p" } }],
    ["/generate", { json: {} }],
    ["/generate-image", { json: { prompt: "p" } }],
    ["/videos", {}],
    ["/videos/vid_1", {}],
    ["/videos/unknown", {}],
    ["/upload", { method: "POST" }],
    ["/credits", {}],
    ["/credits", { key: null }],
    ["/credits", { method: "PATCH" }],
    ["/missing", {}],
  ];

  it("answers { data, error } with exactly one of them null, plus X-RateLimit-* and X-Request-Id", async () => {
    const { api } = await useSandbox();
    for (const [path, init] of requests) {
      const answer = await api(path, init);
      expect(Object.keys(answer.body ?? {}).sort()).toEqual(["data", "error"]);
      expect((answer.data === null) !== (answer.error === null)).toBe(true);
      if (answer.error) expect(Object.keys(answer.error).sort()).toEqual(["code", "message"]);
      for (const header of [
        "x-ratelimit-limit",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
        "x-request-id",
      ]) {
        expect(answer.headers.get(header), `${header} on ${path}`).not.toBeNull();
      }
      expect(answer.headers.get("x-ratelimit-reset")).toMatch(/^\d{10}$/);
    }
  });
});
