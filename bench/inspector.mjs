/**
 * A minimal Chrome DevTools Protocol client for a server started with --inspect=127.0.0.1:0: forces a full
 * garbage collection and reads the JS heap in use, so retained memory can be told from heap V8 has not
 * collected yet.
 */
import { setTimeout } from "node:timers";
import { WebSocket } from "undici";

/** Waits for "Debugger listening on ws://..." on the server's stderr. */
export async function inspectorUrl(stderr, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const m = /Debugger listening on (ws:\/\/\S+)/.exec(stderr());
    if (m) return m[1];
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error("the server printed no inspector URL");
}

export async function connectInspector(url) {
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => {
    ws.addEventListener("open", resolve, { once: true });
    ws.addEventListener("error", reject, { once: true });
  });
  let nextId = 1;
  const pending = new Map();
  ws.addEventListener("message", (event) => {
    const msg = JSON.parse(typeof event.data === "string" ? event.data : Buffer.from(event.data).toString());
    const p = pending.get(msg.id);
    if (!p) return;
    pending.delete(msg.id);
    if (msg.error) p.reject(new Error(msg.error.message));
    else p.resolve(msg.result);
  });
  const send = (method, params = {}) =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      ws.send(JSON.stringify({ id, method, params }));
    });
  return {
    /** JS heap in use (bytes) after a full collection. */
    async heapAfterGc() {
      await send("HeapProfiler.collectGarbage");
      await send("HeapProfiler.collectGarbage");
      const { usedSize } = await send("Runtime.getHeapUsage");
      return usedSize;
    },
    close: () => ws.close(),
  };
}
