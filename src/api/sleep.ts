import { AbortedError } from "./errors.js";

/**
 * A promise that `start` settles, unless the signal aborts first: then `onAbort` cleans up (a queue entry, a
 * timer) and it rejects with AbortedError. The abort listener goes as soon as it settles either way.
 */
export function abortable<T>(
  signal: AbortSignal | undefined,
  start: (resolve: (value: T) => void, reject: (error: unknown) => void) => void,
  onAbort?: () => void,
): Promise<T> {
  if (signal?.aborted) return Promise.reject(new AbortedError());
  return new Promise<T>((resolve, reject) => {
    const abort = () => {
      reject(new AbortedError());
      onAbort?.();
    };
    const settle =
      <V>(then: (value: V) => void) =>
      (value: V) => {
        signal?.removeEventListener("abort", abort);
        then(value);
      };
    signal?.addEventListener("abort", abort, { once: true });
    start(settle(resolve), settle(reject));
  });
}

/** Waits `ms` on the global timer (so fake timers drive it); rejects with AbortedError when the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return abortable(
    signal,
    (resolve) => (timer = setTimeout(resolve, Math.max(0, ms))),
    () => clearTimeout(timer),
  );
}

export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;
