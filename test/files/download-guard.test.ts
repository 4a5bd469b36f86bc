import type { LookupAddress } from "node:dns";
import { readdir } from "node:fs/promises";
import { createServer } from "node:http";
import type { RequestListener, Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { downloadMedia } from "../../src/files/download.js";
import type { DownloadMediaOptions } from "../../src/files/download.js";
import { NonPublicAddressError, createPublicAgent } from "../../src/files/public-address.js";
import { isoMedia, makeTempDir } from "./fixtures.js";

// The same media server listens on 127.0.0.1 (the allowed host), 127.0.0.2 and ::1 (Linux routes all of
// 127/8 to loopback). Each counts the TCP connections it accepts: a refusal must leave them all at zero.

const MP4_BYTES = Buffer.concat([isoMedia("isom"), Buffer.alloc(500, 7)]);

interface CountingServer {
  server: Server;
  port: number;
  connections: number;
}

let main: CountingServer;
let second: CountingServer | undefined;
let v6: CountingServer | undefined;

const handler: RequestListener = (request, response) => {
  const redirects: Record<string, string | undefined> = {
    "/to-second": second && `http://127.0.0.2:${second.port}/video`,
    "/to-localhost": `http://localhost:${main.port}/video`,
    "/to-mapped": `http://[::ffff:127.0.0.1]:${main.port}/video`,
    "/to-metadata": "http://169.254.169.254/latest/meta-data/",
  };
  const location = redirects[request.url ?? ""];
  if (location !== undefined) {
    response.writeHead(302, { location }).end();
    return;
  }
  if (request.url === "/video") {
    response.writeHead(200, { "content-type": "video/mp4", "content-length": String(MP4_BYTES.length) });
    response.end(MP4_BYTES);
    return;
  }
  response.writeHead(404).end();
};

async function listen(host: string): Promise<CountingServer | undefined> {
  const server = createServer(handler);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, host, resolve);
    });
  } catch {
    return undefined; // No such loopback address on this machine: the tests needing it skip.
  }
  const counting = { server, port: (server.address() as AddressInfo).port, connections: 0 };
  server.on("connection", () => counting.connections++);
  return counting;
}

async function close(counting: CountingServer | undefined): Promise<void> {
  if (counting === undefined) return;
  counting.server.closeAllConnections();
  await new Promise((resolve) => counting.server.close(resolve));
}

beforeAll(async () => {
  const listening = await listen("127.0.0.1");
  if (listening === undefined) throw new Error("cannot listen on 127.0.0.1");
  main = listening;
  second = await listen("127.0.0.2");
  v6 = await listen("::1");
});

afterAll(async () => {
  await Promise.all([close(main), close(second), close(v6)]);
});

let dir: string;
let cleanup: () => Promise<void>;

beforeEach(async () => {
  ({ dir, cleanup } = await makeTempDir("download-guard-"));
  dir = path.join(dir, "out");
  for (const counting of [main, second, v6]) if (counting) counting.connections = 0;
});
afterEach(() => cleanup());

const download = (overrides: Partial<DownloadMediaOptions> & { url: string }) =>
  downloadMedia({ dir, baseName: "vid", maxBytes: 1_000_000, allowHosts: ["127.0.0.1"], ...overrides });

async function refusal(promise: Promise<unknown>): Promise<NonPublicAddressError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(NonPublicAddressError);
  const refused = error as NonPublicAddressError;
  expect(refused.code).toBe("internal_error");
  expect(refused.nextStep).toMatch(/not fetched.*open it themselves/);
  return refused;
}

async function nothingSaved(): Promise<void> {
  expect(await readdir(dir).catch(() => [])).toEqual([]);
}

