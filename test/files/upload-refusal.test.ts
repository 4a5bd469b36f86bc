/** upload_image refusals name the upload folders configured that do not exist (a typo, or not made yet). */
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startHarness, writeImage, type Harness } from "../helpers/harness.js";
import { makeTempDir } from "./fixtures.js";

let h: Harness | undefined;
let base: string;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ dir: base, cleanup } = await makeTempDir("upload-refusal-"));
});
afterEach(async () => {
  await h?.close();
  h = undefined;
  await cleanup();
});

describe("upload_image with configured folders that do not exist", () => {
  it("names them beside the folders that exist, and says to create or respell them", async () => {
    const photos = path.join(base, "photos");
    const typo = path.join(base, "phtoos");
    await mkdir(photos);
    const elsewhere = await writeImage(base, "cat.png");
    h = await startHarness({ config: { allowedDirs: [photos, typo] } });
    for (const file of [elsewhere, path.join(typo, "cat.png")]) {
      const refused = await h.call("upload_image", { path: file });
      expect(refused.result.isError).toBe(true);
      expect(refused.text).toContain(
        `is outside the allowed folders (${photos}), so it was not read. Configured but not found on this machine: ${JSON.stringify(typo)}.`,
      );
      expect(refused.text).toContain(
        `If the image is in ${JSON.stringify(typo)}, ask the user to create that folder or correct its spelling`,
      );
    }
  });

  it("names them when none of the configured folders exists", async () => {
    const typo = path.join(base, "phtoos");
    h = await startHarness({ config: { allowedDirs: [typo] } });
    const refused = await h.call("upload_image", { path: path.join(typo, "cat.png") });
    expect(refused.result.isError).toBe(true);
    expect(refused.text).toContain(
      `no folder is allowed for uploads (the upload folders configured (${JSON.stringify(typo)}) do not exist, and the client offers no roots)`,
    );
  });
});
