/** Where this machine keeps the server's state (journal, task records, the day's spend) unless told. */
import { join } from "node:path";

/**
 * The platform's per-user state folder for the journal: `$XDG_STATE_HOME/generation-mcp` or
 * `~/.local/state/generation-mcp` on Linux and other Unixes, `~/Library/Application Support/generation-mcp`
 * on macOS, `%LOCALAPPDATA%\generation-mcp` on Windows.
 */
export function defaultStateDir(env: NodeJS.ProcessEnv, platform: NodeJS.Platform, home: string): string {
  const name = "generation-mcp";
  if (platform === "win32") {
    const base = env["LOCALAPPDATA"] || `${home}\\AppData\\Local`;
    return `${base.replace(/[\\/]+$/, "")}\\${name}`;
  }
  if (platform === "darwin") return join(home, "Library", "Application Support", name);
  const xdg = env["XDG_STATE_HOME"];
  // The XDG spec says relative values are invalid and must be ignored.
  if (xdg && xdg.startsWith("/")) return join(xdg, name);
  return join(home, ".local", "state", name);
}
