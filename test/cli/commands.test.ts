/**
 * The command line against a sandbox on 127.0.0.1, through the built bin: each command with and without
 * --json, a video saved with --out, Ctrl-C during a wait and the same command again (one charge), a spend
 * limit that refuses with exit 4 and sends nothing, and the exit codes. The cases run side by side (those
 * that count what reached the service, each on a sandbox of its own). Needs `npm run build`.
 */
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox, type SandboxHandle } from "../../src/sandbox/index.js";
import { PNG_BYTES } from "../files/fixtures.js";
import { outputOf } from "../helpers/processes.js";
import { CLI } from "../helpers/stdio.js";
import { realBinary } from "../helpers/videos.js";

let sandbox: SandboxHandle;
let root: string;

beforeAll(async () => {
  sandbox = await startSandbox({ timings: { queuedMs: 100, processingMs: 400 } });
  root = await mkdtemp(path.join(tmpdir(), "generation-mcp-cli-"));
});
afterAll(async () => {
  await sandbox.close();
  await rm(root, { recursive: true, force: true });
});

/** The bin as a command, in `root`, against the sandbox with the paid key; stdin is not a terminal. */
function start(args: string[], env: Record<string, string> = {}) {
  return spawn(process.execPath, [CLI, ...args], {
    cwd: root,
    env: {
      PATH: process.env["PATH"] ?? "",
      HOME: root,
      GENERATION_STATE_DIR: path.join(root, "state"),
      GENERATION_BASE_URL: sandbox.baseUrl,
      GENERATION_API_KEY: sandbox.keys.paid,
      GENERATION_POLL_INTERVAL_MS: "100",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
}
const run = (args: string[], env: Record<string, string> = {}) => outputOf(start(args, env));
const starts = (on: SandboxHandle) => on.requests.filter((request) => request.route === "generate").length;

/**
 * Runs `use` with a sandbox of its own, for a case that counts what reached the service: the cases run side
 * by side, so the shared sandbox's log has the others' requests too. `env` points the bin at it.
 */
async function withOwnSandbox(use: (own: SandboxHandle, env: Record<string, string>) => Promise<void>) {
  const own = await startSandbox({ timings: { queuedMs: 100, processingMs: 400 } });
  try {
    await use(own, { GENERATION_BASE_URL: own.baseUrl });
  } finally {
    await own.close();
  }
}

describe.concurrent("each command, for a person and with --json", () => {
  it("video waits, saves a real MP4 with --out and its frame sheet beside it; --json is the structuredContent alone", async () => {
    const human = await run(["video", "a paper boat", "--duration", "2", "--out", "boat.mp4"]);
    expect(human.code, human.stderr).toBe(0);
    const file = path.join(root, "boat.mp4");
    expect(human.stdout).toContain("is completed: http://127.0.0.1:");
    expect(human.stdout).toContain(`Saved to ${file}`);
    expect(human.stdout).toContain("Estimated cost 10 credits.");
    expect((await readFile(file)).subarray(4, 8).toString()).toBe("ftyp");
    expect(human.stdout).toContain(`Frame sheet: ${path.join(root, "boat.frames.jpg")}`);
    expect((await readFile(path.join(root, "boat.frames.jpg"))).subarray(0, 2)).toEqual(
      Buffer.from([0xff, 0xd8]),
    );

    const json = await run(["video", "a kite", "--duration", "2", "--json", "--out", "clips/"]);
    expect(json.code, json.stderr).toBe(0);
    const result = JSON.parse(json.stdout) as Record<string, unknown>;
    expect(result).toMatchObject({ status: "completed", estimated_credits: 10 });
    expect(result["local_path"]).toBe(path.join(root, "clips", `${String(result["video_id"])}.mp4`));
    expect(json.stdout.trim().split("\n")).toHaveLength(1);
  }, 60_000);

  it("image, upload, status, list and credits answer with their tool's fields", async () => {
    await writeFile(path.join(root, "cat.png"), PNG_BYTES);
    const image = await run(["image", "a lighthouse", "--format", "webp", "--json"]);
    expect(image.code, image.stderr).toBe(0);
    expect(JSON.parse(image.stdout)).toMatchObject({
      estimated_credits: 5,
      image_urls: [expect.any(String)],
    });

    // A file the person names is read wherever it is: its folder counts as the client's root.
    const upload = await run(["upload", "cat.png"]);
    expect(upload.code, upload.stderr).toBe(0);
    expect(upload.stdout).toMatch(/^Uploaded: http:\/\/127\.0\.0\.1:\d+\//);
    const uploaded = await run(["upload", "cat.png", "--json"]);
    expect(Object.keys(JSON.parse(uploaded.stdout) as object)).toContain("url");

    const started = JSON.parse((await run(["video", "a fox", "--no-wait", "--json"])).stdout) as {
      video_id: string;
    };
    const status = await run(["status", started.video_id, "--wait", "--json"]);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ video_id: started.video_id, status: "completed" });

    const list = await run(["list", "--limit", "2", "--json"]);
    expect(JSON.parse(list.stdout)).toMatchObject({ page: 1, limit: 2, items: expect.any(Array) });
    const credits = await run(["credits"]);
    expect(credits.stdout).toContain(
      "- vendor-video-2-0 (video, 7.5 credits/s, 10 at 1080p, paid access: usable)",
    );
    const creditsJson = JSON.parse((await run(["credits", "--json"])).stdout) as { models: unknown[] };
    expect(creditsJson.models).toHaveLength(4);
  }, 60_000);
});

describe.concurrent("exit codes", () => {
  it("3 when the wait ends first (the id on stdout), then `status --wait` goes on to 0", async () => {
    const waiting = await run(["video", "a slow boat", "--timeout-seconds", "0", "--allow-duplicate"]);
    expect(waiting.code).toBe(3);
    const videoId = /Video (vid_\S+) is/.exec(waiting.stdout)?.[1] ?? "";
    expect(waiting.stderr).toContain(`generation-mcp status ${videoId} --wait`);
    expect((await run(["status", videoId, "--wait"])).code).toBe(0);
  });

  it("2 for usage and for what the tool refuses before sending anything; 1 for a service failure", async () => {
    await withOwnSandbox(async (own, env) => {
      // Without a key: the sandbox's own ("sk-sandbox-paid") would mask "-sandbox" in the answer.
      const typo = await run(["video", "x", "--sandbx"], { ...env, GENERATION_API_KEY: "" });
      expect(typo.code).toBe(2);
      expect(typo.stderr).toContain("unknown flag --sandbx. Did you mean --sandbox?");
      const tooLong = await run(["video", "x", "--duration", "100"], env);
      expect(tooLong.code).toBe(2);
      expect(tooLong.stderr).toMatch(/^validation_error: .*duration: must be at most 20 seconds/);
      expect((await run(["status"], env)).stderr).toContain("status needs <video_id>");
      expect((await run(["list", "--duration", "3"], env)).code).toBe(2);
      expect(own.requests).toEqual([]);
      const refused = await run(["credits"], { ...env, GENERATION_API_KEY: "not-a-key" });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/^unauthorized: /);
    });
  });

  it("4 when a spend limit refuses with no terminal to ask and no --yes: nothing is sent; --yes accepts", async () => {
    await withOwnSandbox(async (own, env) => {
      const refused = await run(["video", "a costly boat", "--max-credits-per-call", "10"], env);
      expect(refused.code).toBe(4);
      expect(refused.stderr).toMatch(/^budget_exceeded: generate_video of a 5 s video .* 25 credits/);
      expect(refused.stderr).toContain("--yes");
      expect(refused.stdout).toBe("");
      expect(starts(own)).toBe(0);
      const accepted = await run(
        ["video", "a costly boat", "--confirm-above-credits", "10", "--yes", "--no-wait"],
        env,
      );
      expect(accepted.code).toBe(3);
      expect(starts(own)).toBe(1);
    });
  });
});

describe.concurrent("Ctrl-C during a wait", () => {
  it("leaves the task running, and the same command again reuses it: one charge", async () => {
    const slow = await startSandbox({ timings: { queuedMs: 100, processingMs: 60_000 } });
    try {
      const env = { GENERATION_BASE_URL: slow.baseUrl, GENERATION_STATE_DIR: path.join(root, "ctrl-c") };
      const args = ["video", "a patient boat", "--json"];
      const child = start(args, env);
      const output = outputOf(child);
      while (!slow.requests.some((request) => request.route === "video-status")) await sleep(50);
      child.kill("SIGINT");
      const interrupted = await output;
      expect(interrupted.code).toBe(130);
      expect(interrupted.stderr).toMatch(/Interrupted\. .*generation-mcp status vid_\S+ --wait/);
      const again = await run([...args, "--no-wait"], env);
      expect(again.code).toBe(3);
      expect(JSON.parse(again.stdout)).toMatchObject({ reused: true });
      expect(starts(slow)).toBe(1);
    } finally {
      await slow.close();
    }
  });
});

describe.concurrent("first mistakes", () => {
  it("an unknown GENERATION_* variable is named with the one meant, and a typed command too", async () => {
    const answer = await run(["credits"], { GENERATION_SANDBX: "1" });
    expect(answer.stderr).toContain(
      "GENERATION_SANDBX is not a setting of generation-mcp, so it is ignored. Did you mean GENERATION_SANDBOX?",
    );
    const typed = await run(["credit"]);
    expect(typed.code).toBe(2);
    expect(typed.stderr).toContain("Did you mean credits?");
  });

  it("--sandbox says what the sandbox's clip is beside a video's summary", async () => {
    const answer = await run(["video", "a boat", "--sandbox", "--duration", "8", "--no-wait"]);
    expect(answer.code, answer.stderr).toBe(3);
    expect(answer.stdout).toContain("Sandbox: every clip is the same 2 s test pattern");
  });
});

describe.concurrent("check", () => {
  const check = (env: Record<string, string>, args: string[] = []) => run(["check", ...args], env);

  it("passes with the sandbox, listing the models the account may use, and never shows the key", async () => {
    const ok = await check({ GENERATION_API_KEY: sandbox.keys.free });
    expect(ok.code, ok.stdout).toBe(0);
    expect(ok.stdout).toContain("GENERATION_API_KEY = (set, not shown)");
    expect(ok.stdout).not.toContain(sandbox.keys.free);
    expect(ok.stdout).toContain("vendor-video-1-5-pro (video, 5 credits/s, no paid access needed: usable)");
    expect(ok.stdout).toContain("image-2 (image, 5 credits/image, paid access: not usable)");
    expect(ok.stdout).toMatch(/^ffmpeg: ffmpeg version/m);
    expect(ok.stdout).toMatch(/^ffprobe: ffprobe version/m);
    expect(ok.stdout).toContain("Ready: a generation call would work.");
    expect((await check({}, ["--sandbox"])).code).toBe(0);
  });

  it("names the fix for a wrong key, a missing base URL and a base URL without /api/v1", async () => {
    const wrongKey = await check({ GENERATION_API_KEY: "sk-wrong" });
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stdout).toMatch(/Fix first: unauthorized: .*\nNext step: .*check GENERATION_API_KEY/);
    const noBase = await check({ GENERATION_BASE_URL: "" });
    expect(noBase.code).toBe(1);
    expect(noBase.stdout).toContain("Fix first: GENERATION_API_KEY is set but GENERATION_BASE_URL is not");
    const origin = sandbox.baseUrl.replace("/api/v1", "");
    const noPath = await check({ GENERATION_BASE_URL: origin });
    expect(noPath.code).toBe(1);
    expect(noPath.stdout).toContain(`does not end in /api/v1`);
    expect(noPath.stdout).toContain(`Did you mean ${sandbox.baseUrl}?`);
  });

  it("names an ffmpeg without its ffprobe beside it, which the frame sheet needs, and still passes", async () => {
    const alone = path.join(root, "ffmpeg-alone");
    await mkdir(alone, { recursive: true });
    await symlink(realBinary("ffmpeg"), path.join(alone, "ffmpeg"));
    const answer = await check({ GENERATION_FFMPEG_PATH: path.join(alone, "ffmpeg") }, ["--sandbox"]);
    expect(answer.code, answer.stdout).toBe(0);
    expect(answer.stdout).toMatch(/^ffmpeg: ffmpeg version/m);
    expect(answer.stdout).toContain(`ffprobe: not found (${path.join(alone, "ffprobe")})`);
    expect(answer.stdout).toMatch(
      /Warning: .*ffprobe was not found, so finished videos come without a sheet/,
    );
  });

  it("lists the upload folders that exist", async () => {
    await mkdir(path.join(root, "Pictures"), { recursive: true });
    const answer = await check({});
    expect(answer.stdout).toContain(`Upload folders that exist: ${path.join(root, "Pictures")}`);
  });
});
