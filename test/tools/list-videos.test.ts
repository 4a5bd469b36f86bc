/**
 * list_videos answers an empty history with one rule, the service's own (the sandbox: `total_pages: 0`), to a
 * caller that owns the key's account (its own key: the service's history) and to a caller scoped within a
 * shared key (gateway tokens, OAuth subjects: the videos it started here). Real runtime against the sandbox.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Logger } from "../../src/logger.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import type { ToolContext } from "../../src/tools/define-tool.js";
import { generateVideo } from "../../src/tools/generate-video.js";
import { listVideos } from "../../src/tools/list-videos.js";
import { testConfig } from "../helpers/harness.js";

let sandbox: SandboxHandle;
let root: string;
let runtime: Runtime;

beforeAll(async () => {
  sandbox = await startSandbox({ timings: { queuedMs: 60_000, processingMs: 60_000 } });
  root = await mkdtemp(path.join(tmpdir(), "generation-mcp-list-"));
  const config = testConfig(root, { apiKey: sandbox.keys.paid, baseUrl: sandbox.baseUrl, previews: false });
  runtime = await createRuntime(
    config,
    { baseUrl: sandbox.baseUrl, apiKey: sandbox.keys.paid },
    new Logger("error", () => undefined),
    "test",
    { timeoutMs: 2000, maxRetries: 1 },
  );
});
afterAll(async () => {
  await runtime?.close();
  await sandbox?.close();
  await rm(root, { recursive: true, force: true });
});

const context = (): ToolContext => ({
  signal: new AbortController().signal,
  progress: async () => undefined,
  logger: runtime.logger,
  startedAt: Date.now(),
  openLink: async () => "unavailable",
  linkAnswer: undefined,
});
const deps = (scope?: string) => runtime.depsFactory({ clientRoots: async () => [], scope, callerId: scope });
const list = (scope?: string) => listVideos.handler({}, deps(scope), context());

describe("list_videos on an empty history", () => {
  it("answers total_pages 0 to the key's owner, as the service does", async () => {
    expect(await list()).toMatchObject({ items: [], page: 1, total: 0, total_pages: 0 });
  });

  it("answers total_pages 0 to a caller scoped within a shared key, then counts its own videos", async () => {
    expect(await list("alice")).toMatchObject({ items: [], page: 1, total: 0, total_pages: 0 });
    await generateVideo.handler({ prompt: "alice's harbour", wait: false }, deps("alice"), context());
    expect(await list("alice")).toMatchObject({ total: 1, total_pages: 1 });
    expect(await list("bob")).toMatchObject({ items: [], total: 0, total_pages: 0 });
    expect(await list()).toMatchObject({ total: 1, total_pages: 1 });
  });
});
