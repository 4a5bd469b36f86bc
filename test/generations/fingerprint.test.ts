import { describe, expect, it } from "vitest";
import { canonicalJson, fingerprintRequest, normalizePrompt } from "../../src/generations/fingerprint.js";

const body = {
  prompt: "a cat on a skateboard",
  model: "vendor-video-1-5-pro",
  duration: 5,
  aspect_ratio: "16:9",
};

describe("fingerprintRequest", () => {
  it("is a sha256 hex digest", () => {
    expect(fingerprintRequest("video", body, [])).toMatch(/^[0-9a-f]{64}$/);
  });

  it("ignores key order at every depth and undefined members", () => {
    const reordered = {
      aspect_ratio: "16:9",
      duration: 5,
      model: "vendor-video-1-5-pro",
      prompt: body.prompt,
    };
    expect(fingerprintRequest("video", reordered, [])).toBe(fingerprintRequest("video", body, []));
    expect(fingerprintRequest("video", { ...body, resolution: undefined }, [])).toBe(
      fingerprintRequest("video", body, []),
    );
    expect(canonicalJson({ b: { y: 1, x: [2, { d: 1, c: 2 }] }, a: undefined })).toBe(
      '{"b":{"x":[2,{"c":2,"d":1}],"y":1}}',
    );
  });

  it("trims and collapses whitespace in the prompt only", () => {
    const spaced = { ...body, prompt: "  a cat \n on   a\tskateboard " };
    expect(fingerprintRequest("video", spaced, [])).toBe(fingerprintRequest("video", body, []));
    expect(normalizePrompt(" a \n b ")).toBe("a b");
    expect(fingerprintRequest("video", { ...body, prompt: "A cat on a skateboard" }, [])).not.toBe(
      fingerprintRequest("video", body, []),
    );
  });

  it("changes with any parameter, the kind, and the image digests and their order", () => {
    const base = fingerprintRequest("video", body, ["d1", "d2"]);
    expect(fingerprintRequest("video", { ...body, duration: 10 }, ["d1", "d2"])).not.toBe(base);
    expect(fingerprintRequest("image", body, ["d1", "d2"])).not.toBe(base);
    expect(fingerprintRequest("video", body, ["d1", "d3"])).not.toBe(base);
    expect(fingerprintRequest("video", body, ["d2", "d1"])).not.toBe(base);
    expect(fingerprintRequest("video", body, ["d1"])).not.toBe(base);
    expect(fingerprintRequest("video", body, ["d1", "d2"])).toBe(base);
  });

  it("keeps array order in the body (reference images)", () => {
    const image = { prompt: "x", images: ["https://a/1.png", "https://a/2.png"] };
    const swapped = { prompt: "x", images: ["https://a/2.png", "https://a/1.png"] };
    expect(fingerprintRequest("image", image, [])).not.toBe(fingerprintRequest("image", swapped, []));
  });
});
