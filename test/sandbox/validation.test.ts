import { describe, expect, it } from "vitest";
import { MAX_DURATION_S, MAX_PROMPT_LENGTH, MAX_REFERENCE_IMAGES } from "../../src/models.js";
import { MAX_JSON_BODY_BYTES } from "../../src/sandbox/index.js";
import { expectError, expectOk, useSandbox } from "./support.js";

type Case = [label: string, body: unknown, field: string];

const VIDEO_CASES: Case[] = [
  ["missing prompt", {}, "prompt"],
  ["null prompt", { prompt: null }, "prompt"],
  ["numeric prompt", { prompt: 5 }, "prompt"],
  ["blank prompt", { prompt: "   " }, "prompt"],
  ["over-long prompt", { prompt: "x".repeat(MAX_PROMPT_LENGTH + 1) }, "prompt"],
  ["unknown model", { prompt: "p", model: "vendor-video-9" }, "model"],
  ["image model on the video endpoint", { prompt: "p", model: "image-2" }, "model"],
  ["null model", { prompt: "p", model: null }, "model"],
  ["unknown generation_type", { prompt: "p", generation_type: "video_to_video" }, "generation_type"],
  ["image_to_video without image_url", { prompt: "p", generation_type: "image_to_video" }, "image_url"],
  [
    "image_url not a URL",
    { prompt: "p", generation_type: "image_to_video", image_url: "cat.png" },
    "image_url",
  ],
  [
    "image_url with a file scheme",
    { prompt: "p", generation_type: "image_to_video", image_url: "file:///etc/passwd" },
    "image_url",
  ],
  ["aspect_ratio without colon", { prompt: "p", aspect_ratio: "16x9" }, "aspect_ratio"],
  ["aspect_ratio with zero", { prompt: "p", aspect_ratio: "0:9" }, "aspect_ratio"],
  ["aspect_ratio with decimals", { prompt: "p", aspect_ratio: "1.5:1" }, "aspect_ratio"],
  ["aspect_ratio over 64", { prompt: "p", aspect_ratio: "65:1" }, "aspect_ratio"],
  ["aspect_ratio as a number", { prompt: "p", aspect_ratio: 1.77 }, "aspect_ratio"],
  ["zero duration", { prompt: "p", duration: 0 }, "duration"],
  ["negative duration", { prompt: "p", duration: -5 }, "duration"],
  ["duration over the maximum", { prompt: "p", duration: MAX_DURATION_S + 0.001 }, "duration"],
  ["duration as a string", { prompt: "p", duration: "5" }, "duration"],
  ["unknown resolution", { prompt: "p", model: "vendor-video-2-0", resolution: "4k" }, "resolution"],
  ["resolution for the lite model", { prompt: "p", resolution: "720p" }, "resolution"],
  [
    "resolution for the fast model",
    { prompt: "p", model: "vendor-video-2-0-fast", resolution: "1080p" },
    "resolution",
  ],
];

const IMAGE_CASES: Case[] = [
  ["missing prompt", { model: "image-2" }, "prompt"],
  ["empty prompt", { prompt: "" }, "prompt"],
  ["unknown model", { prompt: "p", model: "image-3" }, "model"],
  ["video model on the image endpoint", { prompt: "p", model: "vendor-video-2-0" }, "model"],
  ["unknown resolution", { prompt: "p", resolution: "8k" }, "resolution"],
  ["video resolution", { prompt: "p", resolution: "720p" }, "resolution"],
  ["bad aspect_ratio", { prompt: "p", aspect_ratio: "square" }, "aspect_ratio"],
  ["unknown output_format", { prompt: "p", output_format: "gif" }, "output_format"],
  ["jpeg spelled out", { prompt: "p", output_format: "jpeg" }, "output_format"],
  ["images not an array", { prompt: "p", images: "https://x.test/a.png" }, "images"],
  ["images with a non-URL", { prompt: "p", images: ["https://x.test/a.png", "b.png"] }, "images[1]"],
  ["images with a number", { prompt: "p", images: [1] }, "images[0]"],
  [
    "too many images",
    {
      prompt: "p",
      images: Array.from({ length: MAX_REFERENCE_IMAGES + 1 }, (_, i) => `https://x.test/${i}.png`),
    },
    "images",
  ],
];

