/**
 * Spend settings that make no sense are refused at start, naming the variable: in the configuration loader,
 * and through the built bin (which exits with the message instead of serving).
 */
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/index.js";
import { CLI } from "../helpers/stdio.js";

const BASE = { GENERATION_SANDBOX: "1" };

function refusal(env: Record<string, string>): string {
  try {
    loadConfig({ env: { ...BASE, ...env }, home: "/home/someone", platform: "linux" });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error("the configuration was accepted");
}

describe("spend settings", () => {
  for (const variable of [
    "GENERATION_MAX_CREDITS_PER_CALL",
    "GENERATION_DAILY_CREDITS",
    "GENERATION_CONFIRM_ABOVE_CREDITS",
  ]) {
    it(`refuses a negative or non-numeric ${variable}, naming it`, () => {
      for (const value of ["-5", "ten", "1e3", "12 credits"]) {
        const message = refusal({ [variable]: value });
        expect(message).toMatch(new RegExp(`^${variable} \\(or --[a-z-]+\\): must be a non-negative number`));
      }
    });
  }

  it("refuses a confirm threshold above the per-call cap, naming both", () => {
    const message = refusal({
      GENERATION_MAX_CREDITS_PER_CALL: "50",
      GENERATION_CONFIRM_ABOVE_CREDITS: "80",
    });
    expect(message).toMatch(/^GENERATION_CONFIRM_ABOVE_CREDITS \(or --confirm-above-credits\): 80 is above/);
    expect(message).toContain("GENERATION_MAX_CREDITS_PER_CALL (50)");
  });

  it("reads good values, flags included, and leaves unset ones undefined", () => {
    const config = loadConfig({
      env: { ...BASE, GENERATION_DAILY_CREDITS: "200", GENERATION_CONFIRM_ABOVE_CREDITS: "" },
      flags: { "--max-credits-per-call": "75.5" },
      home: "/home/someone",
      platform: "linux",
    });
    expect(config.spend).toEqual({
      maxCreditsPerCall: 75.5,
      dailyCredits: 200,
      confirmAboveCredits: undefined,
    });
  });

  it("makes the built bin exit at start with the variable's name", async () => {
    const child = spawn(process.execPath, [CLI, "--sandbox"], {
      env: { PATH: process.env["PATH"] ?? "", HOME: "/tmp", GENERATION_DAILY_CREDITS: "-1" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve) => child.once("exit", (exit) => resolve(exit)));
    expect(code).not.toBe(0);
    expect(stderr).toContain("GENERATION_DAILY_CREDITS");
    expect(stderr).toContain("must be a non-negative number");
  });
});
