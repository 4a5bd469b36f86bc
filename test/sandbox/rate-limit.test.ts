import { describe, expect, it } from "vitest";
import { T0, expectError, expectOk, useSandbox } from "./support.js";

const DEFAULT = { limit: 60, windowMs: 60_000 };

describe("rate limiting (spec 8: 60 requests per minute per key)", () => {
  it("serves 60 requests, refuses the 61st with 429 and the headers, and resets with the window", async () => {
    const { api, advance } = await useSandbox({ rateLimit: DEFAULT });
    const resetS = String(Math.ceil((T0 + 60_000) / 1000));
    for (let i = 1; i <= 60; i++) {
      const answer = await api("/credits");
      expectOk(answer);
      expect(answer.headers.get("x-ratelimit-limit")).toBe("60");
      expect(answer.headers.get("x-ratelimit-remaining")).toBe(String(60 - i));
      expect(answer.headers.get("x-ratelimit-reset")).toBe(resetS);
    }
    const refused = await api("/credits");
    expect(expectError(refused, 429, "rate_limit_exceeded").message).toMatch(/60/);
    expect(refused.headers.get("x-ratelimit-limit")).toBe("60");
    expect(refused.headers.get("x-ratelimit-remaining")).toBe("0");
    expect(refused.headers.get("x-ratelimit-reset")).toBe(resetS);
    expect(refused.headers.get("retry-after")).toBe("60");

    advance(59_999);
    expectError(await api("/credits"), 429, "rate_limit_exceeded");
    advance(1);
    const fresh = await api("/credits");
    expectOk(fresh);
    expect(fresh.headers.get("x-ratelimit-remaining")).toBe("59");
    expect(fresh.headers.get("x-ratelimit-reset")).toBe(String(Math.ceil((T0 + 120_000) / 1000)));
  });

  it("counts every endpoint in one window per key, errors included", async () => {
    const { api } = await useSandbox({ rateLimit: { limit: 4, windowMs: 1000 } });
    expectOk(await api("/videos"));
    expectError(await api("/videos/unknown"), 404, "not_found");
    expectError(await api("/generate", { json: {} }), 400, "validation_error");
    expectOk(await api("/credits"));
    expectError(await api("/generate", { json: { prompt: "p" } }), 429, "rate_limit_exceeded");
  });

  it("keeps one window per key", async () => {
    const { api, sandbox } = await useSandbox({ rateLimit: { limit: 2, windowMs: 60_000 } });
    await api("/credits");
    await api("/credits");
    expectError(await api("/credits"), 429, "rate_limit_exceeded");
    const other = await api("/credits", { key: sandbox.keys.free });
    expectOk(other);
    expect(other.headers.get("x-ratelimit-remaining")).toBe("1");
  });

  it("does not charge or create anything for a refused generate", async () => {
    const { api, sandbox } = await useSandbox({ rateLimit: { limit: 1, windowMs: 60_000 } });
    await api("/credits");
    expectError(await api("/generate", { json: { prompt: "p" } }), 429, "rate_limit_exceeded");
    expect(sandbox.accounts[0]?.credits).toBe(10_000);
  });

  it("limits requests without a valid key per address, apart from the keys' windows", async () => {
    const { api } = await useSandbox({ rateLimit: { limit: 2, windowMs: 60_000 } });
    expectError(await api("/credits", { key: "sk-guess-1" }), 401, "unauthorized");
    expectError(await api("/credits", { key: null }), 401, "unauthorized");
    const third = await api("/credits", { key: "sk-guess-2" });
    expectError(third, 429, "rate_limit_exceeded");
    expect(third.headers.get("x-ratelimit-remaining")).toBe("0");
    expectOk(await api("/credits"));
  });

  it("puts the headers on 404 and 405 answers without counting them", async () => {
    const { api } = await useSandbox({ rateLimit: { limit: 5, windowMs: 60_000 } });
    await api("/credits");
    const missing = await api("/nope");
    expect(missing.headers.get("x-ratelimit-remaining")).toBe("4");
    const wrong = await api("/credits", { method: "DELETE" });
    expect(wrong.headers.get("x-ratelimit-remaining")).toBe("4");
    expect((await api("/credits")).headers.get("x-ratelimit-remaining")).toBe("3");
  });

  it("does not rate-limit media", async () => {
    const { api, sandbox, advance } = await useSandbox({ rateLimit: { limit: 1, windowMs: 60_000 } });
    const started = await api("/generate", { json: { prompt: "p" } });
    advance(10_000);
    for (let i = 0; i < 3; i++) {
      const response = await fetch(`${sandbox.origin}/media/videos/${started.data.video_id}.mp4`);
      expect(response.status).toBe(200);
      expect(response.headers.get("x-ratelimit-limit")).toBeNull();
      await response.arrayBuffer();
    }
  });

  it("refuses an invalid configuration", async () => {
    await expect(useSandbox({ rateLimit: { limit: 0, windowMs: 1000 } })).rejects.toThrow(/limit/);
    await expect(useSandbox({ rateLimit: { limit: 1, windowMs: 0 } })).rejects.toThrow(/windowMs/);
  });
});
