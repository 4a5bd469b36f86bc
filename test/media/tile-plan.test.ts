/**
 * tilePlan: which frame each tile shows and which passes decode them, for the clips the sheet meets: one GOP
 * (x264's default keyframe interval), a keyframe every few seconds (as encoded for the web), every frame a
 * keyframe, keyframes unknown, and keyframes that ffprobe rounds to a hair before a sixth's boundary.
 */
import { describe, expect, it } from "vitest";
import { tilePlan } from "../../src/media/tile-plan.js";

const sixths = (duration: number) => Array.from({ length: 6 }, (_, slot) => (slot * duration) / 6);

describe("tilePlan", () => {
  it("decodes a clip whose keyframes are unknown in one pass from its start, a tile at each sixth", () => {
    expect(tilePlan(0, 12, [], 6)).toEqual([{ from: undefined, times: [0, 2, 4, 6, 8, 10] }]);
  });

  it("takes a sixth's keyframe alone, and decodes the others from the keyframe before them", () => {
    // 1080p 10 s at 30 fps from x264's defaults: keyframes at 0 and 8.333333 s (250 frames).
    const [zero, ...rest] = tilePlan(0, 10, [0, 8.333333], 6);
    expect(zero).toEqual({ from: 0, times: sixths(10).slice(0, 5) });
    expect(rest).toEqual([{ from: 8.333333, times: [8.333333] }]);
  });

  it("shows only keyframes of a clip with one in every sixth, from one pass that decodes keyframes only", () => {
    expect(tilePlan(0, 12, [0, 2, 4, 6, 8, 10], 6)).toEqual([
      { from: undefined, times: [0, 2, 4, 6, 8, 10], keyframesOnly: true },
    ]);
    // Keyframes every 1.5 s: the first keyframe of each sixth.
    expect(tilePlan(0, 12, [0, 1.5, 3, 4.5, 6, 7.5, 9, 10.5], 6)).toEqual([
      { from: undefined, times: [0, 3, 4.5, 6, 9, 10.5], keyframesOnly: true },
    ]);
  });

  it("seeks to each keyframe of a clip with more than two a tile (every frame one): nothing between decoded", () => {
    const everyFrame = Array.from({ length: 24 }, (_, frame) => frame / 12);
    expect(tilePlan(0, 2, everyFrame, 6)).toEqual(
      [0, 4, 8, 12, 16, 20].map((frame) => ({ from: frame / 12, times: [frame / 12] })),
    );
  });

  it("decodes a sixth without a keyframe from the one before it, sharing the pass of that keyframe", () => {
    // A keyframe every 2.5 s over 12 s: the sixth from 8 s has none and starts at the keyframe of 7.5 s; the
    // sixths that are keyframes alone share the keyframes-only pass.
    expect(tilePlan(0, 12, [0, 2.5, 5, 7.5, 10], 6)).toEqual([
      { from: 7.5, times: [7.5, 8] },
      { from: undefined, times: [0, 2.5, 5, 10], keyframesOnly: true },
    ]);
  });

  it("counts a keyframe within a millisecond of a sixth's start as in that sixth, not the one before", () => {
    // 8.333333 (ffprobe's six decimals) is below 50/6 = 8.3333333...: still the last sixth's keyframe.
    expect(tilePlan(0, 10, [0, 8.333333], 6).at(-1)).toEqual({ from: 8.333333, times: [8.333333] });
    expect(tilePlan(0, 10, [0, 8.3334], 6).at(-1)).toEqual({ from: 8.3334, times: [8.3334] });
  });

  it("follows a clip that does not start at 0", () => {
    expect(tilePlan(1, 6, [1, 4], 6)).toEqual([
      { from: 1, times: [1, 2, 3] },
      { from: 4, times: [4, 5, 6] },
    ]);
  });
});
