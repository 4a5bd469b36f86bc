/**
 * Upload links of a stdio server: a listener on 127.0.0.1 (a free port) that starts with the first link and
 * closes once no link is open (each used or expired). It serves `/upload/<token>` only. Light at import (the
 * stdio start-up path): the HTTP server and the page load with the first link.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "../logger.js";
import type { LinkServing, UploadDesk } from "./desk.js";

/** An upload link's path, under any prefix a proxy passes on: the token is 256 random bits, base64url. */
export const UPLOAD_PATH = /\/upload\/([A-Za-z0-9_-]{43})$/;

export function loopbackLinks(desk: UploadDesk, logger: Logger): LinkServing {
  let listening: Promise<{ server: Server; base: string }> | undefined;
  const open = new Map<string, NodeJS.Timeout>();
  const start = async () => {
    const [{ createServer }, { answerUpload }] = await Promise.all([
      import("node:http"),
      import("./receive.js"),
    ]);
    const server = createServer({ headersTimeout: 10_000, requestTimeout: 120_000 }, (req, res) => {
      const token = UPLOAD_PATH.exec((req.url ?? "").split("?")[0] ?? "")?.[1];
      if (token === undefined) return void res.writeHead(404).end();
      answerUpload(req, res, token, desk, logger).catch(() => res.destroy());
    });
    await new Promise<void>((resolve, reject) =>
      server.once("error", reject).listen(0, "127.0.0.1", resolve),
    );
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    logger.info(`upload links served at ${base}/upload/ while one is open`);
    return { server, base };
  };
  const release = (id: string) => {
    clearTimeout(open.get(id));
    open.delete(id);
    if (open.size > 0 || listening === undefined) return;
    const closing = listening;
    listening = undefined;
    void closing.then(
      ({ server }) => server.close(),
      () => undefined,
    );
  };
  return {
    async base() {
      const starting = (listening ??= start());
      starting.catch(() => listening === starting && (listening = undefined));
      return (await starting).base;
    },
    hold(id, expiresAt) {
      clearTimeout(open.get(id));
      open.set(id, setTimeout(() => release(id), expiresAt - Date.now() + 1000).unref());
    },
    release,
  };
}
