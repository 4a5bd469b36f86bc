/**
 * A real `redis-server` for the shared-state tests, on a free loopback port, with nothing persisted. It can be
 * stopped and started again on the same port (the Redis outage tests).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";

export interface RedisProcess {
  port: number;
  /** `redis://127.0.0.1:<port>` */
  url: string;
  /** Stops the server (SIGTERM; SIGKILL after a while); resolves once it is gone. */
  stop(): Promise<void>;
  /** Starts it again on the same port, empty. */
  restart(): Promise<void>;
  /** Kills it with SIGKILL (no chance to save anything) and starts it again on the same port, empty. */
  crash(): Promise<void>;
}

const START_LIMIT_MS = 10_000;

/** A port nothing listens on right now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

/** Starts redis-server on `port` (a free one by default). */
export async function startRedis(port?: number): Promise<RedisProcess> {
  port ??= await freePort();
  let child = await spawnRedis(port);
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    stop: async () => stopChild(child),
    restart: async () => {
      await stopChild(child);
      child = await spawnRedis(port);
    },
    crash: async () => {
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      child.kill("SIGKILL");
      await exited;
      child = await spawnRedis(port);
    },
  };
}

function spawnRedis(port: number): Promise<ChildProcess> {
  const child = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  return new Promise<ChildProcess>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`redis-server did not start:\n${output}`));
    }, START_LIMIT_MS);
    const onData = (chunk: Buffer) => {
      output += chunk.toString("utf8");
      if (/ready to accept connections/i.test(output)) {
        clearTimeout(timer);
        resolve(child);
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("error", (error) => {
      clearTimeout(timer);
      reject(new Error(`cannot run redis-server (is it installed?): ${error.message}`));
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited (${String(code)}):\n${output}`));
    });
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
  await exited;
  clearTimeout(timer);
}
