/**
 * get_credits' `models` whatever shape the credits answer takes (its field names are "not shown"): `usable`
 * is read from the answer's paid-access flag where it has one, and never guessed where it has none.
 */
import { afterEach, describe, expect, it } from "vitest";
import { findPaidAccess } from "../../src/api/shapes.js";
import { startHarness, type Harness } from "../helpers/harness.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const usableById = (structured: Record<string, unknown> | undefined) =>
  Object.fromEntries(
    (structured?.["models"] as { id: string; usable: unknown }[]).map(({ id, usable }) => [id, usable]),
  );

describe("get_credits models", () => {
  it("reads paid access from a nested answer", async () => {
    h = await startHarness({ apiKey: "free", sandbox: { shapes: { nesting: "nested" } } });
    const { structured } = await h.call("get_credits");
    expect(structured).toMatchObject({ account: { access: { paid: false } } });
    expect(usableById(structured)).toEqual({
      "vendor-video-1-5-pro": true,
      "vendor-video-2-0": false,
      "vendor-video-2-0-fast": false,
      "image-2": false,
    });
  });

  it("says usable is unknown, with the reason, when the answer does not tell paid access", async () => {
    h = await startHarness();
    h.sandbox.faults.patchNext("credits", {}, { remove: ["paid_access"] });
    const { structured, text } = await h.call("get_credits");
    const listed = structured?.["models"] as Record<string, unknown>[];
    expect(listed.find((model) => model["id"] === "vendor-video-1-5-pro")).toMatchObject({ usable: true });
    for (const model of listed.filter((entry) => entry["needs_paid_access"] === true)) {
      expect(model).toMatchObject({ usable: null, reason: expect.stringMatching(/does not say/) });
    }
    expect(text).toContain(
      "vendor-video-2-0 (video, 7.5 credits/s, 10 at 1080p, paid access: usable: unknown)",
    );
  });

  it("keeps a service field named models under another name", async () => {
    h = await startHarness();
    h.sandbox.faults.patchNext("credits", { models: ["their-model"] });
    const { structured } = await h.call("get_credits");
    expect(structured).toMatchObject({ service_models: ["their-model"], paid_access: true });
    expect(usableById(structured)["vendor-video-2-0"]).toBe(true);
  });

  it("a paid_access_required image refusal names the usable video model", async () => {
    h = await startHarness({ apiKey: "free" });
    const { result, text } = await h.call("generate_image", { prompt: "a red kite" });
    expect(result.isError).toBe(true);
    expect(text).toMatch(/^paid_access_required: /);
    expect(text).toContain("Models this account can use: vendor-video-1-5-pro");
  });
});

describe("findPaidAccess", () => {
  it.each([
    [{ paid_access: true }, true],
    [{ account: { hasPaidAccess: false } }, false],
    [{ access: { paid: true } }, true],
    [{ unpaid: true }, undefined],
    [{ paid_access: "yes" }, undefined],
    // A list of models with their own flags says nothing about the account.
    [{ plans: [{ paid: true }] }, undefined],
    [{ credits: 3 }, undefined],
  ])("%j -> %s", (answer, expected) => {
    expect(findPaidAccess(answer)).toBe(expected);
  });
});
