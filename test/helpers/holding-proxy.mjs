/**
 * A reverse proxy in a process of its own, in front of a service on loopback: it forwards every request as
 * it came, except the starts it is told to hold (`POST …/generate` by default), which it holds for a while
 * and then forwards even though the client has given up meanwhile, as a congested gateway or a queue does.
 * Usage: node holding-proxy.mjs <target origin> <hold ms> [path suffix] [how many to hold]. Prints
 * "port <n>" once listening, and "forwarded <path>" after each held request reached the target.
 */
import { request as httpRequest, createServer } from "node:http";
import { setTimeout } from "node:timers";
import { URL } from "node:url";

const [target, holdText, suffix = "/generate", holdsText = "Infinity"] = process.argv.slice(2);
const holdMs = Number(holdText);
let holds = Number(holdsText);
const origin = new URL(target);

const server = createServer((req, res) => {
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    const held = holds > 0 && req.method === "POST" && (req.url ?? "").split("?")[0].endsWith(suffix);
    if (held) holds -= 1;
    setTimeout(() => forward(req, res, body, held), held ? holdMs : 0);
  });
});

function forward(req, res, body, held) {
  const upstream = httpRequest(
    {
      host: origin.hostname,
      port: origin.port,
      method: req.method,
      path: req.url,
      headers: { ...req.headers, host: origin.host, "content-length": body.length },
    },
    (answer) => {
      if (held) process.stdout.write(`forwarded ${req.url}\n`);
      if (res.destroyed) return answer.resume();
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on("error", () => {
    if (!res.destroyed && !res.headersSent) res.writeHead(502).end();
  });
  upstream.end(body);
}

server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`port ${server.address().port}\n`);
});