describe("downloadMedia keeps to public addresses", () => {
  it("downloads from the allowed host", async () => {
    const result = await download({ url: `http://127.0.0.1:${main.port}/video` });
    expect(result.bytes).toBe(MP4_BYTES.length);
    expect(main.connections).toBe(1);
  });

  it("allows no private host when allowHosts is absent", async () => {
    const error = await refusal(
      downloadMedia({ url: `http://127.0.0.1:${main.port}/video`, dir, baseName: "vid", maxBytes: 1000 }),
    );
    expect(error.message).toMatch(/127\.0\.0\.1 is a loopback address/);
    expect(main.connections).toBe(0);
    await nothingSaved();
  });

  it("refuses another loopback address than the allowed one, without connecting", async (context) => {
    if (second === undefined) return context.skip("127.0.0.2 is not available");
    const error = await refusal(download({ url: `http://127.0.0.2:${second.port}/video?sig=SECRET` }));
    expect(error.message).toBe(
      `Refused to fetch http://127.0.0.2:${second.port}/video: 127.0.0.2 is a loopback address (127.0.0.0/8), ` +
        "not a public address; nothing was fetched.",
    );
    expect(second.connections).toBe(0);
    await nothingSaved();
    // The same server is reachable: it was the guard that refused, not the network.
    await download({ url: `http://127.0.0.2:${second.port}/video`, allowHosts: ["127.0.0.2"] });
    expect(second.connections).toBe(1);
  });

  it("refuses a name that resolves to loopback, at connect time", async () => {
    const error = await refusal(download({ url: `http://localhost:${main.port}/video` }));
    expect(error.message).toMatch(
      new RegExp(
        `^Refused to fetch http://localhost:${main.port}/video: localhost resolves to (127\\.0\\.0\\.1|::1)`,
      ),
    );
    expect(main.connections).toBe(0);
    await nothingSaved();
  });

  it("refuses a name over https the same way, before any TLS", async () => {
    await refusal(download({ url: `https://localhost:${main.port}/video` }));
    expect(main.connections).toBe(0);
  });

  it("refuses a redirect from the allowed host to a private one and saves nothing", async (context) => {
    if (second === undefined) return context.skip("127.0.0.2 is not available");
    const error = await refusal(download({ url: `http://127.0.0.1:${main.port}/to-second` }));
    expect(error.message).toContain(`(redirected from http://127.0.0.1:${main.port}/to-second)`);
    expect(main.connections).toBe(1);
    expect(second.connections).toBe(0);
    await nothingSaved();
  });

  it("refuses redirects to a loopback name, a mapped literal and the metadata address", async () => {
    const toLocalhost = await refusal(download({ url: `http://127.0.0.1:${main.port}/to-localhost` }));
    expect(toLocalhost.message).toMatch(/redirected from .*\/to-localhost\): localhost resolves to/);
    await refusal(download({ url: `http://127.0.0.1:${main.port}/to-mapped` }));
    await refusal(download({ url: `http://127.0.0.1:${main.port}/to-metadata` }));
    // One connection per first request (keep-alive may reuse it); none for the refused hops.
    expect(main.connections).toBeLessThanOrEqual(3);
    await nothingSaved();
  });

  it("refuses IP literals before connecting", async (context) => {
    // 169.254.169.254 is unroutable here: an attempt would end as a timeout or a network error, not this.
    const metadata = await refusal(download({ url: "http://169.254.169.254/latest/meta-data/" }));
    expect(metadata.message).toMatch(/169\.254\.169\.254 is a link-local address/);
    await refusal(download({ url: "http://[::ffff:7f00:1]/video" }));
    await refusal(download({ url: `http://[::ffff:127.0.0.1]:${main.port}/video` }));
    expect(main.connections).toBe(0);
    await nothingSaved();
    if (v6 === undefined) return context.skip("::1 is not available");
    const loopback6 = await refusal(download({ url: `http://[::1]:${v6.port}/video` }));
    expect(loopback6.message).toMatch(/\[::1\] is the loopback address \(::1\)/);
    expect(v6.connections).toBe(0);
    await download({ url: `http://[::1]:${v6.port}/video`, allowHosts: ["::1"] });
    expect(v6.connections).toBe(1);
  });
});

describe("createPublicAgent", () => {
  const fakeDns = (address: string) => async (): Promise<LookupAddress[]> => [{ address, family: 4 }];

  async function get(agent: Awaited<ReturnType<typeof createPublicAgent>>, origin: string) {
    try {
      const response = await agent.request({ origin, path: "/video", method: "GET" });
      return { status: response.statusCode, body: Buffer.from(await response.body.arrayBuffer()) };
    } finally {
      await agent.destroy();
    }
  }

  it("connects to the address its resolver gave for an allowed name", async () => {
    const agent = await createPublicAgent({ allowHosts: ["Media.Test"], resolveHost: fakeDns("127.0.0.1") });
    const { status, body } = await get(agent, `http://media.test:${main.port}`);
    expect(status).toBe(200);
    expect(body.equals(MP4_BYTES)).toBe(true);
    expect(main.connections).toBe(1);
  });

  it("refuses a name whose resolver answers privately, without connecting", async () => {
    const agent = await createPublicAgent({ allowHosts: ["127.0.0.1"], resolveHost: fakeDns("127.0.0.1") });
    const error = await get(agent, `http://media.test:${main.port}`).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(NonPublicAddressError);
    expect((error as Error).message).toMatch(/media\.test resolves to 127\.0\.0\.1, a loopback address/);
    expect(main.connections).toBe(0);
  });

  it("refuses a private IP literal by itself, without a prior checkPublicUrl", async () => {
    const agent = await createPublicAgent({ allowHosts: [] });
    const error = await get(agent, `http://127.0.0.1:${main.port}`).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(NonPublicAddressError);
    expect((error as Error).message).toMatch(/^Refused to fetch 127\.0\.0\.1: 127\.0\.0\.1 is a loopback/);
    expect(main.connections).toBe(0);
  });
});
