import { describe, expect, it } from "vitest";
import { expectError, expectOk, useSandbox } from "./support.js";

/** Every endpoint with a request that would succeed for the paid key. */
const ENDPOINTS: { name: string; method: string; path: string; json?: unknown }[] = [
  { name: "generate", method: "POST", path: "/generate", json: { prompt: "a cat" } },
  { name: "generate-image", method: "POST", path: "/generate-image", json: { prompt: "a cat" } },
  { name: "videos", method: "GET", path: "/videos" },
  { name: "video-status", method: "GET", path: "/videos/vid_1" },
  { name: "upload", method: "POST", path: "/upload" },
  { name: "credits", method: "GET", path: "/credits" },
];

describe("routing", () => {
  it("answers an unknown route with a 404 envelope, rate headers and a request id", async () => {
    const { api } = await useSandbox();
    for (const path of ["/nope", "/videos/", "/credits/", "/Credits", ""]) {
      const answer = await api(path);
      expectError(answer, 404, "not_found");
      expect(answer.headers.get("content-type")).toMatch(/^application\/json/);
      expect(answer.headers.get("x-ratelimit-limit")).toBe("10000");
      expect(answer.headers.get("x-request-id")).toMatch(/^req_/);
    }
  });

  it("answers a wrong method with a 405 envelope and an Allow header", async () => {
    const { api } = await useSandbox();
    const cases: [string, string, string][] = [
      ["GET", "/generate", "POST"],
      ["PUT", "/generate-image", "POST"],
      ["POST", "/videos", "GET"],
      ["DELETE", "/videos/vid_1", "GET"],
      ["GET", "/upload", "POST"],
      ["POST", "/credits", "GET"],
    ];
    for (const [method, path, allow] of cases) {
      const answer = await api(path, { method });
      expectError(answer, 405, "method_not_allowed");
      expect(answer.headers.get("allow")).toBe(allow);
    }
  });

  it("routes before it authenticates: an unknown route without a key is still a 404", async () => {
    const { api } = await useSandbox();
    expectError(await api("/nope", { key: null }), 404, "not_found");
  });
});

describe("authentication on every endpoint", () => {
  for (const endpoint of ENDPOINTS) {
    describe(endpoint.name, () => {
      const send = (
        api: Awaited<ReturnType<typeof useSandbox>>["api"],
        key: string | null,
        headers?: Record<string, string>,
      ) =>
        api(endpoint.path, {
          method: endpoint.method,
          key,
          ...(endpoint.json === undefined ? {} : { json: endpoint.json }),
          ...(headers ? { headers } : {}),
        });

      it("refuses a missing key with 401 unauthorized", async () => {
        const { api, sandbox } = await useSandbox();
        const error = expectError(await send(api, null), 401, "unauthorized");
        expect(error.message).toMatch(/missing/i);
        expect(sandbox.accounts[0]?.credits).toBe(10_000);
      });

      it("refuses an unknown key with 401 unauthorized", async () => {
        const { api } = await useSandbox();
        expect(expectError(await send(api, "sk-wrong"), 401, "unauthorized").message).toMatch(/invalid/i);
      });

      it("refuses malformed Authorization headers with 401 unauthorized", async () => {
        const { api, sandbox } = await useSandbox();
        for (const header of [
          `Basic ${sandbox.keys.paid}`,
          "Bearer",
          "Bearer ",
          sandbox.keys.paid,
          `Bearer ${sandbox.keys.paid} extra`,
        ]) {
          const answer = await send(api, null, { Authorization: header });
          expectError(answer, 401, "unauthorized");
        }
      });
    });
  }

  it("accepts the scheme in any case, as RFC 7235 says", async () => {
    const { api, sandbox } = await useSandbox();
    expectOk(await api("/credits", { key: null, headers: { Authorization: `bearer ${sandbox.keys.paid}` } }));
  });

  it("charges nothing and creates nothing for an unauthenticated generate", async () => {
    const { api, sandbox } = await useSandbox();
    expectError(await api("/generate", { key: "sk-nobody", json: { prompt: "x" } }), 401, "unauthorized");
    const list = await api("/videos");
    expect(list.data.total).toBe(0);
    expect(sandbox.accounts.map((a) => a.credits)).toEqual([10_000, 100, 3]);
  });
});

describe("request log", () => {
  it("records every request, including 404, 401 and media, with the presented key", async () => {
    const { api, sandbox } = await useSandbox();
    await api("/nope");
    await api("/credits", { key: "sk-wrong" });
    await api("/credits");
    await fetch(`${sandbox.origin}/media/videos/none.mp4`);
    expect(sandbox.requests.map((r) => [r.method, r.path, r.route, r.key, r.status])).toEqual([
      ["GET", "/api/v1/nope", "unknown", sandbox.keys.paid, 404],
      ["GET", "/api/v1/credits", "credits", "sk-wrong", 401],
      ["GET", "/api/v1/credits", "credits", sandbox.keys.paid, 200],
      ["GET", "/media/videos/none.mp4", "media", undefined, 404],
    ]);
    expect(sandbox.requests[0]?.requestId).toMatch(/^req_/);
    sandbox.clearRequests();
    expect(sandbox.requests).toHaveLength(0);
  });

  it("records the query", async () => {
    const { api, sandbox } = await useSandbox();
    await api("/videos?page=2&limit=5");
    expect(sandbox.requests[0]?.query).toEqual({ page: "2", limit: "5" });
  });
});
