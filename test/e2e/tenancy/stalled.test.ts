/**
 * Red team, connections that stall: against the built `--http` bin, a request whose headers never end is
 * closed after about 10 s and one whose body never ends after about 30 s (README's bounds), before anyone is
 * trusted. A file of its own, so the half minute it waits passes beside bearers.test.ts rather than after it.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox } from "../../../src/sandbox/index.js";
import type { SandboxHandle } from "../../../src/sandbox/types.js";
import { tempRoot } from "../../helpers/http-calls.js";
import { startHttpBin, type HttpServerProcess } from "../../helpers/http.js";
import { rawConnection, report, SCALE } from "../../helpers/red-team.js";

let sandbox: SandboxHandle;
let root: Awaited<ReturnType<typeof tempRoot>>;
let server: HttpServerProcess;

beforeAll(async () => {
  [sandbox, root] = await Promise.all([startSandbox({}), tempRoot("red-team-stalled-")]);
  server = await startHttpBin([], {
    HOME: root.dir,
    GENERATION_BASE_URL: sandbox.baseUrl,
    GENERATION_STATE_DIR: `${root.dir}/state`,
  });
});
afterAll(async () => {
  await server?.stop();
  await sandbox?.close();
  await root?.remove();
});

const madeUp = () => `made-up-${randomBytes(8).toString("hex")}`;

describe("stalled connections are closed before anyone is trusted", () => {
  it("closes stalled headers after about 10 s and a stalled body after about 30 s", async () => {
    // RED_TEAM_SCALE stalled connections of each kind, all at once; each must close in time.
    const [headers, body] = await Promise.all(
      [0, 1].map(() => Promise.all(Array.from({ length: SCALE }, () => rawConnection(server.port)))),
    );
    const start = Date.now();
    for (const connection of headers!) {
      connection.socket.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n`);
    }
    for (const connection of body!) {
      connection.socket.write(
        `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nAuthorization: Bearer ${madeUp()}\r\n` +
          "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{",
      );
    }
    const headersClosed = (await Promise.all(headers!.map((connection) => connection.closed))).map(
      (at) => at - start,
    );
    const bodyClosed = (await Promise.all(body!.map((connection) => connection.closed))).map(
      (at) => at - start,
    );
    report("stalled headers and bodies", {
      connections: 2 * SCALE,
      headersClosedFirstMs: Math.min(...headersClosed),
      headersClosedLastMs: Math.max(...headersClosed),
      bodyClosedFirstMs: Math.min(...bodyClosed),
      bodyClosedLastMs: Math.max(...bodyClosed),
    });
    expect(Math.max(...headersClosed)).toBeLessThan(12_500);
    expect(Math.max(...bodyClosed)).toBeLessThan(32_500);
    expect(Math.min(...bodyClosed)).toBeGreaterThan(25_000);
  }, 45_000);
});
