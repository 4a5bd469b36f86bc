/**
 * Published MCP servers to compare cold start with, installed once from the npm registry into a cache
 * folder (bench/.peers, git-ignored) and spawned with node on their bin file directly (npx would add its
 * own start-up). Versions are pinned so figures stay comparable between runs.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";

export const PEERS = [
  {
    name: "@modelcontextprotocol/server-filesystem",
    version: "2026.8.31",
    bin: "dist/index.js",
    /** It needs one allowed directory. */
    args: (tmp) => [tmp],
  },
  {
    name: "@modelcontextprotocol/server-everything",
    version: "2026.8.31",
    bin: "dist/index.js",
    args: () => ["stdio"],
  },
];

/** Installs missing peers; returns [{ name, version, entry, args }] for the ones available. */
export function ensurePeers(dir, log) {
  mkdirSync(dir, { recursive: true });
  const installed = (p) => {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, "node_modules", p.name, "package.json"), "utf8"));
      return pkg.version === p.version && existsSync(path.join(dir, "node_modules", p.name, p.bin));
    } catch {
      return false;
    }
  };
  const missing = PEERS.filter((p) => !installed(p));
  if (missing.length > 0) {
    log(`installing peers into ${dir}: ${missing.map((p) => `${p.name}@${p.version}`).join(", ")}`);
    try {
      execFileSync(
        "npm",
        [
          "install",
          "--prefix",
          dir,
          "--no-audit",
          "--no-fund",
          "--no-save",
          "--omit=dev",
          "--loglevel=error",
          ...PEERS.map((p) => `${p.name}@${p.version}`),
        ],
        { stdio: ["ignore", "ignore", "pipe"], timeout: 180_000 },
      );
    } catch (error) {
      log(
        `peer install failed (offline?): ${
          String(error.stderr ?? error.message)
            .trim()
            .split("\n")[0]
        }`,
      );
    }
  }
  return PEERS.filter(installed).map((p) => ({
    ...p,
    entry: path.join(dir, "node_modules", p.name, p.bin),
  }));
}
