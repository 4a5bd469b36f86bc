/**
 * Upload links of a stdio server: a listener on 127.0.0.1 (a free port) that starts with the first link and
 * closes once no link it holds is open (each used or expired). It serves `/upload/<token>` only.
 */
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "../logger.js";
import type { LinkServing, UploadDesk } from "./desk.js";
import { UPLOAD_PATH, answerUpload } from "./receive.js";

export function loopbackLinks(desk: UploadDesk, logger: Logger): LinkServing {
  let listening: Promise<{ server: Server; base: string }> | undefined;
  const open = new Map<string, NodeJS.Timeout>();
  const start = async () => {
    const server = createServer({ headersTimeout: 10_000, requestTimeout: 120_000 }, (req, res) => {
      const token = UPLOAD_PATH.exec((req.url ?? "").split("?")[0] ?? "")?.[1];
      if (token === undefined) return void res.writeHead(404).end();
      answerUpload(req, res, token, desk, logger).catch(() => res.destroy());
    });
    await once(server.listen(0, "127.0.0.1"), "listening");
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    logger.info(`upload links served at ${base}/upload/ while one is open`);
    return { server, base };
  };
  const release = (id: string) => {
    clearTimeout(open.get(id));
    open.delete(id);
    if (open.size > 0) return;
    void listening?.then(({ server }) => server.close()).catch(() => undefined);
    listening = undefined;
  };
  return {
    base: async () => (await (listening ??= start())).base,
    hold(id, expiresAt) {
      clearTimeout(open.get(id));
      open.set(id, setTimeout(() => release(id), expiresAt - Date.now() + 1000).unref());
    },
    release,
  };
}