describe("POST /generate validation", () => {
  for (const [label, body, field] of VIDEO_CASES) {
    it(`refuses ${label} with 400 validation_error naming ${field}`, async () => {
      const { api, sandbox } = await useSandbox();
      const error = expectError(await api("/generate", { json: body }), 400, "validation_error");
      expect(error.message.startsWith(`${field}:`)).toBe(true);
      expect(sandbox.accounts[0]?.credits).toBe(10_000);
    });
  }

  it("accepts the limits themselves", async () => {
    const { api } = await useSandbox();
    expectOk(await api("/generate", { json: { prompt: "x".repeat(MAX_PROMPT_LENGTH) } }));
    expectOk(await api("/generate", { json: { prompt: "p", duration: MAX_DURATION_S } }));
    expectOk(await api("/generate", { json: { prompt: "p", duration: 0.5 } }));
    expectOk(await api("/generate", { json: { prompt: "p", aspect_ratio: "64:1" } }));
    expectOk(await api("/generate", { json: { prompt: "p", aspect_ratio: "9:16" } }));
  });

  it("applies the defaults: lite model, text_to_video, 16:9, 5 s", async () => {
    const { api } = await useSandbox();
    const started = await api("/generate", { json: { prompt: "p" } });
    expect(started.data.model).toBe("vendor-video-1-5-pro");
    const record = await api(`/videos/${started.data.video_id}`);
    expect(record.data).toMatchObject({
      generation_type: "text_to_video",
      aspect_ratio: "16:9",
      duration: 5,
    });
    expect(record.data).not.toHaveProperty("resolution");
  });

  it("accepts the spec's unprefixed default model name", async () => {
    const { api } = await useSandbox();
    const started = await api("/generate", { json: { prompt: "p", model: "video-1-5-pro" } });
    expectOk(started);
    expect(started.data.model).toBe("vendor-video-1-5-pro");
  });

  it("defaults the standard model to 720p and accepts each of its resolutions", async () => {
    const { api } = await useSandbox();
    const started = await api("/generate", { json: { prompt: "p", model: "vendor-video-2-0" } });
    expect((await api(`/videos/${started.data.video_id}`)).data.resolution).toBe("720p");
    for (const resolution of ["480p", "720p", "1080p"]) {
      expectOk(await api("/generate", { json: { prompt: "p", model: "vendor-video-2-0", resolution } }));
    }
  });

  it("accepts image_to_video with an https image_url, and ignores an image_url on text_to_video", async () => {
    const { api } = await useSandbox();
    expectOk(
      await api("/generate", {
        json: { prompt: "p", generation_type: "image_to_video", image_url: "https://cdn.test/a.png" },
      }),
    );
    expectOk(await api("/generate", { json: { prompt: "p", image_url: "http://cdn.test/a.png" } }));
  });

  it("ignores unknown fields", async () => {
    const { api } = await useSandbox();
    expectOk(await api("/generate", { json: { prompt: "p", seed: 42, webhook: "https://x.test" } }));
  });
});

describe("POST /generate-image validation", () => {
  for (const [label, body, field] of IMAGE_CASES) {
    it(`refuses ${label} with 400 validation_error naming ${field}`, async () => {
      const { api } = await useSandbox();
      const error = expectError(await api("/generate-image", { json: body }), 400, "validation_error");
      expect(error.message.startsWith(`${field}:`)).toBe(true);
    });
  }

  it(`accepts ${MAX_REFERENCE_IMAGES} reference images`, async () => {
    const { api } = await useSandbox();
    const images = Array.from({ length: MAX_REFERENCE_IMAGES }, (_, i) => `https://x.test/${i}.png`);
    expectOk(await api("/generate-image", { json: { prompt: "p", images } }));
  });

  it("validates before it checks paid access", async () => {
    const { api, sandbox } = await useSandbox();
    expectError(await api("/generate-image", { key: sandbox.keys.free, json: {} }), 400, "validation_error");
  });
});

describe("bodies", () => {
  for (const route of ["/generate", "/generate-image"]) {
    it(`${route}: refuses malformed JSON`, async () => {
      const { api } = await useSandbox();
      const answer = await api(route, {
        body: '{"prompt": "p",',
        headers: { "Content-Type": "application/json" },
      });
      expect(expectError(answer, 400, "validation_error").message).toMatch(/^body: malformed JSON/);
    });

    it(`${route}: refuses a body that is not a JSON object`, async () => {
      const { api } = await useSandbox();
      for (const json of [[{ prompt: "p" }], "p", 5, null]) {
        const answer = await api(route, {
          body: JSON.stringify(json),
          headers: { "Content-Type": "application/json" },
        });
        expect(expectError(answer, 400, "validation_error").message).toMatch(/^body:/);
      }
    });

    it(`${route}: refuses an empty body`, async () => {
      const { api } = await useSandbox();
      const answer = await api(route, { method: "POST", headers: { "Content-Type": "application/json" } });
      expect(expectError(answer, 400, "validation_error").message).toMatch(/^body:/);
    });

    it(`${route}: refuses a body that is not declared as JSON`, async () => {
      const { api } = await useSandbox();
      for (const type of ["text/plain", "application/x-www-form-urlencoded"]) {
        const answer = await api(route, {
          body: JSON.stringify({ prompt: "p" }),
          headers: { "Content-Type": type },
        });
        expect(expectError(answer, 400, "validation_error").message).toMatch(/^Content-Type:/);
      }
      expectOk(
        await api(route, {
          body: JSON.stringify({ prompt: "p" }),
          headers: { "Content-Type": "application/json; charset=utf-8" },
        }),
      );
    });

    it(`${route}: refuses a body over ${MAX_JSON_BODY_BYTES} bytes and accepts one at the cap`, async () => {
      const { api } = await useSandbox();
      const padded = (size: number): string => {
        const base = JSON.stringify({ prompt: "p", pad: "" });
        return JSON.stringify({ prompt: "p", pad: "x".repeat(size - base.length) });
      };
      expect(padded(MAX_JSON_BODY_BYTES)).toHaveLength(MAX_JSON_BODY_BYTES);
      expectOk(
        await api(route, {
          body: padded(MAX_JSON_BODY_BYTES),
          headers: { "Content-Type": "application/json" },
        }),
      );
      const over = await api(route, {
        body: padded(MAX_JSON_BODY_BYTES + 1),
        headers: { "Content-Type": "application/json" },
      });
      expect(expectError(over, 400, "validation_error").message).toMatch(/^body: must be at most/);
    });
  }
});
