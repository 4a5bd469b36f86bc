/**
 * Who is asking: made once at the edge (a stdio user, an HTTP bearer that is a service key, a gateway token,
 * an OAuth subject) and carried everywhere that scopes something: the runtime (by service key), the
 * concurrency cap, MCP task records, the duplicate guard, settlement, ownership of tasks and spend. No place
 * derives "who" on its own.
 */
import { createHash } from "node:crypto";

export interface Caller {
  /**
   * Stable and opaque: a hex SHA-256 of what identifies the caller (its bearer, its token, `iss` + `sub`).
   * Caps, cancellations and spend are counted per id. Never the credential itself.
   */
  id: string;
  kind: "local" | "key" | "gateway" | "oauth";
  /** The service key this caller's calls use: its own (stdio, passthrough) or the one the server holds. */
  serviceKey: string;
  /**
   * Set when one service key serves several callers (gateway tokens, OAuth subjects): tasks, reuse and the
   * history a caller sees are its own, never another's. Undefined when the caller owns the key's whole
   * account (stdio, passthrough).
   */
  scope: string | undefined;
  /** For OAuth: the scopes the token grants (`generation:read`, `generation:create`). */
  grants?: ReadonlySet<string> | undefined;
}

/** Hex SHA-256 of a credential: how callers and runtimes are named anywhere (never by the secret). */
export function digestOf(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

/** The one user of a stdio server: owns the account of the configured key. */
export function localCaller(serviceKey: string): Caller {
  return { id: digestOf(serviceKey), kind: "local", serviceKey, scope: undefined };
}
