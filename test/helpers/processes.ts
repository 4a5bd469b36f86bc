/**
 * What the tests of a command line need: a port some other server holds, a stderr that keeps what is written
 * to it (a command run in-process), and everything a child process wrote by the time it closed.
 */
import type { ChildProcess } from "node:child_process";
import { createServer, type Server } from "node:net";

/** A loopback port held by a server of its own, added to `holders`: whoever passes them closes them. */
export async function busyPort(holders: Server[]): Promise<number> {
  const server = createServer();
  holders.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as { port: number }).port;
}

/** A stderr to hand a command run in-process, and the text written to it so far. */
export function capture(): { stderr: { write(text: string): boolean }; text(): string } {
  let text = "";
  return {
    stderr: {
      write: (chunk: string) => {
        text += chunk;
        return true;
      },
    },
    text: () => text,
  };
}

/** Waits for `child` to close (call it at once after spawning): its exit code, its stdout and its stderr. */
export async function outputOf(
  child: ChildProcess,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { code, stdout, stderr };
}
