/**
 * What this account may use, at what price: get_credits' `models` and the paid_access_required next step,
 * through the SDK's Client against the built bin, over stdio and over HTTP, against a sandbox on 127.0.0.1:0
 * with its free and paid keys. Needs `npm run build`.
 */
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  IMAGE_CREDITS_PER_IMAGE,
  IMAGE_MODELS,
  SUBSCRIPTION_MODELS,
  VIDEO_1080P_CREDITS_PER_SECOND,
  VIDEO_CREDITS_PER_SECOND,
  VIDEO_MODELS,
} from "../../src/models.js";
import { startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle } from "../../src/sandbox/types.js";
import { callTool, tempRoot } from "../helpers/http-calls.js";
import { connectHttp, startHttpAgainst, type HttpServerProcess } from "../helpers/http.js";
import { connectStdio, type StdioSession } from "../helpers/stdio.js";

const LITE = "vendor-video-1-5-pro";

/** The price list as src/models.ts states it, written out here so a drift in get_credits shows. */
const PRICES = [
  ...VIDEO_MODELS.map((id) => ({
    id,
    kind: "video",
    credits_per_second: VIDEO_CREDITS_PER_SECOND[id],
    ...(id === "vendor-video-2-0" && { credits_per_second_1080p: VIDEO_1080P_CREDITS_PER_SECOND }),
    needs_paid_access: SUBSCRIPTION_MODELS.includes(id),
  })),
  ...IMAGE_MODELS.map((id) => ({
    id,
    kind: "image",
    credits_per_image: IMAGE_CREDITS_PER_IMAGE,
    needs_paid_access: true,
  })),
];

async function models(client: Client) {
  const { result, text, structured } = await callTool(client, "get_credits");
  expect(result.isError, text).toBeFalsy();
  return { text, models: structured["models"] as Record<string, unknown>[] };
}

let sandbox: SandboxHandle;
let root: { dir: string; remove: () => Promise<void> };

beforeAll(async () => {
  sandbox = await startSandbox({ timings: { queuedMs: 50, processingMs: 250 } });
  root = await tempRoot("generation-mcp-models-");
});

afterAll(async () => {
  await sandbox?.close();
  await root?.remove();
});

describe("over stdio, with the free key", () => {
  let session: StdioSession;
  beforeAll(async () => {
    session = await connectStdio([], {
      HOME: root.dir,
      GENERATION_API_KEY: sandbox.keys.free,
      GENERATION_BASE_URL: sandbox.baseUrl,
      GENERATION_STATE_DIR: path.join(root.dir, "state-stdio"),
    });
  });
  afterAll(async () => session?.close());

  it("get_credits lists every model at its price, usable only for the lite model", async () => {
    const { text, models: listed } = await models(session.client);
    expect(listed).toEqual(PRICES.map((price) => ({ ...price, usable: price.id === LITE })));
    expect(text).toContain(`${LITE} (video, 5 credits/s, no paid access needed: usable)`);
    expect(text).toContain("vendor-video-2-0 (video, 7.5 credits/s, 10 at 1080p, paid access: not usable)");
  });

  it("a paid_access_required answer names the models this account can use", async () => {
    const mark = sandbox.requests.length;
    const { result, text } = await callTool(session.client, "generate_video", {
      prompt: "a lighthouse at dusk",
      model: "vendor-video-2-0",
      wait: false,
    });
    expect(result.isError).toBe(true);
    // The refusal came from the service itself, not from a guess of this server's.
    expect(sandbox.requests.slice(mark).some((request) => request.path.endsWith("/generate"))).toBe(true);
    expect(text).toMatch(/^paid_access_required: /);
    expect(text).toContain(`Models this account can use: ${LITE} (get_credits lists them`);
  });
});

describe("over HTTP, each caller with its own key", () => {
  let server: HttpServerProcess;
  const clients: Client[] = [];
  beforeAll(async () => {
    server = await startHttpAgainst(sandbox, root.dir, 100, {
      GENERATION_STATE_DIR: path.join(root.dir, "state-http"),
    });
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await server?.stop();
  });

  it.each([
    ["free", (id: string) => id === LITE],
    ["paid", () => true],
  ] as const)("the %s key sees usable matching its paid access", async (name, usable) => {
    const client = await connectHttp(server.url, sandbox.keys[name]);
    clients.push(client);
    const { models: listed } = await models(client);
    expect(listed).toEqual(PRICES.map((price) => ({ ...price, usable: usable(price.id) })));
  });
});
