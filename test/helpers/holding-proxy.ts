/** Starts holding-proxy.mjs (a proxy process that holds starts, then forwards them) in front of a service. */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

export interface HoldingProxy {
  /** The proxy's base URL, with the target's path (e.g. `http://127.0.0.1:<port>/api/v1`). */
  baseUrl: string;
  /** Held requests that have been forwarded to the target so far. */
  forwarded(): number;
  stop(): Promise<void>;
}

/** Holds every start for `holdMs`, or only the first `holds` of them (the later ones pass at once). */
export async function startHoldingProxy(
  targetBaseUrl: string,
  holdMs: number,
  holds = Number.POSITIVE_INFINITY,
): Promise<HoldingProxy> {
  const script = fileURLToPath(new URL("./holding-proxy.mjs", import.meta.url));
  const target = new URL(targetBaseUrl);
  const child = spawn(process.execPath, [script, target.origin, String(holdMs), "/generate", String(holds)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let forwarded = 0;
  let output = "";
  const port = await new Promise<number>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`holding proxy exited (${String(code)})`)));
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8");
      forwarded = output.match(/^forwarded /gm)?.length ?? 0;
      const port = /^port (\d+)$/m.exec(output)?.[1];
      if (port !== undefined) resolve(Number(port));
    });
  });
  return {
    baseUrl: `http://127.0.0.1:${port}${target.pathname}`,
    forwarded: () => forwarded,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGKILL");
      await exited;
    },
  };
}
