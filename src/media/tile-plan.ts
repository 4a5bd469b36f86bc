/**
 * Which frame each tile of a sheet shows, and what is decoded for it. The clip is cut into equal slots, one
 * per tile. A slot holding a keyframe shows that keyframe, decoded alone after a seek; any other slot shows
 * its first frame, decoded from the keyframe before it. That is the cheapest frame of each slot: a keyframe
 * costs one picture, a frame after it every frame in between (each P-frame needs the one before). Tiles
 * decoded from the same keyframe share one pass.
 */

/**
 * One run of the decoder: from the keyframe at `from` (the clip's start when undefined), to its last tile;
 * `keyframesOnly`: from the start, decoding nothing but keyframes.
 */
export interface Pass {
  from: number | undefined;
  times: number[];
  keyframesOnly?: true;
}

/** `keyframes` ascending, in the clip's time (as `start`); empty when unknown: one pass from the start. */
export function tilePlan(
  start: number,
  duration: number,
  keyframes: readonly number[],
  tiles: number,
): Pass[] {
  const passes: Pass[] = [];
  for (let slot = 0; slot < tiles; slot++) {
    const begin = start + (slot * duration) / tiles;
    const end = start + ((slot + 1) * duration) / tiles;
    // Within a millisecond of a boundary counts as at it: probed times are rounded to microseconds.
    const inside = keyframes.find((time) => time > begin - 0.001 && time < end - 0.001);
    const from = inside ?? keyframes.findLast((time) => time < begin + 0.001);
    const time = inside ?? begin;
    const last = passes.at(-1);
    if (last !== undefined && last.from === from) last.times.push(time);
    else passes.push({ from, times: [time] });
  }
  // A pass costs about what a keyframe does (a decoder and its first picture): while the clip has at most
  // two keyframes a tile, the tiles that are keyframes come from one pass that decodes its keyframes only.
  const alone = passes.filter(({ from, times }) => times.length === 1 && times[0] === from);
  if (alone.length < 2 || keyframes.length > 2 * tiles) return passes;
  const times = alone.flatMap((pass) => pass.times);
  return [...passes.filter((pass) => !alone.includes(pass)), { from: undefined, times, keyframesOnly: true }];
}
