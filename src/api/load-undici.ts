/**
 * undici is loaded on first use: most of a session's start-up never needs it, and it is a large module.
 * It is CommonJS, so its names sit on the module namespace under Node, but only on `default` once bundled.
 */
import type * as UndiciModule from "undici";

type Undici = typeof UndiciModule;

let loading: Promise<Undici> | undefined;

export function loadUndici(): Promise<Undici> {
  loading ??= import("undici").then((module) =>
    "Agent" in module ? module : (module as unknown as { default: Undici }).default,
  );
  return loading;
}
